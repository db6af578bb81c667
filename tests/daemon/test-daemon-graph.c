/* test-daemon-graph.c - unit tests of the placement of CUDA graph work
 * (daemon/graph.c through profile.c's ingest): synthetic GRAPHNODE,
 * NODE, INVOKE and ACTIVITY records in, exact metric values out at exact
 * Merkle context ids (docs/FORMATS.md: GRAPHNODE, copied contexts).
 *
 * The program every test builds: main (app+0x10) calls fwd_a (app+0x20),
 * which captured two kernels (kA, kB), and fwd_b (app+0x30), which
 * captured a memset; replay (app+0x40) launches the instantiated graph,
 * whose nodes are copies of the captured ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon.h"
#include "graph.h"
#include "gpuprof/hash.h"

#define APP "/usr/bin/app"
#define C(n) GPD_CORR(GPD_API_CUDA, n)
enum { L_MAIN = 1, L_FWD_A, L_FWD_B, L_REPLAY }; /* shim node ids */
enum { S_KA = 1, S_KB }; /* kernel name string ids */

/* Validate and ingest one fixed record (rec's h.type set, the rest of
 * the header filled here). */
static void put(gpd_profile_t *p, void *rec, size_t len) {
  _Alignas(64) uint8_t b[GPD_REC_MAX_BYTES];
  gpd_rec_hdr_t *h = rec;
  h->version = GPD_REC_VERSION;
  h->nslots = (uint8_t)gpd_rec_slots_for(len - h->len, h->len);
  memset(b, 0, sizeof b);
  memcpy(b, rec, len);
  size_t nb = (size_t)h->nslots * GPD_SLOT_SIZE;
  assert_int_equal(gpd_rec_validate(b, nb), 0);
  gpd_profile_ingest(p, b, nb);
}

static void text(gpd_profile_t *p, unsigned type, uint32_t id, const char *s) {
  _Alignas(64) uint8_t b[256] = {0};
  size_t n = strlen(s);
  if (type == GPD_REC_MODULE) {
    gpd_rec_module_t *m = (gpd_rec_module_t *)b;
    *m = (gpd_rec_module_t){.h = {.type = GPD_REC_MODULE, .len = (uint32_t)n}, .id = id, .size = 1 << 20};
    memcpy(m->path, s, n);
    put(p, m, sizeof *m + n);
  } else {
    gpd_rec_string_t *r = (gpd_rec_string_t *)b;
    *r = (gpd_rec_string_t){.h = {.type = GPD_REC_STRING, .len = (uint32_t)n}, .id = id, .kind = GPD_STR_KERNEL};
    memcpy(r->text, s, n);
    put(p, r, sizeof *r + n);
  }
}

static void frame(gpd_profile_t *p, uint32_t id, uint32_t parent, uint64_t off) {
  gpd_rec_node_t r = {.h = {.type = GPD_REC_NODE}, .id = id, .parent = parent, .module = 1, .offset = off};
  put(p, &r, sizeof r);
}

static void gnode(gpd_profile_t *p, uint64_t id, uint32_t node, uint64_t orig) {
  gpd_rec_graphnode_t r = {.h = {.type = GPD_REC_GRAPHNODE, .flags = orig ? GPD_GRAPHNODE_F_CLONE : 0},
                           .node = node, .id = id, .orig = orig};
  put(p, &r, sizeof r);
}

static void launch(gpd_profile_t *p, uint64_t corr) {
  gpd_rec_invoke_t r = {.h = {.type = GPD_REC_INVOKE, .flags = GPD_INVOKE_MULTI}, .api = GPD_API_CUDA,
                        .op = GPD_OP_KERNEL, .node = L_REPLAY, .corr = corr, .ts = 1};
  put(p, &r, sizeof r);
}

/* One operation of graph node gid (kernel `name`, or a 4 KiB memset
 * when name is 0) run by launch corr, 100 ns long. */
static void run(gpd_profile_t *p, uint64_t corr, uint64_t gid, uint32_t name) {
  gpd_rec_activity_t a = {.h = {.type = GPD_REC_ACTIVITY}, .api = GPD_API_CUDA,
                          .op = name ? GPD_OP_KERNEL : GPD_OP_MEMSET, .subkind = name ? 0 : GPD_MEM_DEV,
                          .corr = corr, .start = 1000, .end = 1100, .bytes = name ? 0 : 4096, .stream = 1,
                          .name = name, .graph_node = gid};
  put(p, &a, sizeof a);
}

/* Strings, module, and the frames of the program (graph.c's header). */
static void program(gpd_profile_t *p) {
  text(p, GPD_REC_MODULE, 1, APP);
  text(p, GPD_REC_STRING, S_KA, "kA");
  text(p, GPD_REC_STRING, S_KB, "kB");
  frame(p, L_MAIN, 0, 0x10);
  frame(p, L_FWD_A, L_MAIN, 0x20);
  frame(p, L_FWD_B, L_MAIN, 0x30);
  frame(p, L_REPLAY, L_MAIN, 0x40);
}

/* `n` replays of the graph whose nodes are base+1 (kA), base+2 (kB),
 * base+3 (the memset), correlation ids from c0. */
static void replays(gpd_profile_t *p, unsigned n, uint64_t base, uint64_t c0) {
  for (unsigned r = 0; r < n; r++) {
    launch(p, C(c0 + r));
    run(p, C(c0 + r), base + 1, S_KA);
    run(p, C(c0 + r), base + 2, S_KB);
    run(p, C(c0 + r), base + 3, 0);
  }
  gpd_profile_retry(p);
}

static uint64_t syn(uint64_t parent, const char *key) { return gpd_ctx_id(parent, key, strlen(key), 0); }
static uint64_t fr(uint64_t parent, uint64_t off) { return gpd_ctx_id(parent, APP, strlen(APP), off); }
/* A copied context: H(parent, "graph:" + the original's id, 0). */
static uint64_t cp(uint64_t parent, uint64_t orig) {
  uint8_t k[14] = {'g', 'r', 'a', 'p', 'h', ':'};
  for (int i = 0; i < 8; i++)
    k[6 + i] = (uint8_t)(orig >> (8 * i));
  return gpd_ctx_id(parent, k, sizeof k, 0);
}

static uint64_t x_main, x_ph, x_a, x_b, x_ka, x_kb, x_ms;

/* Expected ids: replay > <graph replay> > main' > fwd_a' > <gpu kernel> > kA / kB,
 * and main' > fwd_b' > <gpu memset>. */
static void ids(void) {
  x_main = fr(GPD_CTX_ROOT, 0x10);
  uint64_t fa = fr(x_main, 0x20), fb = fr(x_main, 0x30);
  x_ph = syn(fr(x_main, 0x40), GPD_GRAPH_LABEL);
  uint64_t m2 = cp(x_ph, x_main);
  x_a = cp(m2, fa);
  x_b = cp(m2, fb);
  x_ka = syn(syn(x_a, "<gpu kernel>"), "kernel:kA");
  x_kb = syn(syn(x_a, "<gpu kernel>"), "kernel:kB");
  x_ms = syn(x_b, "<gpu memset>");
}

static double at(const gpd_profile_t *p, uint64_t ctx, unsigned m) { return gpd_profile_excl(p, ctx, m); }

static void expect_placed(const gpd_profile_t *p, double n) {
  assert_true(at(p, x_ka, GPD_M_GKER_COUNT) == n);
  assert_true(at(p, x_kb, GPD_M_GKER_COUNT) == n);
  assert_true(at(p, x_ka, GPD_M_GKER) == 100 * n);
  assert_true(at(p, x_ms, GPD_M_GMSET_COUNT) == n);
  assert_true(at(p, x_ms, GPD_M_GMSET_DEV) == 4096 * n);
  /* nothing left at the launch site itself, all of it below the placeholder */
  uint64_t site = fr(x_main, 0x40);
  assert_true(at(p, syn(site, "<gpu kernel>"), GPD_M_GKER_COUNT) == 0);
  assert_true(gpd_profile_incl(p, site, GPD_M_GKER_COUNT) == 2 * n);
  assert_true(gpd_profile_incl(p, x_ph, GPD_M_GMSET_COUNT) == n);
  /* the copied frames keep the originals' module and offset */
  uint32_t a = gpd_profile_find(p, x_a);
  assert_int_not_equal(a, GPD_NONE);
  assert_int_equal(p->nodes[a].kind, GPD_NODE_FRAME);
  assert_int_equal(p->nodes[a].module, 1);
  assert_true(p->nodes[a].offset == 0x20);
}

/* 3 nodes captured under 2 contexts, instantiated (clones 101..103),
 * 50 replays: exact counts below each creation path. */
static void test_capture_replay(void **st) {
  (void)st;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  program(&p);
  gnode(&p, 1, L_FWD_A, 0);
  gnode(&p, 2, L_FWD_A, 0);
  gnode(&p, 3, L_FWD_B, 0);
  for (uint64_t i = 1; i <= 3; i++)
    gnode(&p, 100 + i, 0, i);
  /* instantiation may report its copies as created too (at the
   * instantiating call's context): the clone's context stays */
  gnode(&p, 101, L_REPLAY, 0);
  replays(&p, 50, 100, 1000);
  gpd_profile_finish(&p);
  expect_placed(&p, 50);
  assert_true(p.graph->created == 3 && p.graph->cloned == 3);
  assert_true(p.graph->placed == 150 && p.graph->unknown == 0 && p.graph->dropped == 0);
  assert_true(p.unknown == 0);
  gpd_profile_free(&p);
}

/* The clones arrive before the nodes they copy (another thread's ring),
 * and a copy of a copy (cudaGraphClone, then instantiate): resolved at
 * the first activity. */
static void test_clone_first(void **st) {
  (void)st;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 2), 0);
  program(&p);
  for (uint64_t i = 1; i <= 3; i++) {
    gnode(&p, 200 + i, 0, 100 + i); /* instantiated from the clone */
    gnode(&p, 100 + i, 0, i);       /* cudaGraphClone */
  }
  gnode(&p, 1, L_FWD_A, 0);
  gnode(&p, 2, L_FWD_A, 0);
  gnode(&p, 3, L_FWD_B, 0);
  replays(&p, 50, 200, 1000);
  gpd_profile_finish(&p);
  expect_placed(&p, 50);
  assert_true(p.graph->placed == 150 && p.graph->unknown == 0);
  gpd_profile_free(&p);
}

/* A creation context whose NODE record is late: the activities wait
 * (pending) and are placed when it comes.  A node no record named: its
 * work goes right below <graph replay>. */
static void test_pending_and_unknown(void **st) {
  (void)st;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 3), 0);
  text(&p, GPD_REC_MODULE, 1, APP);
  text(&p, GPD_REC_STRING, S_KA, "kA");
  text(&p, GPD_REC_STRING, S_KB, "kB");
  frame(&p, L_MAIN, 0, 0x10);
  frame(&p, L_REPLAY, L_MAIN, 0x40);
  gnode(&p, 1, L_FWD_A, 0); /* fwd_a and fwd_b not announced yet */
  gnode(&p, 2, L_FWD_A, 0);
  gnode(&p, 3, L_FWD_B, 0);
  replays(&p, 10, 0, 1);
  assert_int_equal(p.npacts, 30); /* all waiting for their contexts */
  assert_true(p.graph->placed == 0);
  frame(&p, L_FWD_A, L_MAIN, 0x20);
  frame(&p, L_FWD_B, L_MAIN, 0x30);
  gpd_profile_retry(&p);
  assert_int_equal(p.npacts, 0);
  expect_placed(&p, 10);
  /* graph node 77: never named */
  launch(&p, C(500));
  run(&p, C(500), 77, S_KA);
  assert_true(at(&p, syn(syn(x_ph, "<gpu kernel>"), "kernel:kA"), GPD_M_GKER_COUNT) == 1);
  assert_true(p.graph->unknown == 1 && p.graph->placed == 30);
  gpd_profile_finish(&p);
  gpd_profile_free(&p);
}

/* The per-process bound: 4 nodes kept, the other records counted as
 * dropped; the work of a dropped node stays below <graph replay>. */
static void test_bound(void **st) {
  (void)st;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 4), 0);
  program(&p);
  gpd_graph_get(&p)->max = 4;
  gnode(&p, 1, L_FWD_A, 0);
  gnode(&p, 2, L_FWD_A, 0);
  gnode(&p, 3, L_FWD_B, 0);
  gnode(&p, 101, 0, 1);
  for (uint64_t i = 102; i <= 110; i++)
    gnode(&p, i, 0, i <= 103 ? i - 100 : 1);
  assert_true(p.graph->ids.n == 4);
  assert_true(p.graph->created == 3 && p.graph->cloned == 1 && p.graph->dropped == 9);
  replays(&p, 5, 100, 1);
  gpd_profile_finish(&p);
  assert_true(at(&p, x_ka, GPD_M_GKER_COUNT) == 5);
  uint64_t ph_k = syn(x_ph, "<gpu kernel>");
  assert_true(at(&p, syn(ph_k, "kernel:kB"), GPD_M_GKER_COUNT) == 5);
  assert_true(at(&p, syn(x_ph, "<gpu memset>"), GPD_M_GMSET_COUNT) == 5);
  assert_true(p.graph->placed == 5 && p.graph->unknown == 10);
  assert_true(gpd_graph_bytes(&p) > GPD_GRAPH_FAST * sizeof(gpd_graph_fast_t) &&
              gpd_graph_bytes(&p) <= 4096 + GPD_GRAPH_FAST * sizeof(gpd_graph_fast_t));
  gpd_profile_free(&p);
}

/* Two launch sites replaying one graph: one copy of the creation paths
 * below each site's <graph replay>. */
static void test_two_sites(void **st) {
  (void)st;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 5), 0);
  program(&p);
  frame(&p, 9, L_MAIN, 0x50); /* a second replay call site */
  gnode(&p, 1, L_FWD_A, 0);
  gnode(&p, 2, L_FWD_A, 0);
  gnode(&p, 3, L_FWD_B, 0);
  replays(&p, 3, 0, 1);
  gpd_rec_invoke_t r = {.h = {.type = GPD_REC_INVOKE, .flags = GPD_INVOKE_MULTI}, .api = GPD_API_CUDA,
                        .op = GPD_OP_KERNEL, .node = 9, .corr = C(900), .ts = 1};
  put(&p, &r, sizeof r);
  run(&p, C(900), 1, S_KA);
  gpd_profile_finish(&p);
  expect_placed(&p, 3);
  uint64_t ph2 = syn(fr(x_main, 0x50), GPD_GRAPH_LABEL);
  uint64_t a2 = cp(cp(ph2, x_main), fr(x_main, 0x20));
  assert_true(at(&p, syn(syn(a2, "<gpu kernel>"), "kernel:kA"), GPD_M_GKER_COUNT) == 1);
  gpd_profile_free(&p);
}

/* A node's context changes after its work was placed (its clone record
 * came after a replay): the next replays follow the new context, the
 * cached placement is not used again. */
static void test_context_change(void **st) {
  (void)st;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 6), 0);
  program(&p);
  gnode(&p, 1, L_FWD_A, 0);
  gnode(&p, 101, L_FWD_B, 0); /* reported created first, at another context */
  for (int r = 0; r < 2; r++) {
    launch(&p, C(10 + r));
    run(&p, C(10 + r), 101, S_KA);
    if (r == 0)
      gnode(&p, 101, 0, 1); /* now: a copy of node 1 */
  }
  gpd_profile_finish(&p);
  uint64_t b_ka = syn(syn(x_b, "<gpu kernel>"), "kernel:kA");
  assert_true(at(&p, b_ka, GPD_M_GKER_COUNT) == 1);
  assert_true(at(&p, x_ka, GPD_M_GKER_COUNT) == 1);
  gpd_profile_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_capture_replay), cmocka_unit_test(test_clone_first),
      cmocka_unit_test(test_pending_and_unknown), cmocka_unit_test(test_bound),
      cmocka_unit_test(test_two_sites), cmocka_unit_test(test_context_change)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
