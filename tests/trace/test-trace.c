/* test-trace.c - the tracing threads (daemon/trace.c) on a real store file:
 * activities and invocations handed over by profile.c's hook land in
 * trace_event / trace_launch with their fields, once; streams go to
 * threads K at a time round robin; the per-profile bound refuses new
 * events and counts them (trace_stat); a burst into small queues loses
 * nothing silently (rows + dropped == events); flushed_ns moves past the
 * hand-off of committed events; retention-style removal is the caller's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "gpuprof/clock.h"

#include "daemon.h"

static char dir[64], path[128];

static void setup_store(void) {
  snprintf(dir, sizeof dir, "/tmp/test-trace.XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/t.gpdb", dir);
  gpd_dstore_t *s;
  assert_int_equal(gpd_dstore_open(&s, path), 0);
  gpd_dstore_close(s);
}

static void cleanup_store(void) {
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static int64_t q1(const char *sql) {
  sqlite3 *db;
  sqlite3_stmt *q;
  int64_t v = -1;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
  if (sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

/* wait (deadline 20 s) until every event pushed so far is committed */
static void wait_flushed(gpd_trace_t *t) {
  uint64_t now = gpd_clock_ns();
  for (int i = 0; i < 20000 && gpd_trace_flushed_ns(t) <= now; i++)
    usleep(1000);
  assert_true(gpd_trace_flushed_ns(t) > now);
}

static gpd_rec_activity_t act(uint64_t corr, uint32_t stream, uint64_t start) {
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.h.type = GPD_REC_ACTIVITY;
  a.h.version = GPD_REC_VERSION;
  a.h.nslots = GPD_REC_NSLOTS(a);
  a.api = GPD_API_OPENCL;
  a.op = GPD_OP_COPY;
  a.subkind = GPD_COPY_H2D;
  a.corr = corr;
  a.start = start;
  a.end = start + 50;
  a.bytes = 4096;
  a.stream = stream;
  a.device = 3;
  return a;
}

static gpd_rec_invoke_t inv(uint64_t corr, uint64_t ts) {
  gpd_rec_invoke_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_INVOKE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.api = GPD_API_OPENCL;
  r.op = GPD_OP_COPY;
  r.corr = corr;
  r.ts = ts;
  return r;
}

/* the profile hook: INVOKE then ACTIVITY through gpd_profile_ingest */
static void test_rows(void **state) {
  (void)state;
  setup_store();
  gpd_trace_cfg_t cfg = {.threads = 2, .streams_per_thread = 1, .queue_events = 1024,
                         .flush_ms = 5, .max_events = 0};
  gpd_trace_t *t;
  assert_int_equal(gpd_trace_start(&t, path, &cfg), 0);
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 77), 0);
  p.trace = t;
  gpd_rec_node_t nd;
  memset(&nd, 0, sizeof nd);
  nd.h.type = GPD_REC_NODE;
  nd.h.version = GPD_REC_VERSION;
  nd.h.nslots = GPD_REC_NSLOTS(nd);
  nd.id = 1;
  nd.offset = 0x1234;
  gpd_profile_ingest(&p, &nd, sizeof nd);
  p.ring_tid = 1234; /* as gpd_profile_consume sets it: the ring's owner */
  for (unsigned i = 0; i < 30; i++) {
    uint64_t corr = GPD_CORR(GPD_API_OPENCL, i + 1);
    gpd_rec_invoke_t r = inv(corr, 1000 + 10 * i);
    r.node = 1;
    gpd_profile_ingest(&p, &r, sizeof r);
    /* three streams, out of time order within the batch */
    gpd_rec_activity_t a = act(corr, 10 + i % 3, 100000 - 100 * i);
    gpd_profile_ingest(&p, &a, sizeof a);
  }
  /* first seen: the CPU thread, streams 10, 11, 12; K = 1, round robin */
  assert_int_equal(gpd_trace_thread_of(t, &p, GPD_TRACE_KEY_TID(1234)), 0);
  assert_int_equal(gpd_trace_thread_of(t, &p, GPD_TRACE_KEY_STREAM(10)), 1);
  assert_int_equal(gpd_trace_thread_of(t, &p, GPD_TRACE_KEY_STREAM(11)), 0);
  assert_int_equal(gpd_trace_thread_of(t, &p, GPD_TRACE_KEY_STREAM(12)), 1);
  wait_flushed(t);
  assert_int_equal(q1("SELECT count(*) FROM trace_event WHERE profile_id=77"), 30);
  assert_int_equal(q1("SELECT count(*) FROM trace_launch WHERE profile_id=77 AND tid=1234"), 30);
  assert_int_equal(q1("SELECT count(*) FROM trace_event WHERE op=2 AND subkind=1 AND bytes=4096"
                      " AND device=3 AND end_ns=start_ns+50"), 30);
  assert_int_equal(q1("SELECT count(DISTINCT stream) FROM trace_event"), 3);
  /* each activity's node is its CCT target (<gpu copy> below the call
   * site), each launch's the call site */
  uint32_t site = gpd_profile_local(&p, 1);
  assert_int_not_equal(site, GPD_NONE);
  char sql[160];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM trace_launch WHERE node=%lld",
           (long long)p.nodes[site].id);
  assert_int_equal(q1(sql), 30);
  assert_int_equal(q1("SELECT count(DISTINCT node) FROM trace_event WHERE node != 0"), 1);
  assert_int_equal(q1("SELECT count(*) FROM trace_event e JOIN trace_launch l USING(profile_id, corr)"), 30);
  assert_int_equal(p.trace_n, 60);
  gpd_trace_stop(t);
  gpd_profile_free(&p);
  cleanup_store();
}

/* bound: new events refused, counted, the oldest kept */
static void test_bound(void **state) {
  (void)state;
  setup_store();
  gpd_trace_cfg_t cfg = {.threads = 1, .streams_per_thread = 4, .queue_events = 1024,
                         .flush_ms = 5, .max_events = 10};
  gpd_trace_t *t;
  assert_int_equal(gpd_trace_start(&t, path, &cfg), 0);
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 5), 0);
  p.trace = t;
  for (unsigned i = 0; i < 25; i++) {
    gpd_rec_activity_t a = act(GPD_CORR(GPD_API_OPENCL, i + 1), 1, 1000 + i);
    gpd_profile_ingest(&p, &a, sizeof a);
  }
  gpd_profile_finish(&p); /* pushes the counters */
  wait_flushed(t);
  assert_int_equal(p.trace_refused, 15);
  assert_int_equal(q1("SELECT count(*) FROM trace_event WHERE profile_id=5"), 10);
  assert_int_equal(q1("SELECT max(start_ns) FROM trace_event WHERE profile_id=5"), 1009);
  assert_int_equal(q1("SELECT refused FROM trace_stat WHERE profile_id=5"), 15);
  assert_int_equal(q1("SELECT events FROM trace_stat WHERE profile_id=5"), 10);
  gpd_trace_stop(t);
  gpd_profile_free(&p);
  cleanup_store();
}

/* a burst into small queues: what is not written is counted as dropped */
static void test_drops(void **state) {
  (void)state;
  setup_store();
  gpd_trace_cfg_t cfg = {.threads = 1, .streams_per_thread = 4, .queue_events = 64,
                         .flush_ms = 50, .max_events = 0};
  gpd_trace_t *t;
  assert_int_equal(gpd_trace_start(&t, path, &cfg), 0);
  gpd_profile_t p;
  assert_int_equal(gpd_profile_init(&p, 9), 0);
  p.trace = t;
  for (unsigned i = 0; i < 5000; i++) {
    gpd_rec_activity_t a = act(GPD_CORR(GPD_API_OPENCL, i + 1), 1, 1000 + i);
    gpd_profile_ingest(&p, &a, sizeof a);
  }
  gpd_profile_finish(&p);
  gpd_trace_stop(t); /* writes everything queued */
  int64_t rows = q1("SELECT count(*) FROM trace_event WHERE profile_id=9");
  assert_int_equal((uint64_t)rows, p.trace_n);
  assert_int_equal(p.trace_n + p.trace_dropped, 5000);
  /* the drops are in trace_stat exactly, though the queues were full */
  int64_t d = q1("SELECT dropped FROM trace_stat WHERE profile_id=9");
  assert_int_equal(d < 0 ? 0 : (uint64_t)d, p.trace_dropped);
  print_message("burst of 5000 into 4 x 64 slots: %llu written, %llu dropped\n",
                (unsigned long long)p.trace_n, (unsigned long long)p.trace_dropped);
  gpd_profile_free(&p);
  cleanup_store();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_bound),
      cmocka_unit_test(test_drops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
