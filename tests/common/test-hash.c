/* test-hash.c - Merkle context ids and content hashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "gpuprof/hash.h"

/* Reference: XXH3-64 over le64(parent) || key || le64(offset). */
static uint64_t ref_id(uint64_t parent, const void *key, size_t n, uint64_t off) {
  static uint8_t buf[8192];
  for (int i = 0; i < 8; i++)
    buf[i] = (uint8_t)(parent >> (8 * i));
  memcpy(buf + 8, key, n);
  for (int i = 0; i < 8; i++)
    buf[8 + n + i] = (uint8_t)(off >> (8 * i));
  return XXH3_64bits(buf, n + 16);
}

static void test_ctx_id(void **state) {
  (void)state;
  const char *mod = "/usr/lib/libfoo.so";
  uint64_t a = gpd_ctx_id(GPD_CTX_ROOT, mod, strlen(mod), 0x1234);
  assert_int_equal(a, gpd_ctx_id(GPD_CTX_ROOT, mod, strlen(mod), 0x1234)); /* deterministic */
  assert_int_equal(a, ref_id(GPD_CTX_ROOT, mod, strlen(mod), 0x1234));
  assert_int_not_equal(a, gpd_ctx_id(a, mod, strlen(mod), 0x1234));               /* parent */
  assert_int_not_equal(a, gpd_ctx_id(GPD_CTX_ROOT, mod, strlen(mod), 0x1235));    /* offset */
  assert_int_not_equal(a, gpd_ctx_id(GPD_CTX_ROOT, mod, strlen(mod) - 1, 0x1234)); /* key */
  assert_int_not_equal(a, 0);
  /* known vector (frozen: ids are stored in profiles and merged across
   * nodes, so the formula must never change) */
  assert_int_equal(gpd_ctx_id(GPD_CTX_ROOT, "<gpu kernel>", 12, 0), 0x6a4d7a1dd5d0d5f5ull);
  assert_int_equal(gpd_ctx_id(0, NULL, 0, 0), ref_id(0, "", 0, 0));
  /* long keys (streaming path) agree with the one-shot formula */
  char longkey[3000];
  for (size_t i = 0; i < sizeof longkey; i++)
    longkey[i] = (char)('a' + i % 26);
  for (size_t n = 230; n < 260; n++)
    assert_int_equal(gpd_ctx_id(77, longkey, n, 5), ref_id(77, longkey, n, 5));
  assert_int_equal(gpd_ctx_id(77, longkey, sizeof longkey, 5), ref_id(77, longkey, sizeof longkey, 5));
  /* a chain: same path, same id */
  uint64_t p1 = GPD_CTX_ROOT, p2 = GPD_CTX_ROOT;
  for (int d = 0; d < 32; d++) {
    p1 = gpd_ctx_id(p1, mod, strlen(mod), (uint64_t)d * 16);
    p2 = gpd_ctx_id(p2, mod, strlen(mod), (uint64_t)d * 16);
    assert_int_not_equal(p1, 0);
  }
  assert_int_equal(p1, p2);
}

static void test_hash64_128(void **state) {
  (void)state;
  assert_int_equal(gpd_hash64("abc", 3, 0), XXH3_64bits("abc", 3));
  assert_int_equal(gpd_hash64("abc", 3, 9), XXH3_64bits_withSeed("abc", 3, 9));
  assert_int_not_equal(gpd_hash64("abc", 3, 0), gpd_hash64("abc", 3, 1));
  char hex[33];
  gpd_hash128_hex("", 0, hex);
  assert_int_equal(strlen(hex), 32);
  /* xxhsum -H2 of the empty input */
  assert_string_equal(hex, "99aa06d3014798d86001c324468d497f");
  gpd_hash128_hex("abc", 3, hex);
  XXH128_hash_t h = XXH3_128bits("abc", 3);
  char want[33];
  snprintf(want, sizeof want, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
  assert_string_equal(hex, want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ctx_id),
    cmocka_unit_test(test_hash64_128),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
