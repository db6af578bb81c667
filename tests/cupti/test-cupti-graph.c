/* test-cupti-graph.c - unit test of shim/cupti/cupti-graph.c's handler
 * (built with GPD_CUPTI_GRAPH_PURE: no libcupti, no shim core): the REAL
 * CUDA 13.0 CUpti_GraphData of GRAPHNODE_CREATED / _CLONED callbacks in,
 * GRAPHNODE records out, every counter exact.  Node handles are fake
 * pointers whose CUPTI id the stand-in derives from the address. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cupti-internal.h"

#define NREC 16
static gpd_rec_graphnode_t recs[NREC];
static unsigned nrec;
static uint32_t cur_ctx;  /* what capture() answers */
static int push_fails;    /* push() fails while set */

static int fake_id(CUgraphNode n, uint64_t *id) {
  uintptr_t v = (uintptr_t)n;
  if (v == 0xbad)
    return -1;
  *id = v == 0xb16 ? GPD_GRAPHNODE_ID_LIMIT : (uint64_t)v / 16; /* 0xb16: an id past the limit */
  return 0;
}
static uint32_t fake_capture(void) { return cur_ctx; }
static int fake_push(const gpd_rec_graphnode_t *r) {
  if (push_fails)
    return -28;
  assert_true(nrec < NREC);
  assert_int_equal(gpd_rec_validate(r, sizeof *r), 0);
  recs[nrec++] = *r;
  return 0;
}
static const gpd_cupti_graph_ops_t OPS = {fake_id, fake_capture, fake_push};

static CUgraphNode H(uintptr_t v) { return (CUgraphNode)v; }

static CUpti_GraphData gd(CUgraphNode node, CUgraphNode orig, CUgraphNodeType t) {
  CUpti_GraphData g;
  memset(&g, 0, sizeof g);
  g.node = node;
  g.originalNode = orig;
  g.nodeType = t;
  return g;
}

static void expect_stats(const uint64_t want[GPD_CUPTI_GRAPH_NSTAT]) {
  uint64_t got[GPD_CUPTI_GRAPH_NSTAT];
  gpd_cupti_graph_stats(got);
  for (unsigned i = 0; i < GPD_CUPTI_GRAPH_NSTAT; i++) {
    if (got[i] != want[i])
      print_error("counter %u: %llu, want %llu\n", i, (unsigned long long)got[i], (unsigned long long)want[i]);
    assert_true(got[i] == want[i]);
  }
}

/* Three nodes captured under two known contexts (a stream capture: two
 * kernels at context 11, a memset at context 12), instantiated (three
 * clones), plus every way a callback yields no record. */
static void test_capture_and_clone(void **st) {
  (void)st;
  const unsigned C = CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, K = CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED;
  CUpti_GraphData g;
  cur_ctx = 11;
  g = gd(H(16 * 1), NULL, CU_GRAPH_NODE_TYPE_KERNEL);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 1);
  g = gd(H(16 * 2), NULL, CU_GRAPH_NODE_TYPE_KERNEL);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 1);
  cur_ctx = 12;
  g = gd(H(16 * 3), NULL, CU_GRAPH_NODE_TYPE_MEMSET);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 1);
  /* an event node: no activity of its own, not reported */
  g = gd(H(16 * 4), NULL, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 0);
  /* instantiation: 101..103 are copies of 1..3 */
  for (uintptr_t i = 1; i <= 3; i++) {
    g = gd(H(16 * (100 + i)), H(16 * i), i == 3 ? CU_GRAPH_NODE_TYPE_MEMSET : CU_GRAPH_NODE_TYPE_KERNEL);
    assert_int_equal(gpd_cupti_graph_handle(&OPS, K, &g), 1);
  }
  /* a node reported created with an original (as instantiation may) is its copy */
  g = gd(H(16 * 104), H(16 * 1), CU_GRAPH_NODE_TYPE_KERNEL);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 1);
  assert_int_equal(nrec, 7);
  nrec = 6;
  assert_true(recs[6].id == 104 && recs[6].orig == 1 && recs[6].node == 0 && recs[6].h.flags == GPD_GRAPHNODE_F_CLONE);
  static const struct {
    uint64_t id, orig;
    uint32_t node;
    uint8_t flags;
  } want[] = {{1, 0, 11, 0}, {2, 0, 11, 0}, {3, 0, 12, 0},
              {101, 1, 0, GPD_GRAPHNODE_F_CLONE}, {102, 2, 0, GPD_GRAPHNODE_F_CLONE}, {103, 3, 0, GPD_GRAPHNODE_F_CLONE}};
  for (unsigned i = 0; i < 6; i++) {
    assert_int_equal(recs[i].h.type, GPD_REC_GRAPHNODE);
    assert_int_equal(recs[i].h.nslots, 1);
    assert_true(recs[i].id == want[i].id);
    assert_true(recs[i].orig == want[i].orig);
    assert_int_equal(recs[i].node, want[i].node);
    assert_int_equal(recs[i].h.flags, want[i].flags);
  }
  uint64_t s1[GPD_CUPTI_GRAPH_NSTAT] = {[GPD_CUPTI_GRAPH_CREATED] = 3, [GPD_CUPTI_GRAPH_CLONED] = 4,
                                        [GPD_CUPTI_GRAPH_OTHER] = 1, [GPD_CUPTI_GRAPH_PUSHED] = 7};
  expect_stats(s1);

  /* no record: another callback id, no data, no context, no id (query
   * fails, id past the limit, a clone without original or of itself),
   * a full ring */
  assert_int_equal(gpd_cupti_graph_handle(&OPS, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &g), 0);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, NULL), 0);
  cur_ctx = 0;
  g = gd(H(16 * 5), NULL, CU_GRAPH_NODE_TYPE_KERNEL);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 0);
  cur_ctx = 13;
  g = gd(H(0xbad), NULL, CU_GRAPH_NODE_TYPE_KERNEL);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 0);
  g = gd(H(0xb16), NULL, CU_GRAPH_NODE_TYPE_KERNEL);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 0);
  g = gd(H(16 * 6), NULL, CU_GRAPH_NODE_TYPE_KERNEL);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, K, &g), 0);
  g = gd(H(16 * 6), H(16 * 6), CU_GRAPH_NODE_TYPE_KERNEL);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, K, &g), 0);
  push_fails = 1;
  g = gd(H(16 * 7), NULL, CU_GRAPH_NODE_TYPE_MEMCPY);
  assert_int_equal(gpd_cupti_graph_handle(&OPS, C, &g), 0);
  push_fails = 0;
  assert_int_equal(nrec, 6);
  uint64_t s2[GPD_CUPTI_GRAPH_NSTAT] = {[GPD_CUPTI_GRAPH_CREATED] = 3 + 2, [GPD_CUPTI_GRAPH_CLONED] = 4 + 2,
                                        [GPD_CUPTI_GRAPH_OTHER] = 1,        [GPD_CUPTI_GRAPH_NOID] = 4,
                                        [GPD_CUPTI_GRAPH_NOCTX] = 1,        [GPD_CUPTI_GRAPH_PUSHED] = 7,
                                        [GPD_CUPTI_GRAPH_PUSHFAIL] = 1};
  expect_stats(s2);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_capture_and_clone)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
