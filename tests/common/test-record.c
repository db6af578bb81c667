/* test-record.c - gpd_rec_validate rules, table-driven, and names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gpuprof/error.h"
#include "gpuprof/record.h"

static _Alignas(64) uint8_t buf[GPD_REC_MAX_BYTES];

/* slots of each fixed record (32-byte slots, record format 2) */
#define NS(t) GPD_REC_NSLOTS(gpd_rec_##t##_t)

static void mk_hdr(unsigned type, unsigned nslots, uint32_t len) {
  memset(buf, 0, sizeof buf);
  gpd_rec_hdr_t *h = (gpd_rec_hdr_t *)buf;
  h->type = (uint8_t)type;
  h->version = GPD_REC_VERSION;
  h->nslots = (uint8_t)nslots;
  h->len = len;
}

static gpd_rec_node_t *node(void) {
  mk_hdr(GPD_REC_NODE, NS(node), 0);
  gpd_rec_node_t *n = (gpd_rec_node_t *)buf;
  n->id = 5;
  n->parent = 0;
  return n;
}
static gpd_rec_invoke_t *invoke(void) {
  mk_hdr(GPD_REC_INVOKE, NS(invoke), 0);
  gpd_rec_invoke_t *v = (gpd_rec_invoke_t *)buf;
  v->api = GPD_API_CUDA;
  v->op = GPD_OP_COPY;
  v->node = 3;
  v->corr = GPD_CORR(GPD_API_CUDA, 77);
  return v;
}
static gpd_rec_activity_t *activity(unsigned op, unsigned sub) {
  mk_hdr(GPD_REC_ACTIVITY, NS(activity), 0);
  gpd_rec_activity_t *a = (gpd_rec_activity_t *)buf;
  a->api = GPD_API_OPENCL;
  a->op = (uint8_t)op;
  a->subkind = (uint8_t)sub;
  a->corr = 1;
  a->start = 10;
  a->end = 20;
  return a;
}
static gpd_rec_string_t *string(uint32_t len) {
  mk_hdr(GPD_REC_STRING, gpd_rec_slots_for(sizeof(gpd_rec_string_t), len), len);
  gpd_rec_string_t *s = (gpd_rec_string_t *)buf;
  s->id = 1;
  s->kind = GPD_STR_KERNEL;
  return s;
}
static gpd_rec_module_t *module(uint32_t len) {
  mk_hdr(GPD_REC_MODULE, gpd_rec_slots_for(sizeof(gpd_rec_module_t), len), len);
  gpd_rec_module_t *m = (gpd_rec_module_t *)buf;
  m->id = 2;
  m->build_id_len = 20;
  return m;
}
static gpd_rec_status_t *status(void) {
  mk_hdr(GPD_REC_STATUS, NS(status), 0);
  gpd_rec_status_t *s = (gpd_rec_status_t *)buf;
  s->api = GPD_API_LEVEL0;
  s->state = 1;
  s->code = -5;
  return s;
}

static gpd_rec_tracewin_t *tracewin(void) {
  mk_hdr(GPD_REC_TRACEWIN, NS(tracewin), 0);
  gpd_rec_tracewin_t *w = (gpd_rec_tracewin_t *)buf;
  w->api = GPD_API_CUDA;
  w->duty = 1;
  w->windows = 2;
  w->t0 = 100;
  w->start = 300;
  w->end = 310;
  w->window_ns = 20; /* <= end - t0 = 210 */
  return w;
}

#define V(n) gpd_rec_validate(buf, (size_t)(n)*GPD_SLOT_SIZE)

static void test_valid(void **state) {
  (void)state;
  node();
  assert_int_equal(V(1), 0);
  invoke();
  assert_int_equal(V(1), 0);
  status();
  assert_int_equal(V(1), 0);
  for (unsigned op = 1; op < GPD_OP_MAX; op++) {
    activity(op, 0);
    assert_int_equal(V(3), 0);
  }
  activity(GPD_OP_COPY, GPD_COPY_P2P);
  assert_int_equal(V(3), 0);
  activity(GPD_OP_FREE, GPD_MEM_MST);
  assert_int_equal(V(3), 0);
  activity(GPD_OP_SYNC, GPD_SYNC_CTX);
  assert_int_equal(V(3), 0);
  /* the format: an INVOKE is one 32-byte slot, every fixed record whole slots */
  assert_int_equal(GPD_SLOT_SIZE, 32);
  assert_int_equal(NS(node), 1);
  assert_int_equal(NS(invoke), 1);
  assert_int_equal(NS(status), 1);
  assert_int_equal(NS(activity), 3);
  assert_int_equal(NS(pcsample), 2);
  assert_int_equal(NS(pcstats), 2);
  assert_int_equal(NS(cubin), 2);
  assert_int_equal(NS(cpusample), 2);
  assert_int_equal(NS(tracewin), 2);
  assert_int_equal(GPD_REC_FIXED_MAX, 96);
  /* string / module sizes: exact slot counts, up to the max */
  uint32_t lens[] = {0, 1, 16, 17, 48, 49, 100, GPD_REC_MAX_BYTES - 16};
  unsigned want[] = {1, 1, 1, 2, 2, 3, 4, 255};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    gpd_rec_string_t *s = string(lens[i]);
    assert_int_equal(s->h.nslots, want[i]);
    assert_int_equal(gpd_rec_validate(buf, (size_t)s->h.nslots * GPD_SLOT_SIZE), 0);
  }
  gpd_rec_module_t *m = module(GPD_REC_MAX_BYTES - 56);
  assert_int_equal(m->h.nslots, 255);
  assert_int_equal(V(255), 0);
  m = module(8);
  assert_int_equal(m->h.nslots, 2);
  assert_int_equal(V(2), 0);
  /* a larger buffer than the record is fine */
  assert_int_equal(V(4), 0);
}

static void test_invalid(void **state) {
  (void)state;
  /* header-level */
  node()->h.version = GPD_REC_VERSION - 1; /* 1: the 64-byte-slot format */
  assert_int_equal(V(1), GPD_EBADVERSION);
  node()->h.version = GPD_REC_VERSION + 1;
  assert_int_equal(V(1), GPD_EBADVERSION);
  node()->h.type = GPD_REC_NONE;
  assert_int_equal(V(1), GPD_EBADRECORD);
  node()->h.type = GPD_REC_TYPE_MAX;
  assert_int_equal(V(1), GPD_EBADRECORD);
  node()->h.nslots = 0;
  assert_int_equal(V(1), GPD_EBADRECORD);
  node()->h.nslots = 2;
  assert_int_equal(V(2), GPD_EBADRECORD);
  node()->h.flags = GPD_NODE_F_PYTHON; /* a Python frame must name its string */
  assert_int_equal(V(1), GPD_EBADRECORD);
  node()->h.flags = GPD_NODE_F_PYTHON;
  ((gpd_rec_node_t *)buf)->module = 7;
  assert_int_equal(V(1), 0);
  node()->h.flags = GPD_NODE_F_LABEL; /* a label names its string too */
  assert_int_equal(V(1), GPD_EBADRECORD);
  ((gpd_rec_node_t *)buf)->module = 7;
  assert_int_equal(V(1), 0);
  node()->h.flags = GPD_NODE_F_PYTHON | GPD_NODE_F_LABEL; /* one meaning at a time */
  ((gpd_rec_node_t *)buf)->module = 7;
  assert_int_equal(V(1), GPD_EBADRECORD);
  node()->h.flags = 0x04; /* unknown flag */
  assert_int_equal(V(1), GPD_EBADRECORD);
  node();
  assert_int_equal(gpd_rec_validate(buf, GPD_SLOT_SIZE - 1), GPD_EBADRECORD);
  assert_int_equal(gpd_rec_validate(NULL, GPD_SLOT_SIZE), GPD_EBADRECORD);
  node()->h.len = 4;
  assert_int_equal(V(1), GPD_EBADRECORD);
  node()->id = 0;
  assert_int_equal(V(1), GPD_EBADRECORD);
  /* invoke */
  invoke()->api = GPD_API_MAX;
  assert_int_equal(V(1), GPD_EBADRECORD);
  invoke()->op = GPD_OP_NONE;
  assert_int_equal(V(1), GPD_EBADRECORD);
  invoke()->op = GPD_OP_MAX;
  assert_int_equal(V(1), GPD_EBADRECORD);
  invoke()->node = 0;
  assert_int_equal(V(1), GPD_EBADRECORD);
  invoke()->corr = 0;
  assert_int_equal(V(1), GPD_EBADRECORD);
  /* activity */
  activity(GPD_OP_KERNEL, 0)->h.nslots = 2; /* the 64-byte format's count */
  assert_int_equal(V(3), GPD_EBADRECORD);
  activity(GPD_OP_KERNEL, 0)->h.nslots = 4;
  assert_int_equal(V(4), GPD_EBADRECORD);
  activity(GPD_OP_KERNEL, 0);
  assert_int_equal(V(2), GPD_EBADRECORD); /* buffer shorter than nslots */
  activity(GPD_OP_KERNEL, 1);
  assert_int_equal(V(3), GPD_EBADRECORD);
  activity(GPD_OP_COPY, GPD_COPY_MAX);
  assert_int_equal(V(3), GPD_EBADRECORD);
  activity(GPD_OP_ALLOC, GPD_MEM_MAX);
  assert_int_equal(V(3), GPD_EBADRECORD);
  activity(GPD_OP_MEMSET, GPD_MEM_MAX);
  assert_int_equal(V(3), GPD_EBADRECORD);
  activity(GPD_OP_SYNC, GPD_SYNC_MAX);
  assert_int_equal(V(3), GPD_EBADRECORD);
  activity(0, 0);
  assert_int_equal(V(3), GPD_EBADRECORD);
  activity(GPD_OP_KERNEL, 0)->corr = 0;
  assert_int_equal(V(3), GPD_EBADRECORD);
  activity(GPD_OP_KERNEL, 0)->api = 9;
  assert_int_equal(V(3), GPD_EBADRECORD);
  invoke()->h.nslots = 2; /* a fixed record spans exactly its slots */
  assert_int_equal(V(2), GPD_EBADRECORD);
  /* string */
  string(100)->h.nslots = 5; /* needs 4 */
  assert_int_equal(V(5), GPD_EBADRECORD);
  string(100)->h.nslots = 1;
  assert_int_equal(V(1), GPD_EBADRECORD);
  string(10)->id = 0;
  assert_int_equal(V(1), GPD_EBADRECORD);
  string(10)->kind = GPD_STR_STALL + 1;
  assert_int_equal(V(1), GPD_EBADRECORD);
  gpd_rec_string_t *s = string(10);
  s->h.len = 0xffffffffu; /* slots_for would wrap */
  assert_int_equal(V(255), GPD_EBADRECORD);
  s = string(10);
  s->h.len = GPD_REC_MAX_BYTES; /* one byte too many with the head */
  s->h.nslots = 255;
  assert_int_equal(V(255), GPD_EBADRECORD);
  /* module */
  module(10)->build_id_len = 21;
  assert_int_equal(V(3), GPD_EBADRECORD);
  module(10)->id = 0;
  assert_int_equal(V(3), GPD_EBADRECORD);
  module(8)->h.nslots = 3; /* 56 + 8 bytes need exactly 2 */
  assert_int_equal(V(3), GPD_EBADRECORD);
  module(8)->h.nslots = 1;
  assert_int_equal(V(1), GPD_EBADRECORD);
  /* status */
  status()->api = GPD_API_MAX;
  assert_int_equal(V(1), GPD_EBADRECORD);
  status()->state = 2;
  assert_int_equal(V(1), GPD_EBADRECORD);
  status()->h.len = 1;
  assert_int_equal(V(1), GPD_EBADRECORD);
}

/* TRACEWIN: a window, the final record, and each rule of record.c */
static void test_tracewin(void **state) {
  (void)state;
  tracewin();
  assert_int_equal(V(2), 0);
  gpd_rec_tracewin_t *w = tracewin();
  w->h.flags = GPD_TRACEWIN_F_FINAL;
  w->start = w->end = 400;
  assert_int_equal(V(2), 0);
  tracewin()->h.flags = GPD_TRACEWIN_F_FINAL; /* final with start != end */
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->h.flags = 0x2;
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->api = GPD_API_MAX;
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->duty = 2;
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->t0 = 301; /* after the window's start */
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->start = 311; /* after its end */
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->window_ns = 211; /* more window than time */
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->window_ns = 210;
  assert_int_equal(V(2), 0);
  gpd_rec_tracewin_t *lw = tracewin(); /* counted launches: at most all inside windows */
  lw->launches = 100;
  lw->launches_in = 100;
  assert_int_equal(V(2), 0);
  lw = tracewin();
  lw->launches = 100;
  lw->launches_in = 101;
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->launches_in = 1; /* inside windows, but none counted at all */
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->h.nslots = 1;
  assert_int_equal(V(2), GPD_EBADRECORD);
  tracewin()->h.nslots = 3;
  assert_int_equal(V(3), GPD_EBADRECORD);
  tracewin()->h.len = 8;
  assert_int_equal(V(2), GPD_EBADRECORD);
  assert_string_equal(gpd_rec_type_name(GPD_REC_TRACEWIN), "tracewin");
}

static gpd_rec_graphnode_t *graphnode(uint64_t id, uint32_t node, uint64_t orig) {
  mk_hdr(GPD_REC_GRAPHNODE, NS(graphnode), 0);
  gpd_rec_graphnode_t *g = (gpd_rec_graphnode_t *)buf;
  g->h.flags = orig ? GPD_GRAPHNODE_F_CLONE : 0;
  g->id = id;
  g->node = node;
  g->orig = orig;
  return g;
}

/* GRAPHNODE: created, cloned, and each rule of record.c */
static void test_graphnode(void **state) {
  (void)state;
  assert_int_equal(NS(graphnode), 1);
  graphnode(7, 3, 0);
  assert_int_equal(V(1), 0);
  graphnode(8, 0, 7);
  assert_int_equal(V(1), 0);
  graphnode(GPD_GRAPHNODE_ID_LIMIT - 1, 0, GPD_GRAPHNODE_ID_LIMIT - 2);
  assert_int_equal(V(1), 0);
  graphnode(0, 3, 0); /* no id */
  assert_int_equal(V(1), GPD_EBADRECORD);
  graphnode(GPD_GRAPHNODE_ID_LIMIT, 3, 0);
  assert_int_equal(V(1), GPD_EBADRECORD);
  graphnode(7, 0, 0); /* created without a context */
  assert_int_equal(V(1), GPD_EBADRECORD);
  graphnode(8, 3, 7)->h.flags = 0; /* created with an original */
  assert_int_equal(V(1), GPD_EBADRECORD);
  graphnode(8, 3, 7); /* a clone with a context */
  assert_int_equal(V(1), GPD_EBADRECORD);
  graphnode(8, 0, 8); /* its own clone */
  assert_int_equal(V(1), GPD_EBADRECORD);
  graphnode(8, 0, GPD_GRAPHNODE_ID_LIMIT);
  assert_int_equal(V(1), GPD_EBADRECORD);
  graphnode(7, 3, 0)->h.flags = 0x2;
  assert_int_equal(V(1), GPD_EBADRECORD);
  graphnode(7, 3, 0)->h.nslots = 2;
  assert_int_equal(V(2), GPD_EBADRECORD);
  graphnode(7, 3, 0)->h.len = 4;
  assert_int_equal(V(1), GPD_EBADRECORD);
  assert_string_equal(gpd_rec_type_name(GPD_REC_GRAPHNODE), "graphnode");
}

static void test_names(void **state) {
  (void)state;
  assert_string_equal(gpd_rec_type_name(GPD_REC_ACTIVITY), "activity");
  assert_string_equal(gpd_rec_type_name(200), "?");
  assert_string_equal(gpd_api_name(GPD_API_LEVEL0), "level0");
  assert_string_equal(gpd_api_name(GPD_API_OMPT), "ompt");
  assert_string_equal(gpd_op_name(GPD_OP_MEMSET), "memset");
  assert_string_equal(gpd_op_placeholder(GPD_OP_KERNEL), "<gpu kernel>");
  assert_string_equal(gpd_op_placeholder(GPD_OP_SYNC), "<gpu sync>");
  assert_string_equal(gpd_op_placeholder(99), "?");
  assert_string_equal(gpd_copy_name(GPD_COPY_H2D), "H2D");
  assert_string_equal(gpd_copy_name(GPD_COPY_P2P), "P2P");
  assert_string_equal(gpd_mem_name(GPD_MEM_DEV), "DEV");
  assert_string_equal(gpd_sync_name(GPD_SYNC_STRE), "STRE");
  assert_string_equal(gpd_sync_name(GPD_SYNC_MAX), "?");
  assert_int_equal(GPD_CORR_API(GPD_CORR(GPD_API_CUDA, 0xffffffffffffffffull)), GPD_API_CUDA);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_valid),
    cmocka_unit_test(test_invalid),
    cmocka_unit_test(test_tracewin),
    cmocka_unit_test(test_graphnode),
    cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
