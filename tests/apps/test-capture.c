/* test-capture - the shim's calling-context capture without a daemon: a
 * region created here is attached through the test hook; NODE records
 * must describe the real call path (resolved with dladdr) and memoization
 * must give identical node ids and no new announcements for repeated
 * calls, also from another thread (process-wide intern table). */
#include <dlfcn.h>
#include <pthread.h>

#include "drain.h"
#include "shim.h"

#define NOINLINE __attribute__((noinline))
static dr_t D;

NOINLINE uint32_t cap_leaf_a(void) {
  uint32_t id = gpd_shim_capture();
  __asm__ volatile("" ::: "memory"); /* no tail call: keep this frame */
  return id;
}
NOINLINE uint32_t cap_leaf_b(void) {
  uint32_t id = gpd_shim_capture();
  __asm__ volatile("" ::: "memory");
  return id;
}
NOINLINE uint32_t cap_mid(int which) {
  uint32_t id = which ? cap_leaf_b() : cap_leaf_a();
  __asm__ volatile("" ::: "memory");
  return id;
}
NOINLINE uint32_t cap_top(int which) {
  uint32_t id = cap_mid(which);
  __asm__ volatile("" ::: "memory");
  return id;
}

/* The same leaf call site reached through two callers whose frames have
 * the same size: every frame below the callers sits at the same stack
 * address with the same return address, only the callers' return slots
 * differ.  A capture that stopped at the first unchanged (sp, return
 * address) pair would give both the same node.  Built with and without
 * frame pointers (most libraries have none). */
#define SAME_DEPTH_SET(tag, attr)                                          \
  NOINLINE attr uint32_t tag##_leaf(void) {                                \
    uint32_t id = gpd_shim_capture();                                      \
    __asm__ volatile("" ::: "memory");                                     \
    return id;                                                             \
  }                                                                        \
  NOINLINE attr uint32_t tag##_mid(void) {                                 \
    uint32_t id = tag##_leaf();                                            \
    __asm__ volatile("" ::: "memory");                                     \
    return id;                                                             \
  }                                                                        \
  NOINLINE attr uint32_t tag##_caller_x(void) {                            \
    uint32_t id = tag##_mid();                                             \
    __asm__ volatile("" ::: "memory");                                     \
    return id;                                                             \
  }                                                                        \
  NOINLINE attr uint32_t tag##_caller_y(void) {                            \
    uint32_t id = tag##_mid();                                             \
    __asm__ volatile("" ::: "memory");                                     \
    return id;                                                             \
  }
SAME_DEPTH_SET(fp, )
SAME_DEPTH_SET(nofp, __attribute__((optimize("omit-frame-pointer"))))

/* One call site for every caller. */
NOINLINE uint32_t call_via(uint32_t (*fn)(void)) {
  uint32_t id = fn();
  __asm__ volatile("" ::: "memory");
  return id;
}

/* Six callers of one leaf (more paths than a thread keeps recorded). */
#define RR_CALLER(i)                                                       \
  NOINLINE uint32_t rr_caller_##i(void) {                                  \
    uint32_t id = fp_mid();                                                \
    __asm__ volatile("" ::: "memory");                                     \
    return id;                                                             \
  }
RR_CALLER(0)
RR_CALLER(1)
RR_CALLER(2)
RR_CALLER(3)
RR_CALLER(4)
RR_CALLER(5)

/* Function name of node id's call site. */
static const char *node_fn(uint32_t id, uint32_t *parent) {
  const gpd_rec_node_t *n = dr_node(&D, id);
  if (!n)
    DR_FAIL("node %u never announced", id);
  *parent = n->parent;
  const gpd_rec_module_t *m = dr_module(&D, n->module, NULL);
  uintptr_t addr = (uintptr_t)n->offset + (m ? m->base : 0);
  Dl_info info;
  if (!dladdr((void *)addr, &info) || !info.dli_sname)
    return "?";
  return info.dli_sname;
}

static void *thread_main(void *arg) {
  *(uint32_t *)arg = cap_top(0);
  return NULL;
}

/* TEST_CAPTURE_FLOOR=1 (shim-stats.sh): under GPUPROF_SHIM_STATS=floor
 * every capture after a thread's first returns the first one's node,
 * whatever the call path; without it two call sites differ.  Exit 0 when
 * the floor held, 3 when the sites got their own nodes. */
static int floor_check(void) {
  uint32_t got[4];
  /* one call instruction: leaf a twice, then b twice (the drain also
   * keeps the compiler from unrolling the loop into four call sites) */
  for (int i = 0; i < 4; i++) {
    got[i] = cap_top(i >= 2);
    dr_drain(&D);
  }
  DR_CHECK(got[0] != 0 && got[2] != 0, "capture returned 0");
  DR_CHECK(got[0] == got[1] && got[2] == got[3], "one path, two nodes: %u %u, %u %u", got[0], got[1], got[2],
           got[3]);
  printf("test-capture floor: leaf a %u, leaf b %u\n", got[0], got[2]);
  return got[0] == got[2] ? 0 : 3;
}

int main(void) {
  DR_CHECK(gpd_shim_capture() == 0, "capture before a region must return 0");
  dr_attach(&D, 8, 4096);
  DR_CHECK(gpd_shim_active(), "shim not active after attach");
  if (getenv("TEST_CAPTURE_FLOOR"))
    return floor_check();

  uint32_t a1 = cap_top(0);
  dr_drain(&D);
  int nodes1 = D.nnodes;
  DR_CHECK(a1 != 0, "capture returned 0");
  DR_CHECK(nodes1 >= 4, "only %d nodes", nodes1);

  /* The path, leaf first: cap_leaf_a <- cap_mid <- cap_top <- main. */
  uint32_t p, id = a1;
  const char *want[] = {"cap_leaf_a", "cap_mid", "cap_top", "main"};
  for (int i = 0; i < 4; i++) {
    const char *fn = node_fn(id, &p);
    DR_CHECK(strcmp(fn, want[i]) == 0, "frame %d is %s, want %s", i, fn, want[i]);
    id = p;
  }
  /* Root reached within a bounded number of steps (libc start frames). */
  int depth = 4;
  while (id && depth < 64) {
    node_fn(id, &p);
    id = p;
    depth++;
  }
  DR_CHECK(id == 0, "no root");

  /* Every module referenced is announced before the first node using it. */
  for (int i = 0; i < D.nnodes; i++) {
    int mi;
    if (!D.nodes[i].module)
      continue;
    DR_CHECK(dr_module(&D, D.nodes[i].module, &mi), "module %u unannounced", D.nodes[i].module);
    DR_CHECK(D.mod_seq[mi] < D.node_seq[i], "module after node");
  }
  int exe_mod = 0;
  for (int i = 0; i < D.nmods; i++)
    if (strstr(D.mod_path[i], "test-capture")) {
      exe_mod = 1;
      DR_CHECK(D.mods[i].build_id_len == 20, "exe build-id length %u", D.mods[i].build_id_len);
    }
  DR_CHECK(exe_mod, "no MODULE for the test executable");

  /* Memoized: from one call site, the same path gives the same id and
   * nothing new is announced; the other leaf differs only in its last two
   * levels and shares cap_top's node.  (Each call site in main is its own
   * path, so the loop below has one.) */
  static uint32_t ids[2000];
  for (int i = 0; i < 2000; i++)
    ids[i] = cap_top(i >= 1000 ? (i & 1) : 0);
  dr_drain(&D);
  int nodes_loop = D.nnodes;
  uint32_t l0 = ids[0], l1 = ids[1001];
  for (int i = 0; i < 1000; i++)
    DR_CHECK(ids[i] == l0, "repeated capture %d gave another id", i);
  for (int i = 1000; i < 2000; i++)
    DR_CHECK(ids[i] == ((i & 1) ? l1 : l0), "alternating capture %d gave another id", i);
  DR_CHECK(l0 != l1 && l0 != a1, "paths must differ");
  uint32_t pa, pb, ppa, ppb;
  DR_CHECK(strcmp(node_fn(l0, &pa), "cap_leaf_a") == 0, "leaf a");
  DR_CHECK(strcmp(node_fn(l1, &pb), "cap_leaf_b") == 0, "leaf b");
  DR_CHECK(pa != pb, "mid call sites must differ");
  node_fn(pa, &ppa);
  node_fn(pb, &ppb);
  DR_CHECK(ppa == ppb, "cap_top node must be shared (%u vs %u)", ppa, ppb);
  /* New nodes: main's loop call site + cap_top->mid + mid->leaf_a +
   * leaf_a site (4) for path a, then 2 for the leaf_b branch. */
  DR_CHECK(nodes_loop == nodes1 + 6, "loop announced %d nodes, want 6", nodes_loop - nodes1);
  for (int i = 0; i < 1000; i++)
    ids[i] = cap_top(i & 1);
  dr_drain(&D);
  /* That loop is a new call site in main: 1 + 3 + 2 nodes, no more. */
  DR_CHECK(D.nnodes == nodes_loop + 6, "second loop announced %d nodes", D.nnodes - nodes_loop);

  /* Another thread: its root part differs (thread start), so it gets its
   * own nodes; a second thread with the same path reuses them. */
  uint32_t t1 = 0, t2 = 0;
  pthread_t th;
  pthread_create(&th, NULL, thread_main, &t1);
  pthread_join(th, NULL);
  dr_drain(&D);
  int nodes2 = D.nnodes;
  pthread_create(&th, NULL, thread_main, &t2);
  pthread_join(th, NULL);
  dr_drain(&D);
  DR_CHECK(t1 && t1 == t2, "same path on two threads: %u vs %u", t1, t2);
  DR_CHECK(D.nnodes == nodes2, "second thread re-announced %d nodes", D.nnodes - nodes2);
  DR_CHECK(strcmp(node_fn(t1, &p), "cap_leaf_a") == 0, "thread leaf");

  /* Same leaf, same depth, two callers: different nodes, every time. */
  {
    static const struct {
      const char *tag, *x, *y;
      uint32_t (*fx)(void), (*fy)(void);
    } sets[2] = {{"fp", "fp_caller_x", "fp_caller_y", fp_caller_x, fp_caller_y},
                 {"nofp", "nofp_caller_x", "nofp_caller_y", nofp_caller_x, nofp_caller_y}};
    for (int si = 0; si < 2; si++) {
      uint32_t idx = 0, idy = 0;
      for (int i = 0; i < 400; i++) {
        uint32_t id = call_via((i & 1) ? sets[si].fy : sets[si].fx);
        uint32_t *want = (i & 1) ? &idy : &idx;
        if (!*want)
          *want = id;
        DR_CHECK(id && id == *want, "%s: capture %d gave %u, want %u", sets[si].tag, i, id, *want);
      }
      dr_drain(&D);
      DR_CHECK(idx != idy, "%s: two callers at the same depth share node %u", sets[si].tag, idx);
      const char *wx[] = {"leaf", "mid", sets[si].x}, *wy[] = {"leaf", "mid", sets[si].y};
      uint32_t ix = idx, iy = idy;
      for (int lv = 0; lv < 3; lv++) {
        const char *fx = node_fn(ix, &ix), *fy = node_fn(iy, &iy);
        DR_CHECK(strstr(fx, wx[lv]) && strstr(fy, wy[lv]), "%s level %d: %s / %s", sets[si].tag, lv, fx, fy);
      }
      /* Both callers are called from call_via's one call site (main may
       * call call_via from two sites: the compiler duplicates loops). */
      DR_CHECK(dr_node(&D, ix)->offset == dr_node(&D, iy)->offset, "%s: the callers' parent call site", sets[si].tag);
    }
  }
  /* More distinct paths in rotation than a thread keeps recorded. */
  {
    uint32_t (*const rr[6])(void) = {rr_caller_0, rr_caller_1, rr_caller_2,
                                     rr_caller_3, rr_caller_4, rr_caller_5};
    uint32_t first[6] = {0};
    for (int i = 0; i < 600; i++) {
      uint32_t id = call_via(rr[i % 6]);
      if (i < 6)
        first[i] = id;
      DR_CHECK(id && id == first[i % 6], "rotation %d: %u vs %u", i, id, first[i % 6]);
    }
    for (int a = 0; a < 6; a++)
      for (int b = a + 1; b < 6; b++)
        DR_CHECK(first[a] != first[b], "rotation callers %d and %d share a node", a, b);
    dr_drain(&D);
    uint32_t pp;
    node_fn(first[0], &pp);
    node_fn(pp, &pp);
    DR_CHECK(strcmp(node_fn(pp, &pp), "rr_caller_0") == 0, "rotation caller name");
  }

  /* Strings: one id and one STRING record per text. */
  uint32_t s1 = gpd_shim_string("my_kernel", GPD_STR_KERNEL);
  uint32_t s2 = gpd_shim_string("my_kernel", GPD_STR_KERNEL);
  uint32_t s3 = gpd_shim_string("other", GPD_STR_KERNEL);
  dr_drain(&D);
  DR_CHECK(s1 && s1 == s2 && s3 && s3 != s1, "string ids %u %u %u", s1, s2, s3);
  int nk = 0;
  for (int i = 0; i < D.nstr; i++)
    nk += strcmp(D.str_text[i], "my_kernel") == 0;
  DR_CHECK(nk == 1, "my_kernel announced %d times", nk);
  DR_CHECK(strcmp(dr_string(&D, s3), "other") == 0, "string text");

  /* Correlation ids carry the api and grow. */
  uint64_t c1 = gpd_shim_corr_next(GPD_API_OPENCL), c2 = gpd_shim_corr_next(GPD_API_OPENCL);
  DR_CHECK(GPD_CORR_API(c1) == GPD_API_OPENCL && c2 > c1, "corr");

  printf("test-capture: ok (%d nodes, %d modules, depth %d)\n", D.nnodes, D.nmods, depth);
  return 0;
}
