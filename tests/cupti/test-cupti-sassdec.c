/* test-cupti-sassdec.c - unit test of shim/cupti/cupti-sassdec.c: records
 * as cuptiSassMetricsFlushData returns them become PCSAMPLE records with
 * exact counts, and every record skipped is counted at its stage (no
 * name, a zero count, no string id, a full ring); the 32-bit binary id of
 * a SASS record maps to the loaded module's 64-bit cuptiGetCubinCrc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <cupti_sass_metrics.h>

#include "cupti-internal.h"

typedef struct sink_s {
  gpd_rec_pcsample_t recs[64];
  size_t n;
  int fail_after; /* pushes accepted before the ring is "full"; -1 never */
  int intern_fail; /* names starting with '!' get no id */
} sink_t;

static uint32_t t_intern(void *ud, const char *text, unsigned kind) {
  sink_t *s = ud;
  assert_int_equal(kind, GPD_STR_KERNEL);
  if (s->intern_fail && text[0] == '!')
    return 0;
  return 100 + (uint32_t)strlen(text); /* distinct per test name */
}

static int t_push(void *ud, const gpd_rec_pcsample_t *r) {
  sink_t *s = ud;
  if (s->fail_after >= 0 && (int)s->n >= s->fail_after)
    return -11;
  assert_true(s->n < 64);
  s->recs[s->n++] = *r;
  return 0;
}

static CUpti_SassMetrics_Data rec(uint32_t crc, const char *name, uint32_t pc,
                                  CUpti_SassMetrics_InstanceValue *v) {
  CUpti_SassMetrics_Data d;
  memset(&d, 0, sizeof d);
  d.structSize = sizeof d;
  d.cubinCrc = crc;
  d.functionName = name;
  d.pcOffset = pc;
  d.pInstanceValues = v;
  return d;
}

static void test_crc_map(void **st) {
  (void)st;
  uint64_t out;
  const uint64_t known[] = {0x11112222u, 0xabcd00001234beefull, 0x5555000012340000ull};
  assert_int_equal(gpd_cupti_sass_crc_map(0x11112222u, known, 3, &out), 0);
  assert_int_equal(out, 0x11112222u);
  assert_int_equal(gpd_cupti_sass_crc_map(0x1234beefu, known, 3, &out), 1); /* low 32 bits */
  assert_int_equal(out, 0xabcd00001234beefull);
  assert_int_equal(gpd_cupti_sass_crc_map(0x77u, known, 3, &out), -1);
  assert_int_equal(out, 0x77u); /* kept */
  const uint64_t twice[] = {0x100000001234ull, 0x200000001234ull}; /* ambiguous */
  assert_int_equal(gpd_cupti_sass_crc_map(0x1234u, twice, 2, &out), -1);
  assert_int_equal(out, 0x1234u);
  const uint64_t dup[] = {0x300000001234ull, 0x300000001234ull}; /* one module, listed twice */
  assert_int_equal(gpd_cupti_sass_crc_map(0x1234u, dup, 2, &out), 1);
  assert_int_equal(out, 0x300000001234ull);
  assert_int_equal(gpd_cupti_sass_crc_map(5, NULL, 0, &out), -1);
  assert_int_equal(gpd_cupti_sass_crc_map(5, known, 3, NULL), -1);
}

/* Every stage: 2 instances per record (SM granularity) summed; a record
 * without a name, one with zero counts, one whose name gets no id; a count
 * above 2^32-1 split; the binary ids mapped. */
static void test_decode_stages(void **st) {
  (void)st;
  sink_t s = {.fail_after = -1, .intern_fail = 1};
  const uint64_t crcs[] = {0x9999000000000abcull};
  gpd_sass_sink_t k = {t_intern, t_push, &s, 7, 3, 42, crcs, 1};
  CUpti_SassMetrics_InstanceValue v[6][2] = {
      {{42, 3000}, {42, 1000}},            /* CALL at 0x100: 4000 */
      {{42, 1000}, {42, 0}},               /* CALL at 0x160: 1000 */
      {{42, 5}, {42, 5}},                  /* no name */
      {{42, 0}, {42, 0}},                  /* never executed */
      {{42, 9}, {99, 1}},                  /* no string id; one value of another metric */
      {{42, 0xffffffffull}, {42, 0x10ull}}, /* 2^32 + 15: two records */
  };
  CUpti_SassMetrics_Data d[6] = {
      rec(0xabc, "_Z11known_callsPKfiiPf", 0x100, v[0]), rec(0xabc, "_Z11known_callsPKfiiPf", 0x160, v[1]),
      rec(0xabc, NULL, 0x10, v[2]),      rec(0xabc, "_Z5knownPKfiPf", 0x20, v[3]),
      rec(0xabc, "!nameless", 0x30, v[4]), rec(0x42, "_Z5knownPKfiPf", 0x70, v[5]),
  };
  gpd_sass_stats_t t;
  gpd_cupti_sass_decode(&k, d, 6, 2, &t);
  assert_int_equal(t.records, 6);
  assert_int_equal(t.noname, 1);
  assert_int_equal(t.zero, 1);
  assert_int_equal(t.nonzero, 4);
  assert_int_equal(t.sum, 4000 + 1000 + 10 + 0x10000000full);
  assert_int_equal(t.metric_other, 1);
  assert_int_equal(t.crc_low32, 3); /* 0xabc -> the module */
  assert_int_equal(t.crc_none, 1);  /* 0x42: kept as it is */
  assert_int_equal(t.nofunc, 1);
  assert_int_equal(t.pushed, 3);
  assert_int_equal(t.recs_pushed, 4);
  assert_int_equal(t.pushfail, 0);
  assert_int_equal(s.n, 4);
  assert_int_equal(s.recs[0].h.type, GPD_REC_PCSAMPLE);
  assert_int_equal(s.recs[0].h.version, GPD_REC_VERSION);
  assert_int_equal(s.recs[0].h.nslots, 2); /* a PCSAMPLE: two 32-byte slots */
  assert_int_equal(s.recs[0].func, 100 + strlen("_Z11known_callsPKfiiPf"));
  assert_int_equal(s.recs[0].stall, 7);
  assert_int_equal(s.recs[0].device, 3);
  assert_int_equal(s.recs[0].cubin_id, 0x9999000000000abcull);
  assert_int_equal(s.recs[0].pc, 0x100);
  assert_int_equal(s.recs[0].samples, 4000);
  assert_int_equal(s.recs[1].pc, 0x160);
  assert_int_equal(s.recs[1].samples, 1000);
  assert_int_equal(s.recs[2].cubin_id, 0x42);
  assert_int_equal(s.recs[2].pc, 0x70);
  assert_int_equal(s.recs[2].samples, 0xffffffffu);
  assert_int_equal(s.recs[3].pc, 0x70);
  assert_int_equal(s.recs[3].samples, 0x10u);
}

/* A full ring loses records and says how many; no stall id pushes none. */
static void test_decode_losses(void **st) {
  (void)st;
  sink_t s = {.fail_after = 1};
  gpd_sass_sink_t k = {t_intern, t_push, &s, 7, 0, 0, NULL, 0};
  CUpti_SassMetrics_InstanceValue v[3] = {{1, 10}, {1, 20}, {1, 30}};
  CUpti_SassMetrics_Data d[3] = {rec(1, "a", 0, &v[0]), rec(1, "b", 16, &v[1]),
                                 rec(1, "c", 32, &v[2])};
  gpd_sass_stats_t t;
  gpd_cupti_sass_decode(&k, d, 3, 1, &t);
  assert_int_equal(t.pushed, 1);
  assert_int_equal(t.pushfail, 2);
  assert_int_equal(t.crc_none, 3);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.recs[0].samples, 10);

  sink_t s2 = {.fail_after = -1};
  gpd_sass_sink_t k2 = {t_intern, t_push, &s2, 0, 0, 0, NULL, 0};
  gpd_cupti_sass_decode(&k2, d, 3, 1, &t);
  assert_int_equal(t.nofunc, 3);
  assert_int_equal(t.pushed, 0);
  assert_int_equal(s2.n, 0);

  /* no instances or no value array: zero counts, nothing pushed */
  CUpti_SassMetrics_Data e = rec(1, "a", 0, NULL);
  gpd_cupti_sass_decode(&k2, &e, 1, 1, &t);
  assert_int_equal(t.zero, 1);
  gpd_cupti_sass_decode(&k2, d, 3, 0, &t);
  assert_int_equal(t.zero, 3);
  gpd_cupti_sass_decode(NULL, d, 3, 1, &t);
  assert_int_equal(t.records, 0);
  gpd_cupti_sass_decode(&k2, NULL, 3, 1, &t);
  assert_int_equal(t.records, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc_map),
      cmocka_unit_test(test_decode_stages),
      cmocka_unit_test(test_decode_losses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
