/* test-store-id.c - profile ids (store/profile-id.c, issue 23): the round
 * function is SipHash-2-4 (the reference vector of Aumasson and
 * Bernstein's paper, 8-byte message 00..07 under key 00..0f); the
 * permutation is a bijection onto [2^52, 2^53) on 200 000 counts (no
 * repeat, decode inverts), depends on the key, and consecutive counts give
 * ids that are neither close nor ordered; the key is created once in meta,
 * read back the same, and a damaged key is an error; gpd_profile_seq in SQL
 * gives the count back.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store-id.h"
#include "store-sql.h"

#define N 200000

static int u64cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void test_siphash_vector(void **state) {
  (void)state;
  gpd_store_idkey_t k = {{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull}};
  assert_true(gpd_store_id_siphash(&k, 0x0706050403020100ull) == 0x93f5f5799a932462ull);
}

static void test_bijective(void **state) {
  (void)state;
  gpd_store_idkey_t k = {{0x9e3779b97f4a7c15ull, 0x0123456789abcdefull}};
  uint64_t *ids = malloc(N * sizeof *ids);
  assert_non_null(ids);
  for (uint64_t i = 0; i < N; i++) {
    /* the first counts (a fresh file) and counts near the domain's top */
    uint64_t seq = i < N / 2 ? i : (GPD_STORE_ID_BASE - 1) - (i - N / 2);
    ids[i] = gpd_store_id_encode(&k, seq);
    assert_true(ids[i] >= GPD_STORE_ID_BASE && ids[i] < 2 * GPD_STORE_ID_BASE);
    assert_true(gpd_store_id_decode(&k, ids[i]) == seq);
  }
  qsort(ids, N, sizeof *ids, u64cmp);
  for (size_t i = 1; i < N; i++)
    assert_true(ids[i] != ids[i - 1]);
  /* an older daemon's sequential id is its own count */
  assert_true(gpd_store_id_decode(&k, 42) == 42);
  free(ids);
}

static void test_unrelated(void **state) {
  (void)state;
  gpd_store_idkey_t k = {{1, 2}}, k2 = {{1, 3}};
  unsigned close = 0, up = 0, same = 0;
  uint64_t prev = gpd_store_id_encode(&k, 1000);
  for (uint64_t s = 1001; s < 3000; s++) {
    uint64_t id = gpd_store_id_encode(&k, s);
    uint64_t d = id > prev ? id - prev : prev - id;
    close += d < 1000000; /* 2^52 / 1e6: a random pair is this close 1 time in ~2 million */
    up += id > prev;
    same += id == gpd_store_id_encode(&k2, s);
    prev = id;
  }
  assert_int_equal(close, 0);
  /* 1999 steps up or down at random: mean 999.5, sd 22 */
  assert_in_range(up, 850, 1150);
  assert_int_equal(same, 0);
}

static void test_key_meta(void **state) {
  (void)state;
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  assert_int_equal(gpd_store_db_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)"), 0);
  gpd_store_idkey_t a, b, c;
  assert_int_equal(gpd_store_id_key(db, &a), 0);
  assert_int_equal(gpd_store_id_key(db, &b), 0);
  assert_memory_equal(&a, &b, sizeof a);
  assert_true(a.k[0] != 0 || a.k[1] != 0);
  assert_int_equal(gpd_store_db_int(db, "SELECT COUNT(*) FROM meta WHERE key='profile_id_key' AND length(value)=32", -1), 1);
  /* SQL gets the count back */
  assert_int_equal(gpd_store_id_register(db, &a), 0);
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT gpd_profile_seq(%llu)", (unsigned long long)gpd_store_id_encode(&a, 77));
  assert_int_equal(gpd_store_db_int(db, sql, -1), 77);
  /* a damaged key is never replaced */
  assert_int_equal(gpd_store_db_exec(db, "UPDATE meta SET value='zz' WHERE key='profile_id_key'"), 0);
  assert_int_equal(gpd_store_id_key(db, &c), -EINVAL);
  assert_int_equal(gpd_store_db_int(db, "SELECT COUNT(*) FROM meta WHERE value='zz'", -1), 1);
  sqlite3_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_siphash_vector), cmocka_unit_test(test_bijective),
                                     cmocka_unit_test(test_unrelated), cmocka_unit_test(test_key_meta)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
