/* test-daemon-encode.c - the Tree reply's direct encoder (query-encode.c)
 * writes exactly the bytes protobuf-c writes: node by node on nodes with
 * every field set, unset, empty or at a varint length boundary, and a whole
 * Msg { tree } with processes and GPU samples, which must also unpack to
 * the same nodes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuprof.pb-c.h"
#include "query-internal.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 2685821657736338717ull;
}

/* Strings of lengths around the varint boundaries (127/128, 16383/16384),
 * NULL and "". */
static char big[20000];
static const char *pick_str(void) {
  static const size_t lens[] = {1, 5, 127, 128, 300, 16383, 16384};
  uint64_t r = next() % 10;
  if (r == 0)
    return NULL;
  if (r == 1)
    return "";
  size_t n = lens[next() % (sizeof lens / sizeof lens[0])];
  return big + sizeof big - 1 - n;
}

static uint64_t pick_u64(void) {
  switch (next() % 5) {
  case 0:
    return 0;
  case 1:
    return next() % 128;
  case 2:
    return 128 + next() % 20000;
  case 3:
    return next() >> (next() % 64);
  default:
    return next(); /* up to 10 varint bytes */
  }
}

static double pick_double(void) {
  switch (next() % 6) {
  case 0:
    return 0.0;
  case 1:
    return -0.0; /* == 0: left out, as protobuf-c does */
  case 2:
    return (double)(next() % 1000000);
  case 3:
    return -1.5e300;
  case 4:
    return 1e-310; /* subnormal */
  default:
    return (double)next() / 3.0;
  }
}

static Gpuprof__Metric **metrics(size_t n) {
  Gpuprof__Metric **a = calloc(n + 1, sizeof *a);
  for (size_t i = 0; i < n; i++) {
    a[i] = malloc(sizeof **a);
    gpuprof__metric__init(a[i]);
    a[i]->id = next() % 3 == 0 ? 0 : (uint32_t)(next() >> (next() % 33 + 31));
    a[i]->value = pick_double();
  }
  return a;
}

static Gpuprof__Node *random_node(void) {
  Gpuprof__Node *o = malloc(sizeof *o);
  gpuprof__node__init(o);
  o->id = pick_u64();
  o->parent = pick_u64();
  o->kind = (Gpuprof__NodeKind)(next() % 4 == 0 ? 0 : next() % 8);
  o->label = (char *)pick_str();
  o->module = (char *)pick_str();
  o->offset = pick_u64();
  o->raw_name = (char *)pick_str();
  o->n_frames = next() % 4;
  o->frames = calloc(o->n_frames + 1, sizeof *o->frames);
  for (size_t i = 0; i < o->n_frames; i++) {
    Gpuprof__Frame *f = malloc(sizeof *f);
    gpuprof__frame__init(f);
    f->function = (char *)pick_str();
    f->file = (char *)pick_str();
    f->line = (uint32_t)(pick_u64() & 0xffffffffu);
    f->inlined = next() % 2;
    o->frames[i] = f;
  }
  o->n_excl = next() % 6;
  o->excl = metrics(o->n_excl);
  o->n_incl = next() % 6;
  o->incl = metrics(o->n_incl);
  /* the packed form (TreeRequest.packed_metrics): ids of 1 to 5 varint
   * bytes, any doubles; either array may be empty */
  for (int w = 0; w < 2; w++) {
    size_t n = next() % 3 == 0 ? 0 : next() % 12;
    uint32_t *ids = calloc(n + 1, sizeof *ids);
    double *vals = calloc(n + 1, sizeof *vals);
    for (size_t i = 0; i < n; i++) {
      ids[i] = next() % 4 == 0 ? 0 : (uint32_t)(next() >> (next() % 33 + 31));
      vals[i] = pick_double();
    }
    if (w == 0) {
      o->excl_ids = ids, o->n_excl_ids = n;
      o->excl_values = vals, o->n_excl_values = n;
    } else {
      o->incl_ids = ids, o->n_incl_ids = n;
      o->incl_values = vals, o->n_incl_values = n;
    }
  }
  return o;
}

static void free_node(Gpuprof__Node *o) {
  for (size_t i = 0; i < o->n_frames; i++)
    free(o->frames[i]);
  for (size_t i = 0; i < o->n_excl; i++)
    free(o->excl[i]);
  for (size_t i = 0; i < o->n_incl; i++)
    free(o->incl[i]);
  free(o->frames);
  free(o->excl);
  free(o->incl);
  free(o->excl_ids);
  free(o->excl_values);
  free(o->incl_ids);
  free(o->incl_values);
  free(o);
}

static void test_nodes(void **state) {
  (void)state;
  for (int k = 0; k < 3000; k++) {
    Gpuprof__Node *o = random_node();
    size_t want = gpuprof__node__get_packed_size(o);
    assert_int_equal(gpd__query_node_size(o), want);
    uint8_t *a = malloc(want + 1), *b = malloc(want + 1);
    assert_int_equal(gpuprof__node__pack(o, a), want);
    assert_ptr_equal(gpd__query_node_put(o, b), b + want);
    assert_memory_equal(a, b, want);
    free(a);
    free(b);
    free_node(o);
  }
  /* an empty node is zero bytes */
  Gpuprof__Node e = GPUPROF__NODE__INIT;
  assert_int_equal(gpd__query_node_size(&e), 0);
}

static void check_msg(size_t nnodes) {
  Gpuprof__TreeReply t = GPUPROF__TREE_REPLY__INIT;
  t.n_nodes = nnodes;
  t.nodes = calloc(nnodes + 1, sizeof *t.nodes);
  for (size_t i = 0; i < nnodes; i++)
    t.nodes[i] = random_node();
  Gpuprof__Process p = GPUPROF__PROCESS__INIT, *pp = &p;
  p.pid = 4242;
  p.exe = "/bin/app";
  t.n_procs = 1;
  t.procs = &pp;
  Gpuprof__StallSamples st = GPUPROF__STALL_SAMPLES__INIT, *stp = &st;
  st.reason = "smsp__pcsamp_warps_issue_stalled_long_scoreboard";
  st.samples = 12.5;
  Gpuprof__KernelSamples ks = GPUPROF__KERNEL_SAMPLES__INIT, *ksp = &ks;
  ks.node = 77;
  ks.n_stalls = 1;
  ks.stalls = &stp;
  t.n_gpu_samples = 1;
  t.gpu_samples = &ksp;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  m.body_case = GPUPROF__MSG__BODY_TREE;
  m.tree = &t;

  size_t want = gpuprof__msg__get_packed_size(&m), body = 0;
  uint32_t *sizes = calloc(nnodes + 1, sizeof *sizes);
  assert_int_equal(gpd__query_tree_msg_size(&m, sizes, &body), want);
  uint8_t *a = malloc(want), *b = malloc(want);
  assert_int_equal(gpuprof__msg__pack(&m, a), want);
  assert_int_equal(gpd__query_tree_msg_pack(&m, sizes, body, b), want);
  assert_memory_equal(a, b, want);
  assert_int_equal(t.n_nodes, nnodes); /* put back after the pack */

  Gpuprof__Msg *r = gpuprof__msg__unpack(NULL, want, b);
  assert_non_null(r);
  assert_int_equal(r->body_case, GPUPROF__MSG__BODY_TREE);
  assert_int_equal(r->tree->n_nodes, nnodes);
  assert_int_equal(r->tree->n_procs, 1);
  assert_int_equal(r->tree->procs[0]->pid, 4242);
  assert_int_equal(r->tree->n_gpu_samples, 1);
  for (size_t i = 0; i < nnodes; i++) {
    assert_true(r->tree->nodes[i]->id == t.nodes[i]->id);
    assert_int_equal(r->tree->nodes[i]->n_excl, t.nodes[i]->n_excl);
    assert_int_equal(r->tree->nodes[i]->n_excl_ids, t.nodes[i]->n_excl_ids);
    assert_int_equal(r->tree->nodes[i]->n_incl_values, t.nodes[i]->n_incl_values);
    if (t.nodes[i]->n_excl_values)
      assert_memory_equal(r->tree->nodes[i]->excl_values, t.nodes[i]->excl_values,
                          t.nodes[i]->n_excl_values * sizeof(double));
  }
  gpuprof__msg__free_unpacked(r, NULL);
  free(a);
  free(b);
  free(sizes);
  for (size_t i = 0; i < nnodes; i++)
    free_node(t.nodes[i]);
  free(t.nodes);
}

static void test_msg(void **state) {
  (void)state;
  check_msg(1);
  check_msg(3);     /* body length < 16 K */
  check_msg(400);   /* 2-3 byte body length */
}

int main(void) {
  memset(big, 'x', sizeof big - 1);
  for (size_t i = 0; i < sizeof big - 1; i += 7)
    big[i] = (char)('a' + i % 26);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nodes),
      cmocka_unit_test(test_msg),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
