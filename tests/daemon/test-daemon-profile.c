/* test-daemon-profile.c - unit tests of the daemon's attribution
 * (profile.c) and node merge (merge.c): records fed directly, exact metric
 * values asserted at exact Merkle context ids.  Also the commit of the
 * consumer position with the state (monitor.c + dstore.c): a "restarted
 * daemon" adopting a region counts every record exactly once; and a
 * frozen process's rings journaled unread, applied after the copy
 * (journal-hold.c). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "gpuprof/error.h"
#include <sys/stat.h>

#include "daemon.h"
#include "gpuprof/hash.h"
#include "gpuprof/frame.h"
#include "gpuprof.pb-c.h"
#include "query.h"
#include "dstore-internal.h"

/* ------------------------------------------------------- record builders */

typedef struct {
  _Alignas(64) uint8_t b[GPD_REC_MAX_BYTES];
} recbuf_t;

static void feed(gpd_profile_t *p, const void *rec, size_t len) {
  recbuf_t r;
  memset(&r, 0, sizeof r);
  memcpy(r.b, rec, len);
  size_t nbytes = (len + GPD_SLOT_SIZE - 1) / GPD_SLOT_SIZE * GPD_SLOT_SIZE;
  assert_int_equal(gpd_rec_validate(r.b, nbytes), 0);
  gpd_profile_ingest(p, r.b, nbytes);
}

static void feed_module(gpd_profile_t *p, uint32_t id, const char *path, const char *bid) {
  recbuf_t r;
  memset(&r, 0, sizeof r);
  gpd_rec_module_t *m = (gpd_rec_module_t *)r.b;
  size_t len = strlen(path);
  m->h.type = GPD_REC_MODULE;
  m->h.version = GPD_REC_VERSION;
  m->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *m, len);
  m->h.len = (uint32_t)len;
  m->id = id;
  m->base = 0x400000;
  m->size = 0x10000;
  if (bid) {
    m->build_id_len = (uint8_t)strlen(bid);
    memcpy(m->build_id, bid, m->build_id_len);
  }
  memcpy(m->path, path, len);
  feed(p, r.b, sizeof *m + len);
}

static void feed_string(gpd_profile_t *p, uint32_t id, const char *s) {
  recbuf_t r;
  memset(&r, 0, sizeof r);
  gpd_rec_string_t *m = (gpd_rec_string_t *)r.b;
  size_t len = strlen(s);
  m->h.type = GPD_REC_STRING;
  m->h.version = GPD_REC_VERSION;
  m->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *m, len);
  m->h.len = (uint32_t)len;
  m->id = id;
  m->kind = GPD_STR_KERNEL;
  memcpy(m->text, s, len);
  feed(p, r.b, sizeof *m + len);
}

static void feed_node(gpd_profile_t *p, uint32_t id, uint32_t parent, uint32_t mod, uint64_t off) {
  gpd_rec_node_t n;
  memset(&n, 0, sizeof n);
  n.h.type = GPD_REC_NODE;
  n.h.version = GPD_REC_VERSION;
  n.h.nslots = GPD_REC_NSLOTS(n);
  n.id = id;
  n.parent = parent;
  n.module = mod;
  n.offset = off;
  feed(p, &n, sizeof n);
}

static void feed_invoke(gpd_profile_t *p, uint64_t corr, uint32_t node, unsigned op, int multi) {
  gpd_rec_invoke_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_INVOKE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.h.flags = multi ? GPD_INVOKE_MULTI : 0;
  r.api = GPD_API_OPENCL;
  r.op = (uint8_t)op;
  r.node = node;
  r.corr = corr;
  r.ts = 1;
  feed(p, &r, sizeof r);
}

static void feed_act(gpd_profile_t *p, uint64_t corr, unsigned op, unsigned sub, uint64_t dur,
                     uint64_t bytes, uint32_t name) {
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.h.type = GPD_REC_ACTIVITY;
  a.h.version = GPD_REC_VERSION;
  a.h.nslots = GPD_REC_NSLOTS(a);
  a.api = GPD_API_OPENCL;
  a.op = (uint8_t)op;
  a.subkind = (uint8_t)sub;
  a.corr = corr;
  a.start = 1000;
  a.end = 1000 + dur;
  a.bytes = bytes;
  a.name = name;
  a.stream = 1;
  if (op == GPD_OP_KERNEL) {
    a.blocks = 4;
    a.block_threads = 64;
  }
  feed(p, &a, sizeof a);
}

/* Merkle ids of the test tree. */
static uint64_t id_frame(uint64_t parent, const char *key, uint64_t off) {
  return gpd_ctx_id(parent, key, strlen(key), off);
}
static uint64_t id_syn(uint64_t parent, const char *key) {
  return gpd_ctx_id(parent, key, strlen(key), 0);
}

#define APP "/usr/bin/app"
#define LIBBID "\x01\x02\x03\x04\x05\x06\x07\x08"
#define KNAME "_Z6kernelPf"
#define C(n) GPD_CORR(GPD_API_OPENCL, n)

/* Process A: main(app+0x100) -> f(app+0x200) launches kernels;
 *            main -> g(lib+0x300) copies and syncs. */
static void build_a(gpd_profile_t *p, uint32_t base_local, uint32_t mod_app) {
  /* "ring B" first: activities before anything they refer to */
  feed_act(p, C(10), GPD_OP_KERNEL, 0, 500, 0, 7);
  feed_act(p, C(12), GPD_OP_COPY, GPD_COPY_H2D, 200, 1000, 0);
  feed_act(p, C(99), GPD_OP_KERNEL, 0, 40, 0, 7); /* never invoked */
  /* "ring A": nodes child-first, then invocations */
  feed_node(p, base_local + 2, base_local + 1, mod_app, 0x200);
  feed_node(p, base_local + 3, base_local + 1, 2, 0x300);
  feed_module(p, 2, "/lib/libfoo.so", LIBBID);
  feed_module(p, mod_app, APP, NULL);
  feed_string(p, 7, KNAME);
  feed_node(p, base_local + 1, 0, mod_app, 0x100);
  feed_invoke(p, C(10), base_local + 2, GPD_OP_KERNEL, 0);
  feed_invoke(p, C(11), base_local + 2, GPD_OP_KERNEL, 0);
  feed_invoke(p, C(12), base_local + 3, GPD_OP_COPY, 0);
  feed_invoke(p, C(13), base_local + 3, GPD_OP_COPY, 0);
  feed_invoke(p, C(14), base_local + 3, GPD_OP_SYNC, 0);
  gpd_profile_retry(p);
  /* "ring B" again: activities after their invocations */
  feed_act(p, C(11), GPD_OP_KERNEL, 0, 300, 0, 7);
  feed_act(p, C(13), GPD_OP_COPY, GPD_COPY_D2H, 100, 500, 0);
  feed_act(p, C(14), GPD_OP_SYNC, GPD_SYNC_STR, 50, 0, 0);
  gpd_profile_retry(p);
}

static uint64_t k_main, k_f, k_g, k_phk, k_kern, k_phc, k_phs, k_unk;

static void ids(void) {
  k_main = id_frame(GPD_CTX_ROOT, APP, 0x100);
  k_f = id_frame(k_main, APP, 0x200);
  k_g = gpd_ctx_id(k_main, LIBBID, 8, 0x300); /* build-id wins over path */
  k_phk = id_syn(k_f, "<gpu kernel>");
  k_kern = id_syn(k_phk, "kernel:" KNAME);
  k_phc = id_syn(k_g, "<gpu copy>");
  k_phs = id_syn(k_g, "<gpu sync>");
  k_unk = id_syn(GPD_CTX_ROOT, GPD_UNKNOWN_LABEL);
}

static void test_attribution(void **state) {
  (void)state;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  build_a(&p, 0, 1);
  /* before the final flush the uninvoked activity is pending */
  assert_int_equal(p.npacts, 1);
  assert_int_equal(gpd_profile_find(&p, k_unk), GPD_NONE);
  gpd_profile_finish(&p);
  assert_int_equal(p.npacts, 0);
  assert_int_equal(p.npnodes, 0);

  /* kernel time: exactly at the launching call site's kernel node */
  assert_true(gpd_profile_excl(&p, k_kern, GPD_M_GKER) == 800.0);
  assert_true(gpd_profile_excl(&p, k_kern, GPD_M_GKER_COUNT) == 2.0);
  assert_true(gpd_profile_excl(&p, k_kern, GPD_M_GKER_BLK) == 8.0);
  assert_true(gpd_profile_excl(&p, k_kern, GPD_M_GPUOP) == 800.0);
  assert_true(gpd_profile_excl(&p, k_phk, GPD_M_GKER) == 0.0);
  assert_true(gpd_profile_incl(&p, k_phk, GPD_M_GKER) == 800.0);
  assert_true(gpd_profile_incl(&p, k_f, GPD_M_GKER) == 800.0);
  assert_true(gpd_profile_excl(&p, k_f, GPD_M_GKER) == 0.0);
  assert_true(gpd_profile_incl(&p, k_g, GPD_M_GKER) == 0.0);
  assert_true(gpd_profile_excl(&p, k_main, GPD_M_GKER) == 0.0);
  assert_true(gpd_profile_incl(&p, k_main, GPD_M_GKER) == 800.0);
  /* copies by direction, at g's <gpu copy> */
  assert_true(gpd_profile_excl(&p, k_phc, GPD_M_GXCOPY_H2D) == 1000.0);
  assert_true(gpd_profile_excl(&p, k_phc, GPD_M_GXCOPY_D2H) == 500.0);
  assert_true(gpd_profile_excl(&p, k_phc, GPD_M_GXCOPY_COUNT) == 2.0);
  assert_true(gpd_profile_excl(&p, k_phc, GPD_M_GXCOPY) == 300.0);
  assert_true(gpd_profile_incl(&p, k_f, GPD_M_GXCOPY) == 0.0);
  /* host-measured sync, same rule */
  assert_true(gpd_profile_excl(&p, k_phs, GPD_M_GSYNC) == 50.0);
  assert_true(gpd_profile_excl(&p, k_phs, GPD_M_GSYNC_STR) == 50.0);
  assert_true(gpd_profile_excl(&p, k_phs, GPD_M_GSYNC_COUNT) == 1.0);
  /* the uninvoked kernel: root -> <unknown context> -> <gpu kernel> -> kernel */
  uint64_t uk = id_syn(id_syn(k_unk, "<gpu kernel>"), "kernel:" KNAME);
  assert_true(gpd_profile_excl(&p, uk, GPD_M_GKER) == 40.0);
  assert_true(gpd_profile_incl(&p, k_unk, GPD_M_GKER) == 40.0);
  assert_int_equal(p.unknown, 1);
  /* inclusive at the root: everything */
  assert_true(gpd_profile_incl(&p, GPD_CTX_ROOT, GPD_M_GPUOP) == 800.0 + 300.0 + 50.0 + 40.0);
  assert_true(gpd_profile_incl(&p, GPD_CTX_ROOT, GPD_M_GKER_COUNT) == 3.0);
  /* labels: placeholder and demangled kernel, raw name kept */
  uint32_t ki = gpd_profile_find(&p, k_kern);
  assert_string_equal(gpd_profile_label(&p, p.nodes[ki].label), "kernel(float*)");
  assert_string_equal(gpd_profile_label(&p, p.nodes[ki].raw), KNAME);
  assert_string_equal(gpd_profile_label(&p, p.nodes[gpd_profile_find(&p, k_phk)].label),
                      "<gpu kernel>");
  assert_int_equal(p.nodes[gpd_profile_find(&p, k_unk)].kind, GPD_NODE_UNKNOWN);
  /* cct_local: shim ids resolve */
  assert_int_equal(gpd_profile_local(&p, 2), gpd_profile_find(&p, k_f));
  assert_int_equal(p.activities, 6);
  gpd_profile_free(&p);
}

/* A labelled context (GPD_NODE_F_LABEL: an OpenMP construct, shim/ompt/):
 * main -> f -> <omp target> -> <gpu kernel> -> kernel, the label's string
 * arriving after the node that names it. */
static void test_label(void **state) {
  (void)state;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  feed_module(&p, 1, APP, NULL);
  feed_node(&p, 1, 0, 1, 0x100);
  feed_node(&p, 2, 1, 1, 0x200);
  gpd_rec_node_t n;
  memset(&n, 0, sizeof n);
  n.h.type = GPD_REC_NODE;
  n.h.version = GPD_REC_VERSION;
  n.h.nslots = GPD_REC_NSLOTS(n);
  n.h.flags = GPD_NODE_F_LABEL;
  n.id = 3;
  n.parent = 2;
  n.module = 9; /* the label's string, not yet known */
  feed(&p, &n, sizeof n);
  feed_invoke(&p, C(1), 3, GPD_OP_KERNEL, 0);
  feed_act(&p, C(1), GPD_OP_KERNEL, 0, 700, 0, 7);
  feed_string(&p, 7, KNAME);
  gpd_profile_retry(&p);
  uint64_t k_omp = id_syn(k_f, "label:<omp target>");
  assert_int_equal(gpd_profile_find(&p, k_omp), GPD_NONE);
  feed_string(&p, 9, "<omp target>");
  gpd_profile_retry(&p);
  gpd_profile_finish(&p);
  uint32_t oi = gpd_profile_find(&p, k_omp);
  assert_int_not_equal(oi, GPD_NONE);
  assert_int_equal(p.nodes[oi].kind, GPD_NODE_PLACEHOLDER);
  assert_int_equal(p.nodes[oi].op, GPD_OP_NONE);
  assert_string_equal(gpd_profile_label(&p, p.nodes[oi].label), "<omp target>");
  uint64_t k = id_syn(id_syn(k_omp, "<gpu kernel>"), "kernel:" KNAME);
  assert_true(gpd_profile_excl(&p, k, GPD_M_GKER) == 700.0);
  assert_true(gpd_profile_incl(&p, k_omp, GPD_M_GKER_COUNT) == 1.0);
  assert_true(gpd_profile_excl(&p, k_omp, GPD_M_GKER) == 0.0);
  assert_int_equal(p.unknown, 0);
  gpd_profile_free(&p);
}

static void test_multi_and_bounds(void **state) {
  (void)state;
  ids();
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 2), 0);
  feed_module(&p, 1, APP, NULL);
  feed_node(&p, 1, 0, 1, 0x100);
  feed_invoke(&p, C(50), 1, GPD_OP_KERNEL, 1); /* graph launch */
  for (int i = 0; i < 3; i++)
    feed_act(&p, C(50), GPD_OP_KERNEL, 0, 10, 0, 0);
  feed_invoke(&p, C(51), 1, GPD_OP_MEMSET, 0);
  feed_act(&p, C(51), GPD_OP_MEMSET, GPD_MEM_DEV, 5, 64, 0);
  /* a second activity for a non-multi corr has no invocation any more */
  feed_act(&p, C(51), GPD_OP_MEMSET, GPD_MEM_DEV, 5, 64, 0);
  gpd_profile_finish(&p);
  uint64_t ph = id_syn(k_main, "<gpu kernel>");
  assert_true(gpd_profile_excl(&p, ph, GPD_M_GKER) == 30.0);
  assert_true(gpd_profile_excl(&p, ph, GPD_M_GKER_COUNT) == 3.0);
  uint64_t ms = id_syn(k_main, "<gpu memset>");
  assert_true(gpd_profile_excl(&p, ms, GPD_M_GMSET_DEV) == 64.0);
  assert_true(gpd_profile_excl(&p, ms, GPD_M_GMSET_COUNT) == 1.0);
  assert_true(gpd_profile_incl(&p, k_unk, GPD_M_GMSET_DEV) == 64.0);
  gpd_profile_free(&p);
}

static void test_merge(void **state) {
  (void)state;
  ids();
  gpd_profile_t a, b;
  assert_int_equal(gpd_profile_init(&a, 1), 0);
  assert_int_equal(gpd_profile_init(&b, 2), 0);
  build_a(&a, 0, 1);
  build_a(&b, 100, 9); /* other local node and module ids, same paths */
  gpd_profile_finish(&a);
  gpd_profile_finish(&b);
  assert_int_equal(a.nnodes, b.nnodes);
  gpd_merge_t m;
  memset(&m, 0, sizeof m);
  double root_gker = 0;
  for (int round = 0; round < 3; round++) { /* the index is kept between views */
    gpd_merge_begin(&m);
    assert_int_equal(gpd_merge_add(&m, &a), 0);
    assert_int_equal(gpd_merge_add(&m, &b), 0);
    assert_int_equal(gpd_merge_finish(&m), 0);
    assert_int_equal(m.n, a.nnodes); /* one node per path */
    assert_int_equal(m.nview, a.nnodes);
    uint32_t k = gpd_merge_find(&m, k_kern);
    assert_int_not_equal(k, GPD_NONE);
    assert_true(gpd_merge_value(&m, k, 0, GPD_M_GKER) == 1600.0);
    assert_true(gpd_merge_value(&m, k, 0, GPD_M_GKER_COUNT) == 4.0);
    uint32_t f = gpd_merge_find(&m, k_f);
    assert_true(gpd_merge_value(&m, f, 1, GPD_M_GKER) == 1600.0);
    assert_true(gpd_merge_value(&m, f, 0, GPD_M_GKER) == 0.0);
    uint32_t r = gpd_merge_find(&m, GPD_CTX_ROOT);
    assert_int_equal(r, 0);
    assert_true(gpd_merge_value(&m, r, 1, GPD_M_GPUOP) == 2 * 1190.0);
    root_gker = gpd_merge_value(&m, r, 1, GPD_M_GKER);
    uint32_t c = gpd_merge_find(&m, k_phc);
    assert_true(gpd_merge_value(&m, c, 0, GPD_M_GXCOPY_H2D) == 2000.0);
    /* parents precede children */
    for (uint32_t i = 1; i < m.n; i++)
      assert_true(m.nodes[i].parent < i);
  }
  /* a view of one profile: half the values, same nodes; then live values */
  gpd_merge_begin(&m);
  gpd_merge_live(&m, &a);
  assert_int_equal(gpd_merge_add(&m, &b), 0);
  assert_int_equal(gpd_merge_finish(&m), 0);
  assert_true(gpd_merge_value(&m, gpd_merge_find(&m, k_kern), 0, GPD_M_GKER) == 800.0);
  assert_true(gpd_merge_value(&m, 0, 1, GPD_M_GPUOP) == 1190.0);
  uint32_t kb = gpd_profile_find(&b, k_kern);
  assert_int_equal(gpd_profile_metric_add(&b, kb, GPD_M_GKER, 5.0), 0);
  gpd_merge_begin(&m);
  assert_int_equal(gpd_merge_add(&m, &a), 0);
  assert_int_equal(gpd_merge_add(&m, &b), 0);
  assert_int_equal(gpd_merge_finish(&m), 0);
  assert_true(gpd_merge_value(&m, gpd_merge_find(&m, k_kern), 0, GPD_M_GKER) == 1605.0);
  assert_true(gpd_merge_value(&m, 0, 1, GPD_M_GKER) == root_gker + 5.0);
  /* unchanged profiles: the view stands; then a change is seen */
  uint64_t g = m.gen;
  gpd_merge_begin(&m);
  assert_int_equal(gpd_merge_add(&m, &a), 0);
  assert_int_equal(gpd_merge_add(&m, &b), 0);
  assert_int_equal(gpd_merge_finish(&m), 0);
  assert_true(m.gen == g);
  assert_int_equal(m.nview, a.nnodes);
  assert_true(gpd_merge_value(&m, gpd_merge_find(&m, k_kern), 0, GPD_M_GKER) == 1605.0);
  assert_int_equal(gpd_profile_metric_add(&a, gpd_profile_find(&a, k_kern), GPD_M_GKER, 1.0), 0);
  gpd_merge_begin(&m);
  assert_int_equal(gpd_merge_add(&m, &a), 0);
  assert_int_equal(gpd_merge_add(&m, &b), 0);
  assert_int_equal(gpd_merge_finish(&m), 0);
  assert_int_equal(m.nview, a.nnodes); /* the same nodes, sums taken again */
  assert_true(gpd_merge_value(&m, gpd_merge_find(&m, k_kern), 0, GPD_M_GKER) == 1606.0);
  assert_true(gpd_merge_value(&m, 0, 1, GPD_M_GKER) == root_gker + 6.0);
  /* new nodes in one profile of the same selection: the earlier marks
   * stand, the new nodes join the view; every value as a fresh merge's */
  uint32_t na = a.nnodes;
  feed_node(&a, 50, 1, 1, 0x500);
  feed_invoke(&a, C(30), 50, GPD_OP_KERNEL, 0);
  feed_act(&a, C(30), GPD_OP_KERNEL, 0, 70, 0, 7);
  assert_true(a.nnodes > na);
  gpd_merge_begin(&m);
  assert_int_equal(gpd_merge_add(&m, &a), 0);
  assert_int_equal(gpd_merge_add(&m, &b), 0);
  assert_int_equal(gpd_merge_finish(&m), 0);
  assert_int_equal(m.nview, a.nnodes);
  gpd_merge_t fresh;
  memset(&fresh, 0, sizeof fresh);
  fresh.nolog = 1; /* m reads the profiles' change logs */
  gpd_merge_begin(&fresh);
  assert_int_equal(gpd_merge_add(&fresh, &a), 0);
  assert_int_equal(gpd_merge_add(&fresh, &b), 0);
  assert_int_equal(gpd_merge_finish(&fresh), 0);
  assert_int_equal(fresh.nview, m.nview);
  for (uint32_t i = 0; i < a.nnodes; i++) {
    uint32_t j = gpd_merge_find(&m, a.nodes[i].id), jf = gpd_merge_find(&fresh, a.nodes[i].id);
    assert_int_not_equal(j, GPD_NONE);
    assert_int_not_equal(jf, GPD_NONE);
    for (unsigned id = 0; id < 64; id++)
      for (int incl = 0; incl < 2; incl++)
        assert_true(gpd_merge_value(&m, j, incl, id) == gpd_merge_value(&fresh, jf, incl, id));
  }
  assert_true(gpd_merge_value(&m, 0, 1, GPD_M_GKER) == root_gker + 76.0);
  gpd_merge_free(&fresh);
  /* another selection of the same profiles is computed, not reused */
  gpd_merge_begin(&m);
  assert_int_equal(gpd_merge_add(&m, &a), 0);
  assert_int_equal(gpd_merge_finish(&m), 0);
  assert_true(gpd_merge_value(&m, gpd_merge_find(&m, k_kern), 0, GPD_M_GKER) == 801.0);
  gpd_merge_free(&m);
  gpd_profile_free(&a);
  gpd_profile_free(&b);
}

/* ---- incremental merge against a full one (merge.c) ---- */

static uint64_t mi_rng = 0x9e3779b97f4a7c15ull;
static uint32_t mi_rand(uint32_t n) {
  mi_rng ^= mi_rng << 13;
  mi_rng ^= mi_rng >> 7;
  mi_rng ^= mi_rng << 17;
  return (uint32_t)(mi_rng % n);
}

/* A node below a random node of p (an existing one when the key repeats:
 * profiles share paths), with a fractional value of one of ids[] now and
 * then. */
static void mi_grow(gpd_profile_t *p, const unsigned *ids, unsigned nids) {
  char key[16];
  uint32_t par = mi_rand(p->nnodes);
  snprintf(key, sizeof key, "k%u", mi_rand(6));
  uint8_t kind = mi_rand(3) == 0 ? GPD_NODE_KERNEL : GPD_NODE_FRAME;
  uint32_t c = gpd_profile_child(p, par, kind, key, key, NULL);
  assert_int_not_equal(c, GPD_NONE);
  if (mi_rand(2))
    assert_int_equal(gpd_profile_metric_add(p, c, ids[mi_rand(nids)], (double)mi_rand(100000) / 7.0), 0);
}

/* Every node of full's view is in m's view at the same index with the
 * same reply id and bit for bit the same exclusive and inclusive values. */
static void mi_same(const gpd_merge_t *m, const gpd_merge_t *full) {
  assert_int_equal(m->nview, full->nview);
  for (uint32_t jf = 0; jf < full->n; jf++) {
    if (!gpd_merge_in_view(full, jf))
      continue;
    uint32_t j = jf; /* the same index, the same reply id */
    assert_true(gpd_merge_in_view(m, j));
    assert_true(m->view[j].out == full->view[jf].out);
    for (unsigned id = 0; id < 64; id++)
      for (int incl = 0; incl < 2; incl++) {
        double a = gpd_merge_value(m, j, incl, id), b = gpd_merge_value(full, jf, incl, id);
        if (memcmp(&a, &b, sizeof a) != 0)
          fail_msg("node %u metric %u incl %d: incremental %.17g, full %.17g", jf, id, incl, a, b);
      }
  }
}

static void mi_view(gpd_merge_t *m, gpd_profile_t *ps, unsigned np, unsigned skip) {
  gpd_merge_begin(m);
  for (unsigned k = 0; k < np; k++) {
    if (k == skip)
      gpd_merge_live(m, &ps[k]);
    else
      assert_int_equal(gpd_merge_add(m, &ps[k]), 0);
  }
  assert_int_equal(gpd_merge_finish(m), 0);
}

/* The merge of the same profiles after random changes (fractional values
 * on random nodes, new nodes, another owner's nodes with the same Merkle
 * ids, a new metric id, a selection of fewer profiles, more changes than
 * the change log holds): the incremental sums equal a full merge's bit
 * for bit, and the incremental path was taken where it can be. */
static void test_merge_incremental(void **state) {
  (void)state;
  enum { NP = 5 };
  static const unsigned ids[] = {GPD_M_GPUOP, GPD_M_GKER, GPD_M_GKER_OCC_THR, GPD_M_GKER_COUNT};
  gpd_profile_t ps[NP];
  for (unsigned k = 0; k < NP; k++) {
    assert_int_equal(gpd_profile_init(&ps[k], 100 + k), 0);
    ps[k].uid = k == 2 ? 1001 : 1000; /* profile 2: another user, same paths */
    for (int t = 0; t < 3000; t++)
      mi_grow(&ps[k], ids, 3);
  }
  /* the reference sees the same views, so its merged index is the same
   * (a node's index orders the additions into its parent's inclusive
   * sums), and takes the full sums every time */
  gpd_merge_t m, full;
  memset(&m, 0, sizeof m);
  memset(&full, 0, sizeof full);
  full.nolog = 1;
  uint64_t inc_rounds = 0;
  for (int round = 0; round < 120; round++) {
    unsigned skip = NP; /* all selected */
    int expect_inc = round > 0;
    if (round % 29 == 7) {
      skip = (unsigned)round % NP; /* another selection: full sums */
      expect_inc = 0;
    } else if (round % 29 == 8) {
      expect_inc = 0; /* back to all: full sums again */
    }
    int kind = mi_rand(10);
    for (unsigned k = 0; k < NP; k++) {
      if (mi_rand(3) == 0)
        continue; /* unchanged */
      gpd_profile_t *p = &ps[k];
      unsigned nch = 1 + mi_rand(8);
      for (unsigned c = 0; c < nch; c++)
        assert_int_equal(gpd_profile_metric_add(p, mi_rand(p->nnodes), ids[mi_rand(3)],
                                                (double)mi_rand(1000000) / 3.0), 0);
      if (kind == 0)
        mi_grow(p, ids, 3); /* new nodes */
    }
    if (round == 50) { /* a metric id no profile had: new columns */
      assert_int_equal(gpd_profile_metric_add(&ps[1], 3, ids[3], 2.5), 0);
      expect_inc = 0;
    }
    if (round == 80) { /* every node of one profile: past its log's bound */
      for (uint32_t i = 0; i < ps[3].nnodes; i++)
        assert_int_equal(gpd_profile_metric_add(&ps[3], i, GPD_M_GKER, 0.125), 0);
      expect_inc = 0;
    }
    uint64_t ninc = m.ninc;
    mi_view(&m, ps, NP, skip);
    mi_view(&full, ps, NP, skip);
    mi_same(&m, &full);
    assert_int_equal(full.ninc, 0);
    if (expect_inc && kind != 0) /* new nodes may share an id with another owner: full */
      assert_int_equal(m.ninc, ninc + 1);
    else if (!expect_inc)
      assert_int_equal(m.ninc, ninc);
    inc_rounds += m.ninc - ninc;
  }
  assert_true(inc_rounds >= 90);
  assert_true(ps[0].nnodes > 1000);
  gpd_merge_free(&full);
  gpd_merge_free(&m);
  for (unsigned k = 0; k < NP; k++)
    gpd_profile_free(&ps[k]);
}

/* ---- Top from the node view, incremental against full (query-top.c) ---- */

/* One query answered in-process as gpuprofd does (start, run, frame),
 * unpacked (free with gpuprof__msg__free_unpacked). */
static Gpuprof__Msg *tq_ask(gpd_daemon_t *d, const gpd_peer_t *peer, const Gpuprof__Msg *req) {
  gpd_query_t *q = NULL;
  assert_int_equal(gpd_query_start(d, peer, req, &q), 0);
  gpd_query_run(q);
  uint8_t *buf = NULL;
  size_t len = 0;
  assert_int_equal(gpd_query_take_frame(q, &buf, &len), 0);
  Gpuprof__Msg *r = gpuprof__msg__unpack(NULL, len - GPD_FRAME_HDR, buf + GPD_FRAME_HDR);
  gpd_query_frame_free(buf);
  gpd_query_free(q);
  assert_non_null(r);
  return r;
}

static Gpuprof__Msg *tq_top(gpd_daemon_t *d, const gpd_peer_t *peer, unsigned metric) {
  Gpuprof__Msg req = GPUPROF__MSG__INIT;
  Gpuprof__TopRequest top = GPUPROF__TOP_REQUEST__INIT;
  top.limit = 1000;
  top.metric = metric;
  req.body_case = GPUPROF__MSG__BODY_TOP_REQ;
  req.top_req = &top;
  Gpuprof__Msg *r = tq_ask(d, peer, &req);
  assert_int_equal(r->body_case, GPUPROF__MSG__BODY_TOP);
  return r;
}

/* a and b list the same groups with bit for bit the same values and the
 * same heaviest path */
static void tq_same(const Gpuprof__TopReply *a, const Gpuprof__TopReply *b) {
  assert_int_equal(a->n_entries, b->n_entries);
  for (size_t i = 0; i < a->n_entries; i++) {
    const Gpuprof__TopEntry *x = a->entries[i], *y = b->entries[i];
    assert_string_equal(x->label, y->label);
    assert_int_equal(x->n_metrics, y->n_metrics);
    for (size_t k = 0; k < x->n_metrics; k++) {
      assert_int_equal(x->metrics[k]->id, y->metrics[k]->id);
      if (memcmp(&x->metrics[k]->value, &y->metrics[k]->value, sizeof(double)) != 0)
        fail_msg("%s metric %u: incremental %.17g, full %.17g", x->label, x->metrics[k]->id,
                 x->metrics[k]->value, y->metrics[k]->value);
    }
    assert_int_equal(x->n_path, y->n_path);
    for (size_t k = 0; k < x->n_path; k++)
      assert_true(x->path[k]->id == y->path[k]->id);
  }
}

/* Top of 4 processes (two users) after random changes (fractional GKER,
 * whole GKER:COUNT, new kernel nodes): the answer that follows the view's
 * incremental sums equals, bit for bit, the one summed in full (another
 * metric asked in between), and each group's GKER:COUNT is the exact sum
 * of its kernel nodes over the processes. */
static void test_top_incremental(void **state) {
  (void)state;
  enum { NP = 4, NK = 7 };
  gpd_daemon_t *d = calloc(1, sizeof *d);
  assert_non_null(d);
  gpd_proc_t *pr[NP];
  for (unsigned k = 0; k < NP; k++) {
    pr[k] = calloc(1, sizeof *pr[k]);
    assert_non_null(pr[k]);
    assert_int_equal(gpd_profile_init(&pr[k]->prof, 500 + k), 0);
    pr[k]->profile_id = 500 + k;
    pr[k]->pid = 4000 + (pid_t)k;
    pr[k]->uid = pr[k]->prof.uid = k == 1 ? 1001 : 1000;
    pr[k]->state = GPD_PROC_RUNNING;
    pr[k]->next = d->procs; /* newest first, as the registry */
    d->procs = pr[k];
    d->nprocs++;
  }
  gpd_peer_t peer = {.pid = 1, .uid = 0, .gid = 0, .admin = 1};
  double count[NK] = {0}; /* GKER:COUNT per kernel name, all processes */
  char key[32];
  for (int round = 0; round < 40; round++) {
    for (unsigned k = 0; k < NP; k++) {
      gpd_profile_t *p = &pr[k]->prof;
      unsigned nch = round == 0 ? 300 : mi_rand(4) == 0 ? 0 : 1 + mi_rand(6);
      for (unsigned c = 0; c < nch; c++) {
        /* a frame (maybe new) below a random frame, a kernel below it */
        uint32_t par = mi_rand(p->nnodes);
        while (p->nodes[par].kind == GPD_NODE_KERNEL)
          par = p->nodes[par].parent;
        snprintf(key, sizeof key, "f%u", mi_rand(5));
        uint32_t f = gpd_profile_child(p, par, GPD_NODE_FRAME, key, key, NULL);
        unsigned kn = mi_rand(NK);
        snprintf(key, sizeof key, "kernel_%u", kn);
        uint32_t kk = gpd_profile_child(p, f, GPD_NODE_KERNEL, key, key, NULL);
        assert_int_not_equal(kk, GPD_NONE);
        unsigned n = 1 + mi_rand(3);
        assert_int_equal(gpd_profile_metric_add(p, kk, GPD_M_GKER, (double)mi_rand(100000) / 7.0), 0);
        assert_int_equal(gpd_profile_metric_add(p, kk, GPD_M_GKER_COUNT, n), 0);
        count[kn] += n;
      }
    }
    Gpuprof__Msg *inc = tq_top(d, &peer, GPD_M_GKER); /* follows the last view */
    Gpuprof__Msg *other = tq_top(d, &peer, GPD_M_GKER_COUNT);
    Gpuprof__Msg *full = tq_top(d, &peer, GPD_M_GKER); /* another metric since: in full */
    tq_same(inc->top, full->top);
    assert_int_equal(inc->top->n_entries, NK);
    for (size_t i = 0; i < inc->top->n_entries; i++) {
      const Gpuprof__TopEntry *e = inc->top->entries[i];
      unsigned kn = (unsigned)atoi(e->label + strlen("kernel_"));
      double c = 0;
      for (size_t q = 0; q < e->n_metrics; q++)
        if (e->metrics[q]->id == GPD_M_GKER_COUNT)
          c = e->metrics[q]->value;
      assert_true(kn < NK && c == count[kn]);
      assert_true(e->n_path >= 1);
    }
    gpuprof__msg__free_unpacked(inc, NULL);
    gpuprof__msg__free_unpacked(other, NULL);
    gpuprof__msg__free_unpacked(full, NULL);
  }
  for (unsigned k = 0; k < NP; k++) {
    gpd_profile_free(&pr[k]->prof);
    free(pr[k]);
  }
  free(d);
}

static void test_map(void **state) {
  (void)state;
  /* every key hashed, and runs of 16 (correlation maps), with scattered,
   * sequential and 16-aligned keys (the run layout's worst case) */
  static const unsigned shifts[] = {0, 4};
  for (unsigned si = 0; si < 2; si++) {
    for (uint64_t pat = 0; pat < 3; pat++) {
      gpd_map_t m;
      memset(&m, 0, sizeof m);
      m.run_shift = shifts[si];
#define KEY(i) (pat == 0 ? (i) * 7919 : pat == 1 ? (i) : (i) << 4)
      for (uint64_t i = 1; i <= 10000; i++)
        assert_int_equal(gpd_map_put(&m, KEY(i), i), 0);
      for (uint64_t i = 1; i <= 10000; i += 2)
        assert_int_equal(gpd_map_del(&m, KEY(i)), 1);
      for (uint64_t i = 1; i <= 10000; i++) {
        uint64_t v = 0;
        int has = gpd_map_get(&m, KEY(i), &v);
        assert_int_equal(has, (int)(i % 2 == 0));
        if (has)
          assert_int_equal(v, i);
      }
      assert_int_equal(m.n, 5000);
      /* take = get + del; del_ref deletes where ref points; upsert */
      uint64_t v = 0;
      assert_int_equal(gpd_map_take(&m, KEY(2), &v), 1);
      assert_int_equal(v, 2);
      assert_int_equal(gpd_map_take(&m, KEY(2), &v), 0);
      uint64_t *r = gpd_map_ref(&m, KEY(4));
      assert_non_null(r);
      gpd_map_del_ref(&m, r);
      assert_null(gpd_map_ref(&m, KEY(4)));
      int created = -1;
      r = gpd_map_upsert(&m, KEY(6), &created);
      assert_int_equal(created, 0);
      assert_int_equal(*r, 6);
      r = gpd_map_upsert(&m, KEY(3), &created);
      assert_int_equal(created, 1);
      assert_int_equal(*r, 0);
      *r = 33;
      assert_int_equal(m.n, 4999);
      for (uint64_t i = 6; i <= 10000; i += 2) {
        assert_true(gpd_map_get(&m, KEY(i), &v));
        assert_int_equal(v, i);
      }
      assert_true(gpd_map_get(&m, KEY(3), &v) && v == 33);
      size_t cap = m.cap;
      gpd_map_reset(&m, 4000); /* suits: table kept, emptied */
      assert_int_equal(m.cap, cap);
      assert_int_equal(m.n, 0);
      assert_false(gpd_map_get(&m, KEY(6), NULL));
      assert_int_equal(gpd_map_put(&m, KEY(6), 1), 0);
      gpd_map_reset(&m, 10); /* far too large: freed */
      assert_int_equal(m.cap, 0);
      assert_int_equal(m.run_shift, shifts[si]);
#undef KEY
      assert_int_equal(gpd_map_put(&m, 0, 1), -EINVAL);
      gpd_map_free(&m);
    }
  }
}

/* Symbolize a call site inside this test binary (built with -g). */
static __attribute__((noinline)) int sym_target(int x) { return x * 3 + 1; }

static void test_symbols(void **state) {
  (void)state;
  Dl_info di;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = 0;
  assert_true(dladdr((void *)sym_target, &di) != 0);
  uint64_t off = (uint64_t)((uintptr_t)sym_target - (uintptr_t)di.dli_fbase) + 4;
  const gpd_sframe_t *fr = NULL;
  unsigned nf = 0;
  assert_int_equal(gpd_symbols_resolve(exe, getuid(), getgid(), off, &fr, &nf), 0);
  assert_true(nf >= 1);
  assert_string_equal(fr[nf - 1].function, "sym_target");
  assert_non_null(strstr(fr[nf - 1].file, "test-daemon-profile.c"));
  assert_true(fr[nf - 1].line > 0);
  /* cached: same pointer the second time */
  const gpd_sframe_t *fr2 = NULL;
  unsigned nf2 = 0;
  assert_int_equal(gpd_symbols_resolve(exe, getuid(), getgid(), off, &fr2, &nf2), 0);
  assert_ptr_equal(fr, fr2);
  /* a missing file: no frames, no crash */
  assert_int_equal(gpd_symbols_resolve("/nonexistent/x", getuid(), getgid(), 16, &fr, &nf), 0);
  assert_int_equal(nf, 0);
  gpd_symbols_shutdown();
  assert_int_equal(sym_target(1), 4);
}

/* ------------------------------------- exactly once across a restart */

static void ring_push(gpd_producer_t *pr, const void *rec, size_t len) {
  assert_int_equal(gpd_producer_push(pr, rec, len), 0);
}

static void ring_invoke(gpd_producer_t *pr, uint64_t corr, uint32_t node) {
  gpd_rec_invoke_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_INVOKE;
  r.h.version = GPD_REC_VERSION;
  r.api = GPD_API_OPENCL;
  r.op = GPD_OP_KERNEL;
  r.node = node;
  r.corr = corr;
  ring_push(pr, &r, sizeof r);
}

static void ring_act(gpd_producer_t *pr, uint64_t corr) {
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.h.type = GPD_REC_ACTIVITY;
  a.h.version = GPD_REC_VERSION;
  a.api = GPD_API_OPENCL;
  a.op = GPD_OP_KERNEL;
  a.corr = corr;
  a.start = 1000;
  a.end = 1010;
  a.name = 1;
  ring_push(pr, &a, sizeof a);
}

static int64_t db_q1(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  int64_t v = -1;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
  if (sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

static gpd_proc_t *restart_proc(int fd) {
  gpd_proc_t *p = calloc(1, sizeof *p);
  assert_non_null(p);
  p->profile_id = 1;
  p->pid = getpid();
  p->uid = getuid();
  p->state = GPD_PROC_RUNNING;
  assert_int_equal(gpd_region_map(&p->region, fd), 0);
  p->has_region = 1;
  assert_int_equal(gpd_registry_cursors(p), 0);
  return p;
}

/* A daemon with a store in dir (mkdtemp'd) and one process (profile id
 * 1, two rings of 64 slots, producers *p0 and *p1), which has pushed a
 * kernel name and node 1 (0x1234) on ring 0. */
static gpd_proc_t *commit_setup(gpd_daemon_t *d, const char *dir, gpd_producer_t *p0, gpd_producer_t *p1) {
  char path[64];
  snprintf(path, sizeof path, "%s/t.gpdb", dir);
  memset(d, 0, sizeof *d);
  pthread_mutex_init(&d->lock, NULL);
  pthread_cond_init(&d->writer_cv, NULL);
  assert_int_equal(gpd_dstore_open(&d->store, path), 0);
  gpd_proc_t *p = calloc(1, sizeof *p);
  assert_non_null(p);
  p->profile_id = 1;
  p->pid = getpid();
  p->uid = getuid();
  p->state = GPD_PROC_RUNNING;
  assert_int_equal(gpd_region_create(&p->region, 2, 64, p->pid, 1), 0);
  p->has_region = 1;
  assert_int_equal(gpd_registry_cursors(p), 0);
  assert_int_equal(gpd_profile_init(&p->prof, 1), 0);
  d->procs = p;
  d->nprocs = 1;
  assert_int_equal(gpd_producer_claim(&p->region, p0, 1), 0);
  assert_int_equal(gpd_producer_claim(&p->region, p1, 2), 1);
  uint8_t sb[128];
  memset(sb, 0, sizeof sb);
  gpd_rec_string_t *str = (gpd_rec_string_t *)sb;
  str->h.type = GPD_REC_STRING;
  str->h.version = GPD_REC_VERSION;
  str->h.len = 4;
  str->id = 1;
  str->kind = GPD_STR_KERNEL;
  memcpy(str->text, "kern", 4);
  ring_push(p0, sb, sizeof *str + 4);
  gpd_rec_node_t n;
  memset(&n, 0, sizeof n);
  n.h.type = GPD_REC_NODE;
  n.h.version = GPD_REC_VERSION;
  n.id = 1;
  n.offset = 0x1234;
  ring_push(p0, &n, sizeof n);
  return p;
}

static void test_commit_cursor(void **state) {
  (void)state;
  char dir[] = "/tmp/gpd-commit-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/t.gpdb", dir);
  gpd_daemon_t d;
  gpd_producer_t p0, p1;
  /* daemon 1: a process with two rings of 64 slots */
  gpd_proc_t *p = commit_setup(&d, dir, &p0, &p1);
  gpd_region_t *r = &p->region;
  for (uint64_t c = 1; c <= 5; c++)
    ring_invoke(&p0, c, 1);
  for (uint64_t c = 1; c <= 3; c++)
    ring_act(&p1, c);
  ring_act(&p1, 100); /* never invoked: pending until the end */

  assert_int_equal(gpd_monitor_drain(&d, p, 4096), 11);
  /* consumed, not released */
  assert_int_equal(atomic_load(&r->ctl[0].tail), 0);
  assert_int_equal(atomic_load(&r->ctl[1].tail), 0);
  assert_int_equal(p->cursor[0], atomic_load(&r->ctl[0].head));
  const uint64_t AS = GPD_REC_NSLOTS(gpd_rec_activity_t); /* slots per ACTIVITY */
  assert_int_equal(p->cursor[1], 4 * AS);
  assert_int_equal(gpd_checkpoint_flush(&d), 0);
  /* committed, then released */
  assert_int_equal(atomic_load(&r->ctl[0].tail), p->cursor[0]);
  assert_int_equal(atomic_load(&r->ctl[1].tail), 4 * AS);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM pending WHERE profile_id=1"), 3);
  assert_int_equal(db_q1(path, "SELECT pos FROM ring_cursor WHERE profile_id=1 AND ring=1"), 4 * AS);
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT SUM(value) FROM metric WHERE profile_id=1 AND metric_id=%d",
           (int)GPD_M_GKER_COUNT);
  assert_int_equal(db_q1(path, sql), 3);

  /* activity 4 consumed and committed, but the daemon "dies" between its
   * COMMIT and the release: the tail stays behind the stored position */
  ring_act(&p1, 4);
  assert_int_equal(gpd_monitor_drain(&d, p, 4096), 1);
  assert_int_equal(gpd_checkpoint_flush(&d), 0);
  assert_int_equal(atomic_load(&r->ctl[1].tail), 5 * AS);
  atomic_store(&r->ctl[1].tail, 4 * AS);
  /* activity 5 consumed, never flushed; invoke 6 never consumed */
  ring_act(&p1, 5);
  assert_int_equal(gpd_monitor_drain(&d, p, 4096), 1);
  ring_invoke(&p0, 6, 1);
  double before = gpd_profile_incl(&p->prof, GPD_CTX_ROOT, GPD_M_GKER_COUNT);
  assert_true(before == 5.0);

  /* daemon 2 adopts the handed-back region and reloads the profile */
  gpd_proc_t *q = restart_proc(dup(r->fd));
  assert_int_equal(q->cursor[1], 4 * AS);
  assert_int_equal(gpd_profile_init(&q->prof, 1), 0);
  assert_int_equal(gpd_handback_load(d.store, q, getuid()), 1);
  assert_int_equal(q->cursor[1], 5 * AS); /* skipped what was stored */
  assert_int_equal(atomic_load(&q->region.ctl[1].tail), 5 * AS);
  assert_true(gpd_profile_incl(&q->prof, GPD_CTX_ROOT, GPD_M_GKER_COUNT) == 4.0);
  d.procs = q;
  assert_int_equal(gpd_monitor_drain(&d, q, 4096), 2); /* act 5 again, invoke 6 */
  ring_act(&p1, 6);
  assert_int_equal(gpd_monitor_drain(&d, q, 4096), 1);
  assert_int_equal(q->prof.records, 2 + 6 + 7);
  /* pending invoke 5 (stored) met activity 5 (re-read), 6 live */
  assert_true(gpd_profile_incl(&q->prof, GPD_CTX_ROOT, GPD_M_GKER_COUNT) == 6.0);
  assert_int_equal(q->prof.unknown, 0);

  /* back-pressure: more than half a ring consumed and not released */
  d.flush_now = 0;
  for (uint64_t c = 1000; c < 1040; c++)
    ring_invoke(&p0, c, 1);
  assert_int_equal(gpd_monitor_drain(&d, q, 4096), 40);
  assert_int_equal(d.flush_now, 1);
  assert_true(d.early_flushes >= 1);

  /* the end: the never-invoked activity 100 goes to <unknown context> */
  q->state = GPD_PROC_EXITED;
  gpd_profile_finish(&q->prof);
  assert_int_equal(q->prof.unknown, 1);
  assert_true(gpd_profile_incl(&q->prof, GPD_CTX_ROOT, GPD_M_GKER_COUNT) == 7.0);
  assert_int_equal(gpd_checkpoint_flush(&d), 0);
  assert_int_equal(q->has_region, 0); /* released and unmapped after the final commit */
  assert_int_equal(atomic_load(&r->ctl[0].tail), atomic_load(&r->ctl[0].head));
  assert_int_equal(db_q1(path, "SELECT count(*) FROM pending"), 0);
  /* the final positions stay stored (a hand-back after a crash between
   * this COMMIT and the release skips them) */
  assert_int_equal(db_q1(path, "SELECT pos FROM ring_cursor WHERE profile_id=1 AND ring=0"),
                   (long long)atomic_load(&r->ctl[0].head));
  assert_int_equal(db_q1(path, "SELECT records FROM profile WHERE id=1"), 2 + 6 + 7 + 40);

  /* a daemon killed between that final COMMIT and the release: the
   * process hands its region back to the next one, which skips what the
   * exited profile stored (ring_cursor is kept) -- nothing counted twice */
  uint64_t h1 = atomic_load(&r->ctl[1].head);
  atomic_store(&r->ctl[1].tail, h1 - 1);
  gpd_proc_t *q2 = restart_proc(dup(r->fd));
  assert_int_equal(gpd_profile_init(&q2->prof, 1), 0);
  assert_int_equal(gpd_handback_load(d.store, q2, getuid()), 1);
  assert_int_equal(q2->cursor[1], h1);
  assert_int_equal(atomic_load(&r->ctl[1].tail), h1);
  assert_int_equal(gpd_monitor_drain(NULL, q2, 4096), 0);
  assert_true(gpd_profile_incl(&q2->prof, GPD_CTX_ROOT, GPD_M_GKER_COUNT) == 7.0);
  /* another process (pid) handing back this region is refused the profile */
  gpd_proc_t *q3 = restart_proc(dup(r->fd));
  q3->pid = getpid() + 1;
  assert_int_equal(gpd_profile_init(&q3->prof, 1), 0);
  assert_int_equal(gpd_handback_load(d.store, q3, getuid()), -ESRCH);
  gpd_registry_free_proc(q3);
  gpd_registry_free_proc(q2);

  gpd_registry_free_proc(q);
  gpd_registry_free_proc(p);
  gpd_dstore_close(d.store);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* A daemon with a fresh store at dir/t.gpdb (dir: a mkdtemp template;
 * path gets the file's name) and no process. */
static void turns_open(gpd_daemon_t *d, char *dir, char *path, size_t n) {
  assert_non_null(mkdtemp(dir));
  snprintf(path, n, "%s/t.gpdb", dir);
  memset(d, 0, sizeof *d);
  pthread_mutex_init(&d->lock, NULL);
  pthread_cond_init(&d->writer_cv, NULL);
  assert_int_equal(gpd_dstore_open(&d->store, path), 0);
}

/* An ended process of uid in d's list, its profile finished. */
static gpd_proc_t *turns_ended(gpd_daemon_t *d, uint64_t id, int64_t uid) {
  gpd_proc_t *p = calloc(1, sizeof *p);
  assert_non_null(p);
  p->profile_id = id;
  p->pid = getpid();
  p->uid = uid;
  assert_int_equal(gpd_profile_init(&p->prof, p->profile_id), 0);
  p->prof.uid = p->uid;
  p->state = GPD_PROC_EXITED;
  p->meta_dirty = 1;
  p->next = d->procs;
  d->procs = p;
  d->nprocs++;
  return p;
}

/* Free d's processes and store, remove dir. */
static void turns_close(gpd_daemon_t *d, const char *dir) {
  while (d->procs) {
    gpd_proc_t *p = d->procs;
    d->procs = p->next;
    gpd_registry_free_proc(p);
  }
  gpd_dstore_close(d->store);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* Per-uid turns of the writer: 70 ended processes of uid 5000 and one of
 * uid 5001.  The first flush writes 64 of uid 5000's
 * (GPD_CHECKPOINT_PROCS_PER_UID) and uid 5001's, unmaps their regions and
 * says that more are left; the second writes the other 6 and says none
 * are. */
static void test_flush_turns(void **state) {
  (void)state;
  char dir[] = "/tmp/gpd-turns-XXXXXX", path[64];
  gpd_daemon_t d;
  turns_open(&d, dir, path, sizeof path);
  for (uint64_t i = 0; i <= 70; i++) {
    gpd_proc_t *p = turns_ended(&d, 100 + i, i == 70 ? 5001 : 5000);
    assert_int_equal(gpd_region_create(&p->region, 1, 64, p->pid, p->profile_id), 0);
    p->has_region = 1;
    assert_int_equal(gpd_registry_cursors(p), 0);
    gpd_profile_finish(&p->prof);
  }
  unsigned mapped = 0;
  assert_int_equal(gpd_checkpoint_flush(&d), 0);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM profile WHERE uid=5000"), GPD_CHECKPOINT_PROCS_PER_UID);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM profile WHERE uid=5001"), 1);
  assert_int_equal(d.store->flush_more, 1);
  for (gpd_proc_t *p = d.procs; p; p = p->next)
    mapped += (unsigned)p->has_region;
  assert_int_equal(mapped, 70 - GPD_CHECKPOINT_PROCS_PER_UID);
  assert_int_equal(gpd_checkpoint_flush(&d), 0);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM profile WHERE uid=5000"), 70);
  assert_int_equal(d.store->flush_more, 0);
  mapped = 0;
  for (gpd_proc_t *p = d.procs; p; p = p->next)
    mapped += (unsigned)p->has_region + (unsigned)p->snap_pinned;
  assert_int_equal(mapped, 0);
  turns_close(&d, dir);
}

/* A flush writes at most GPD_CHECKPOINT_ROWS_PER_UID rows of one uid past
 * its first process (checkpoint.c, take_turns): three ended processes of
 * uid 5000 with 40 000 new contexts each take three flushes, while the one
 * process of uid 5001 is stored by the first. */
static void test_flush_rows(void **state) {
  (void)state;
  char dir[] = "/tmp/gpd-rows-XXXXXX", path[64];
  gpd_daemon_t d;
  turns_open(&d, dir, path, sizeof path);
  for (uint64_t i = 0; i <= 3; i++) {
    gpd_proc_t *p = turns_ended(&d, 200 + i, i == 3 ? 5001 : 5000);
    for (unsigned k = 0; i < 3 && k < 40000; k++) {
      char key[32];
      snprintf(key, sizeof key, "p%u-site%u", (unsigned)i, k);
      assert_int_not_equal(gpd_profile_child(&p->prof, 0, GPD_NODE_PLACEHOLDER, key, key, NULL), GPD_NONE);
    }
    gpd_profile_finish(&p->prof);
  }
  const char *q = "SELECT count(*) FROM profile WHERE uid=5000";
  assert_int_equal(gpd_checkpoint_flush(&d), 0);
  assert_int_equal(db_q1(path, q), 1);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM profile WHERE uid=5001"), 1);
  assert_int_equal(d.store->flush_more, 1);
  assert_int_equal(gpd_checkpoint_flush(&d), 0);
  assert_int_equal(db_q1(path, q), 2);
  assert_int_equal(gpd_checkpoint_flush(&d), 0);
  assert_int_equal(db_q1(path, q), 3);
  assert_int_equal(d.store->flush_more, 0);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM context WHERE uid=5000"), 3 * 40000 + 1);
  turns_close(&d, dir);
}

/* A monitor pass shares itself by uid (monitor.c, fair_batch): 100 busy
 * processes of one uid get 65536 / 100 = 655 records each per ring, the one
 * process of another uid its full batch of 4096; an ENDING process of the
 * busy uid is finished only once drained (or after 64 passes). */
static void test_monitor_fair(void **state) {
  (void)state;
  gpd_daemon_t d;
  memset(&d, 0, sizeof d);
  pthread_mutex_init(&d.lock, NULL);
  pthread_cond_init(&d.writer_cv, NULL);
  gpd_uid_held_t many = {.uid = 5000, .n = 100}, one = {.uid = 5001, .n = 1};
  gpd_proc_t *v = NULL;
  for (uint64_t i = 0; i <= 100; i++) {
    gpd_proc_t *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->profile_id = 100 + i;
    p->pid = getpid();
    p->uid = i == 100 ? 5001 : 5000;
    p->held = i == 100 ? &one : &many;
    p->state = GPD_PROC_RUNNING;
    assert_int_equal(gpd_region_create(&p->region, 1, 16384, p->pid, p->profile_id), 0);
    p->has_region = 1;
    assert_int_equal(gpd_registry_cursors(p), 0);
    assert_int_equal(gpd_profile_init(&p->prof, p->profile_id), 0);
    gpd_producer_t pr;
    assert_int_equal(gpd_producer_claim(&p->region, &pr, 1), 0);
    for (uint64_t c = 1; c <= 5000; c++)
      ring_act(&pr, c); /* activities without invocations: <unknown context> */
    p->next = d.procs;
    d.procs = p;
    d.nprocs++;
    if (i == 100)
      v = p;
  }
  assert_int_equal(gpd_monitor_pass(&d), 99 * 655 + 655 + 4096);
  for (gpd_proc_t *p = d.procs; p; p = p->next)
    assert_int_equal(p->prof.records, p == v ? 4096 : 655);
  /* an ended process of the busy uid: 655 a pass, finished when a pass
   * finds less than that left (5000 = 7 x 655 + 415) */
  gpd_proc_t *e = d.procs->next == v ? d.procs->next->next : d.procs->next;
  e->state = GPD_PROC_ENDING;
  for (int k = 0; k < 6; k++) {
    (void)gpd_monitor_pass(&d);
    assert_int_equal(e->state, GPD_PROC_ENDING);
  }
  assert_int_equal(e->prof.records, 7 * 655);
  (void)gpd_monitor_pass(&d);
  assert_int_equal(e->state, GPD_PROC_EXITED);
  assert_int_equal(e->prof.records, 5000);
  while (d.procs) {
    gpd_proc_t *p = d.procs;
    d.procs = p->next;
    p->held = NULL; /* the cells are this test's */
    gpd_registry_free_proc(p);
  }
}

/* Every ring of p released up to its head (the producer has all its room). */
static void assert_released(gpd_proc_t *p) {
  for (uint32_t i = 0; i < 2; i++)
    assert_int_equal(atomic_load(&p->region.ctl[i].tail), atomic_load(&p->region.ctl[i].head));
}

/* A process with a journal in a new folder dir (a mkdtemp template) and
 * 5 kernel pairs consumed (12 records), its rings released. */
static gpd_proc_t *hold_setup(gpd_daemon_t *d, char *dir, gpd_producer_t *p0, gpd_producer_t *p1) {
  assert_non_null(mkdtemp(dir));
  gpd_proc_t *p = commit_setup(d, dir, p0, p1);
  assert_int_equal(gpd_journal_open(d, dir, GPD_JOURNAL_UID_MAX), 0);
  assert_int_equal(gpd_journal_attach(d, p), 0);
  for (uint64_t c = 1; c <= 5; c++) {
    ring_invoke(p0, c, 1);
    ring_act(p1, c);
  }
  assert_int_equal(gpd_monitor_drain(d, p, 4096), 12);
  assert_released(p);
  assert_int_equal(p->prof.records, 12);
  return p;
}

static void hold_teardown(gpd_daemon_t *d, gpd_proc_t *p, const char *dir) {
  gpd_registry_free_proc(p);
  gpd_journal_close(d);
  gpd_dstore_close(d->store);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* A frozen process's rings (journal-hold.c): while the writer copies its
 * profile they are journaled unread and released, a snapshot's cut does
 * not cover the held segments, and after the copy every held record is
 * applied once, in ring order, across a segment boundary and the rings'
 * wrap. */
static void test_frozen_hold(void **state) {
  (void)state;
  char dir[] = "/tmp/gpd-hold-XXXXXX";
  gpd_daemon_t d;
  gpd_producer_t p0, p1;
  gpd_proc_t *p = hold_setup(&d, dir, &p0, &p1);

  /* the writer's snapshot cuts the journal and freezes the process */
  gpd_jcut_t cut0;
  gpd_journal_cut(p, &cut0);
  assert_true(cut0.any);
  p->snap_frozen = 1;

  /* four rounds of 40 invocations (ring 0: 160 slots, 2.5 times its size)
   * and 10 activities (ring 1: 120 slots): journaled, released, unread */
  uint64_t corr = 5;
  for (int round = 0; round < 4; round++) {
    for (uint64_t k = 1; k <= 40; k++)
      ring_invoke(&p0, corr + k, 1);
    for (uint64_t k = 1; k <= 10; k++)
      ring_act(&p1, corr + k);
    corr += 40;
    assert_int_equal(gpd_monitor_drain(&d, p, 4096), 40 + 30); /* slots */
    assert_released(p);
    assert_int_equal(p->prof.records, 12);
    assert_true(p->jr.hold_on);
    if (round == 1) {
      /* a cut during the hold covers only the segments before it */
      gpd_jcut_t cut1;
      gpd_journal_cut(p, &cut1);
      assert_true(cut1.seg < p->jr.hold_seg);
      assert_int_equal(cut1.written, p->jr.hold_written);
    }
  }
  assert_int_equal(atomic_load(&p->region.ctl[0].drops) + atomic_load(&p->region.ctl[1].drops), 0);

  /* the copy is complete: the 200 held records are applied, once */
  p->snap_frozen = 0;
  uint64_t applied = 0;
  for (int k = 0; k < 16 && p->jr.hold_on; k++)
    applied += gpd_monitor_drain(&d, p, 4096);
  assert_false(p->jr.hold_on);
  assert_int_equal(applied, 200);
  assert_int_equal(p->prof.records, 212);
  assert_int_equal(p->jr.held, 200);
  for (uint32_t i = 0; i < 2; i++)
    assert_int_equal(p->cursor[i], atomic_load(&p->region.ctl[i].head));
  /* 5 + 4 x 10 kernels matched their invocations */
  assert_true(gpd_profile_incl(&p->prof, GPD_CTX_ROOT, GPD_M_GKER_COUNT) == 45.0);

  /* and the rings are consumed again */
  ring_invoke(&p0, ++corr, 1);
  assert_int_equal(gpd_monitor_drain(&d, p, 4096), 1);
  assert_int_equal(p->prof.records, 213);
  assert_released(p);

  hold_teardown(&d, p, dir);
}

/* A journal entry's header (docs/FORMATS.md, "Ring journal"). */
#define JENT_BYTES 32u

/* 40 invocations (ring 0) and 10 activities (ring 1) from corr + 1 on;
 * *corr moves past them. */
static void hold_round(gpd_producer_t *p0, gpd_producer_t *p1, uint64_t *corr) {
  for (uint64_t k = 1; k <= 40; k++)
    ring_invoke(p0, *corr + k, 1);
  for (uint64_t k = 1; k <= 10; k++)
    ring_act(p1, *corr + k);
  *corr += 40;
}

/* Thawed: the first pass applies the held records and, caught up,
 * consumes what stayed in the rings; everything once, rings released. */
static void thaw_check(gpd_daemon_t *d, gpd_proc_t *p, uint64_t pass, uint64_t records, uint64_t held,
                       double kernels) {
  p->snap_frozen = 0;
  assert_int_equal(gpd_monitor_drain(d, p, 4096), pass);
  assert_false(p->jr.hold_on);
  assert_int_equal(p->prof.records, records);
  assert_int_equal(p->jr.held, held);
  for (uint32_t i = 0; i < 2; i++)
    assert_int_equal(p->cursor[i], atomic_load(&p->region.ctl[i].head));
  assert_released(p);
  assert_true(gpd_profile_incl(&p->prof, GPD_CTX_ROOT, GPD_M_GKER_COUNT) == kernels);
  assert_int_equal(atomic_load(&p->region.ctl[0].drops) + atomic_load(&p->region.ctl[1].drops), 0);
}

/* The per-process hold bounds (journal-hold.c), made small with
 * gpd_journal_hold_bounds.  Bytes: the bound is exactly one round's two
 * entries; that round is journaled and released, the next one's spans
 * are past it: they stay in the rings (tails unchanged, nothing written,
 * skipped 2).  Thawed: 50 held records applied and 50 consumed from the
 * rings, 112 records, 25 kernels.  Segments: a bound of 1; a round is
 * held in the hold's first segment, a cut closes it, the next round's
 * spans stay in the rings (skipped 4); thawed: 212 records, 45 kernels,
 * 100 applied from the journal in all. */
static void test_frozen_hold_bounds(void **state) {
  (void)state;
  char dir[] = "/tmp/gpd-holdb-XXXXXX";
  gpd_daemon_t d;
  gpd_producer_t p0, p1;
  gpd_proc_t *p = hold_setup(&d, dir, &p0, &p1);
  const uint64_t INV = GPD_REC_NSLOTS(gpd_rec_invoke_t), AS = GPD_REC_NSLOTS(gpd_rec_activity_t);
  const uint64_t round_bytes = 2 * JENT_BYTES + (40 * INV + 10 * AS) * GPD_SLOT_SIZE;
  uint64_t corr = 5;
  gpd_jcut_t cut;

  /* bytes */
  gpd_journal_hold_bounds(&d, round_bytes, 256);
  gpd_journal_cut(p, &cut);
  p->snap_frozen = 1;
  hold_round(&p0, &p1, &corr);
  assert_int_equal(gpd_monitor_drain(&d, p, 4096), 40 * INV + 10 * AS);
  assert_released(p);
  assert_int_equal(p->jr.written - p->jr.hold_written, round_bytes);
  assert_int_equal(p->jr.skipped, 0);
  uint64_t written = p->jr.written, tail0 = atomic_load(&p->region.ctl[0].tail),
           tail1 = atomic_load(&p->region.ctl[1].tail);
  hold_round(&p0, &p1, &corr);
  assert_int_equal(gpd_monitor_drain(&d, p, 4096), 0);
  assert_int_equal(p->jr.skipped, 2);
  assert_int_equal(p->jr.written, written);
  assert_int_equal(atomic_load(&p->region.ctl[0].tail), tail0);
  assert_int_equal(atomic_load(&p->region.ctl[1].tail), tail1);
  assert_int_equal(atomic_load(&p->region.ctl[0].head) - tail0, 40 * INV);
  assert_int_equal(atomic_load(&p->region.ctl[1].head) - tail1, 10 * AS);
  assert_int_equal(p->prof.records, 12);
  thaw_check(&d, p, 100, 112, 50, 25.0);

  /* segments */
  gpd_journal_hold_bounds(&d, GPD_JOURNAL_HOLD_MAX, 1);
  gpd_journal_cut(p, &cut);
  p->snap_frozen = 1;
  hold_round(&p0, &p1, &corr);
  assert_int_equal(gpd_monitor_drain(&d, p, 4096), 40 * INV + 10 * AS);
  assert_released(p);
  uint32_t hold_seg = p->jr.hold_seg;
  gpd_journal_cut(p, &cut); /* the writer's next snapshot, still copying */
  assert_int_equal(p->jr.seg, hold_seg + 1);
  written = p->jr.written;
  hold_round(&p0, &p1, &corr);
  assert_int_equal(gpd_monitor_drain(&d, p, 4096), 0);
  assert_int_equal(p->jr.skipped, 4);
  assert_int_equal(p->jr.written, written);
  assert_int_equal(atomic_load(&p->region.ctl[0].head) - atomic_load(&p->region.ctl[0].tail), 40 * INV);
  assert_int_equal(p->prof.records, 112);
  thaw_check(&d, p, 100, 212, 100, 45.0);

  hold_teardown(&d, p, dir);
}

/* The pending table as the writer keeps it from the deltas: row id ->
 * record bytes. */
typedef struct trow_s {
  uint64_t seq;
  uint32_t len;
  uint8_t b[GPD_REC_FIXED_MAX];
} trow_t;
static trow_t trows[512];
static unsigned ntrows;

static int trow_find(uint64_t seq) {
  for (unsigned i = 0; i < ntrows; i++)
    if (trows[i].seq == seq)
      return (int)i;
  return -1;
}

/* Apply one delta to the table; returns rows touched (adds + deletes). */
static unsigned tab_apply(gpd_profile_t *p, int *full) {
  gpd_prec_t *add;
  uint64_t *del;
  uint32_t nadd, ndel;
  assert_int_equal(gpd_profile_pending_delta(p, &add, &nadd, &del, &ndel, full), 0);
  if (*full)
    ntrows = 0;
  for (uint32_t i = 0; i < ndel; i++) {
    int k = trow_find(del[i]);
    assert_true(k >= 0); /* only stored rows are deleted */
    trows[k] = trows[--ntrows];
  }
  for (uint32_t i = 0; i < nadd; i++) {
    int k = trow_find(add[i].seq);
    if (k < 0) {
      assert_true(ntrows < 512);
      k = (int)ntrows++;
    }
    trows[k].seq = add[i].seq;
    trows[k].len = add[i].len;
    memcpy(trows[k].b, add[i].b, add[i].len);
  }
  free(add);
  free(del);
  return nadd + ndel;
}

/* The table equals a full rewrite of p's unmatched state (as sets). */
static void tab_check(gpd_profile_t *p) {
  gpd_prec_t *add;
  uint64_t *del;
  uint32_t nadd, ndel;
  int full;
  p->pend_full = 1;
  assert_int_equal(gpd_profile_pending_delta(p, &add, &nadd, &del, &ndel, &full), 0);
  assert_true(full);
  assert_int_equal(nadd, ntrows);
  for (uint32_t i = 0; i < nadd; i++) {
    int k = trow_find(add[i].seq);
    assert_true(k >= 0);
    assert_int_equal(trows[k].len, add[i].len);
    assert_memory_equal(trows[k].b, add[i].b, add[i].len);
  }
  free(add);
  free(del);
}

/* The writer's pending rows are a delta: a flush writes the rows that
 * changed (matched, placed, new), and replaying the deltas gives exactly
 * what rewriting every row gives; the row ids keep the re-feed order
 * NODE < INVOKE < ACTIVITY. */
static void test_pending_delta(void **state) {
  (void)state;
  gpd_profile_t p;
  int full;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  feed_module(&p, 1, APP, NULL);
  feed_node(&p, 1, 0, 1, 0x10);
  for (uint64_t c = 1; c <= 100; c++)
    feed_invoke(&p, GPD_CORR(GPD_API_OPENCL, c), 1, GPD_OP_KERNEL, 0);
  for (uint64_t c = 1000; c < 1010; c++)
    feed_act(&p, GPD_CORR(GPD_API_OPENCL, c), GPD_OP_KERNEL, 0, 10, 0, 0);
  feed_node(&p, 50, 49, 1, 0x50); /* parent not announced yet */
  gpd_profile_retry(&p);
  ntrows = 0;
  assert_int_equal(tab_apply(&p, &full), 111); /* first flush: every row */
  assert_true(full);
  for (unsigned i = 0; i < ntrows; i++) {
    const gpd_rec_hdr_t *h = (const gpd_rec_hdr_t *)trows[i].b;
    unsigned cls = (unsigned)(trows[i].seq >> 61);
    assert_int_equal(cls, h->type == GPD_REC_NODE ? 0 : h->type == GPD_REC_INVOKE ? 1 : 2);
  }
  tab_check(&p);
  /* nothing changed: nothing written */
  assert_int_equal(tab_apply(&p, &full), 0);
  assert_false(full);
  /* 5 invokes matched, 1 pending activity matched, 1 new pending invoke,
   * the pending node placed */
  for (uint64_t c = 1; c <= 5; c++)
    feed_act(&p, GPD_CORR(GPD_API_OPENCL, c), GPD_OP_KERNEL, 0, 10, 0, 0);
  feed_invoke(&p, GPD_CORR(GPD_API_OPENCL, 1000), 1, GPD_OP_KERNEL, 0);
  feed_invoke(&p, GPD_CORR(GPD_API_OPENCL, 200), 1, GPD_OP_KERNEL, 0);
  feed_node(&p, 49, 1, 1, 0x49);
  gpd_profile_retry(&p);
  assert_int_equal(tab_apply(&p, &full), 8);
  assert_false(full);
  assert_int_equal(ntrows, 111 - 5 - 1 + 1 - 1);
  tab_check(&p);
  /* an invoke that comes and goes between two flushes leaves no row */
  feed_invoke(&p, GPD_CORR(GPD_API_OPENCL, 300), 1, GPD_OP_KERNEL, 0);
  feed_act(&p, GPD_CORR(GPD_API_OPENCL, 300), GPD_OP_KERNEL, 0, 10, 0, 0);
  assert_int_equal(tab_apply(&p, &full), 0);
  /* a failed write: every row again */
  p.pend_full = 1;
  assert_int_equal(tab_apply(&p, &full), ntrows);
  assert_true(full);
  tab_check(&p);
  gpd_profile_free(&p);
}

/* An activity that follows its invocation takes the correlation fifo's
 * newest entry out at once (no map lookup when the fifo reaches it); one
 * from before the last flush leaves the flushed count with it, so the next
 * invocation's row is still written (it would be skipped if the count
 * stayed). */
static void test_pending_fifo_tail(void **state) {
  (void)state;
  gpd_profile_t p;
  int full;
  const uint64_t A = GPD_CORR(GPD_API_OPENCL, 1), B = GPD_CORR(GPD_API_OPENCL, 2),
                 C = GPD_CORR(GPD_API_OPENCL, 3), D = GPD_CORR(GPD_API_OPENCL, 4);
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  feed_module(&p, 1, APP, NULL);
  feed_node(&p, 1, 0, 1, 0x10);
  feed_invoke(&p, A, 1, GPD_OP_KERNEL, 0);
  feed_invoke(&p, B, 1, GPD_OP_KERNEL, 0);
  ntrows = 0;
  assert_int_equal(tab_apply(&p, &full), 2); /* first flush: A, B */
  tab_check(&p);
  feed_act(&p, B, GPD_OP_KERNEL, 0, 10, 0, 0); /* the newest, stored */
  feed_invoke(&p, C, 1, GPD_OP_KERNEL, 0);
  assert_int_equal(tab_apply(&p, &full), 2); /* B deleted, C added */
  assert_false(full);
  assert_int_equal(ntrows, 2);
  tab_check(&p);
  feed_act(&p, A, GPD_OP_KERNEL, 0, 10, 0, 0); /* not the newest */
  feed_act(&p, C, GPD_OP_KERNEL, 0, 10, 0, 0); /* the newest */
  assert_int_equal(tab_apply(&p, &full), 2);
  assert_int_equal(ntrows, 0);
  tab_check(&p);
  feed_invoke(&p, D, 1, GPD_OP_KERNEL, 0); /* A's stale fifo entry goes */
  assert_int_equal(tab_apply(&p, &full), 1);
  assert_int_equal(ntrows, 1);
  tab_check(&p);
  assert_int_equal(p.activities, 3);
  assert_int_equal(p.corr.n, 1);
  gpd_profile_free(&p);
}

/* Activities that wait for their invocations, matched in order (popped off
 * the front of the pending list), out of order (tombstones, compaction),
 * blocked on a node announced later (rescanned only then), with appends
 * after pops: every one is attributed exactly once and the stored pending
 * rows follow (tab_apply / tab_check) through all of it. */
static void test_pending_order(void **state) {
  (void)state;
  gpd_profile_t p;
  int full;
  ids();
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  feed_module(&p, 1, APP, NULL);
  feed_string(&p, 7, KNAME);
  feed_node(&p, 1, 0, 1, 0x100);
  for (uint64_t c = 1; c <= 300; c++)
    feed_act(&p, C(c), GPD_OP_KERNEL, 0, 10, 0, 7);
  for (uint64_t c = 1001; c <= 1020; c++)
    feed_act(&p, C(c), GPD_OP_KERNEL, 0, 10, 0, 7);
  gpd_profile_retry(&p);
  ntrows = 0;
  assert_int_equal(tab_apply(&p, &full), 320);
  assert_int_equal(p.activities, 0);
  /* in order: the front pops */
  for (uint64_t c = 1; c <= 150; c++)
    feed_invoke(&p, C(c), 1, GPD_OP_KERNEL, 0);
  gpd_profile_retry(&p);
  assert_int_equal(p.activities, 150);
  assert_int_equal(p.pact0 + p.ndead, 150); /* popped or tombstones, nothing moved */
  tab_apply(&p, &full);
  assert_int_equal(ntrows, 170);
  tab_check(&p);
  /* reverse order: tombstones in the middle, then a compaction */
  for (uint64_t c = 300; c >= 200; c--)
    feed_invoke(&p, C(c), 1, GPD_OP_KERNEL, 0);
  gpd_profile_retry(&p);
  assert_int_equal(p.activities, 251);
  tab_apply(&p, &full);
  assert_int_equal(ntrows, 69);
  tab_check(&p);
  /* invocations under a node not yet known: blocked, then rescanned */
  for (uint64_t c = 1001; c <= 1020; c++)
    feed_invoke(&p, C(c), 99, GPD_OP_KERNEL, 0);
  gpd_profile_retry(&p);
  assert_int_equal(p.activities, 251);
  assert_true(p.pact_blocked >= 20);
  for (uint64_t c = 2000; c < 2100; c++) /* appended after the pops */
    feed_act(&p, C(c), GPD_OP_KERNEL, 0, 10, 0, 7);
  tab_apply(&p, &full);
  tab_check(&p);
  feed_node(&p, 99, 1, 1, 0x99);
  gpd_profile_retry(&p);
  assert_int_equal(p.activities, 271);
  assert_int_equal(p.pact_blocked, 0);
  for (uint64_t c = 151; c < 200; c++)
    feed_invoke(&p, C(c), 1, GPD_OP_KERNEL, 0);
  for (uint64_t c = 2000; c < 2100; c++)
    feed_invoke(&p, C(c), 1, GPD_OP_KERNEL, 0);
  gpd_profile_retry(&p);
  assert_int_equal(p.activities, 420);
  assert_int_equal(p.npacts, 0); /* all popped */
  assert_int_equal(p.corr.n, 0);
  tab_apply(&p, &full);
  assert_int_equal(ntrows, 0);
  tab_check(&p);
  gpd_profile_finish(&p);
  assert_int_equal(p.unknown, 0);
  assert_true(gpd_profile_incl(&p, GPD_CTX_ROOT, GPD_M_GKER_COUNT) == 420.0);
  assert_true(gpd_profile_incl(&p, GPD_CTX_ROOT, GPD_M_GKER) == 4200.0);
  gpd_profile_free(&p);
}

/* The correlation map is bounded by count and by age (in records): the
 * oldest invocations are evicted and counted, an activity for one goes to
 * <unknown context>; matched invocations leave no trace (the age ring is
 * compacted). */
static void test_corr_bounds(void **state) {
  (void)state;
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 1), 0);
  p.max_corr = 4;
  feed_module(&p, 1, APP, NULL);
  feed_string(&p, 7, KNAME);
  feed_node(&p, 1, 0, 1, 0x100);
  for (uint64_t c = 1; c <= 10; c++)
    feed_invoke(&p, C(c), 1, GPD_OP_KERNEL, 0);
  assert_int_equal(p.corr.n, 4);
  assert_int_equal(p.corr_evicted, 6);
  feed_act(&p, C(10), GPD_OP_KERNEL, 0, 100, 0, 7); /* kept: attributed */
  assert_int_equal(p.activities, 1);
  assert_int_equal(p.corr.n, 3);
  feed_act(&p, C(1), GPD_OP_KERNEL, 0, 100, 0, 7); /* evicted: waits, then <unknown> */
  assert_int_equal(p.npacts, 1);
  gpd_profile_finish(&p);
  assert_int_equal(p.activities, 2);
  assert_int_equal(p.unknown, 1);
  gpd_profile_free(&p);

  /* age: a graph launch (multi) older than 5 records is evicted */
  assert_int_equal(gpd_profile_init(&p, 2), 0);
  p.max_corr_age = 5;
  feed_invoke(&p, C(1), 1, GPD_OP_KERNEL, 1);
  for (uint64_t c = 2; c <= 7; c++)
    feed_invoke(&p, C(c), 1, GPD_OP_KERNEL, 0);
  assert_int_equal(p.corr_evicted, 1);
  assert_int_equal(p.corr.n, 6);
  assert_false(gpd_map_get(&p.corr, C(1), NULL));
  assert_true(gpd_map_get(&p.corr, C(2), NULL));
  gpd_profile_free(&p);

  /* matched pairs: the age ring stays small */
  assert_int_equal(gpd_profile_init(&p, 3), 0);
  feed_module(&p, 1, APP, NULL);
  feed_string(&p, 7, KNAME);
  feed_node(&p, 1, 0, 1, 0x100);
  for (uint64_t c = 1; c <= 1000; c++) {
    feed_invoke(&p, C(c), 1, GPD_OP_KERNEL, 0);
    feed_act(&p, C(c), GPD_OP_KERNEL, 0, 10, 0, 7);
  }
  assert_int_equal(p.activities, 1000);
  assert_int_equal(p.corr.n, 0);
  assert_int_equal(p.corr_evicted, 0);
  assert_true(p.corr_nfifo <= 65);
  assert_true(p.corr_capfifo <= 128);
  gpd_profile_free(&p);
}

static void db_run(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

/* A format-1 database (one global context/frame table) is upgraded: each
 * row is copied to every uid owning a profile, nothing else changes; a
 * newer format is refused; the file is made 0600; ids are never reused. */
static void test_store_format(void **state) {
  (void)state;
  char dir[] = "/tmp/gpd-format-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/old.gpdb", dir);
  db_run(path,
         "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
         "CREATE TABLE profile(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, ppid INTEGER,"
         " uid INTEGER NOT NULL, gid INTEGER NOT NULL, exe TEXT, argv TEXT, hostname TEXT,"
         " job_id TEXT, step_id TEXT, rank INTEGER, local_rank INTEGER, start_ns INTEGER,"
         " end_ns INTEGER, state TEXT NOT NULL, records INTEGER NOT NULL DEFAULT 0,"
         " drops INTEGER NOT NULL DEFAULT 0, error TEXT);"
         "CREATE TABLE context(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"
         " kind INTEGER NOT NULL, module TEXT, build_id TEXT, offset INTEGER, label TEXT,"
         " raw_name TEXT);"
         "CREATE TABLE frame(context_id INTEGER NOT NULL, depth INTEGER NOT NULL,"
         " function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL,"
         " PRIMARY KEY(context_id, depth));"
         "INSERT INTO profile(id,pid,uid,gid,state) VALUES(7,1,1000,1000,'exited'),"
         " (9,2,1001,1001,'running'),(8,3,1000,1000,'exited');"
         "INSERT INTO context VALUES(42,1,1,'/a','ab',16,'fn',NULL),(43,42,1,'/a','ab',32,'g',NULL);"
         "INSERT INTO frame VALUES(42,0,'fn','a.c',3,0);"
         "PRAGMA user_version=1;");
  chmod(path, 0644);
  gpd_dstore_t *st = NULL;
  assert_int_equal(gpd_dstore_open(&st, path), 0);
  assert_int_equal(gpd_dstore_first_profile_id(st), 10);
  gpd_dstore_close(st);
  assert_int_equal(db_q1(path, "PRAGMA user_version"), 2);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM context"), 4);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM context WHERE uid=1001 AND label='g'"), 1);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM frame WHERE uid=1000 AND function='fn'"), 1);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM frame"), 2);
  assert_int_equal(db_q1(path, "SELECT count(*) FROM profile WHERE state='lost'"), 1);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  /* reopened: ids continue above the reserved block, never below */
  assert_int_equal(gpd_dstore_open(&st, path), 0);
  assert_int_equal(gpd_dstore_first_profile_id(st), 10 + 1024);
  gpd_dstore_close(st);
  /* newer than this daemon: refused, untouched */
  db_run(path, "PRAGMA user_version=3;");
  assert_int_equal(gpd_dstore_open(&st, path), GPD_ESTORE);
  assert_int_equal(db_q1(path, "PRAGMA user_version"), 3);
  /* a database path that is a link: refused */
  char link[80];
  snprintf(link, sizeof link, "%s/link.gpdb", dir);
  assert_int_equal(symlink(path, link), 0);
  assert_int_equal(gpd_dstore_open(&st, link), GPD_ESTORE);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_map),
      cmocka_unit_test(test_attribution),
      cmocka_unit_test(test_label),
      cmocka_unit_test(test_multi_and_bounds),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_merge_incremental),
      cmocka_unit_test(test_top_incremental),
      cmocka_unit_test(test_symbols),
      cmocka_unit_test(test_commit_cursor),
      cmocka_unit_test(test_frozen_hold),
      cmocka_unit_test(test_frozen_hold_bounds),
      cmocka_unit_test(test_corr_bounds),
      cmocka_unit_test(test_pending_delta),
      cmocka_unit_test(test_pending_fifo_tail),
      cmocka_unit_test(test_pending_order),
      cmocka_unit_test(test_store_format),
      cmocka_unit_test(test_flush_turns),
      cmocka_unit_test(test_monitor_fair),
      cmocka_unit_test(test_flush_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
