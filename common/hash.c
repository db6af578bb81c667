/* hash.c - calling-context ids and content hashes (hash.h), XXH3. */
#include "gpuprof/hash.h"

#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* id = XXH3_64(le64(parent) || key || le64(offset)), seed 0; a result of
 * 0 is mapped to 1 (0 means "none" everywhere).  Small keys hash from a
 * stack buffer, long ones stream: both give the same value. */
uint64_t gpd_ctx_id(uint64_t parent, const void *key, size_t key_len, uint64_t offset) {
  uint8_t p8[8], o8[8];
  uint64_t h;
  put_le64(p8, parent);
  put_le64(o8, offset);
  if (key_len <= 240) {
    uint8_t buf[256];
    memcpy(buf, p8, 8);
    if (key_len)
      memcpy(buf + 8, key, key_len);
    memcpy(buf + 8 + key_len, o8, 8);
    h = XXH3_64bits(buf, 16 + key_len);
  } else {
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, p8, 8);
    XXH3_64bits_update(&st, key, key_len);
    XXH3_64bits_update(&st, o8, 8);
    h = XXH3_64bits_digest(&st);
  }
  return h ? h : 1;
}

uint64_t gpd_hash64(const void *data, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(data, n, seed); }

/* Canonical (big-endian high64 then low64) lower-case hex, as xxhsum -H2. */
void gpd_hash128_hex(const void *data, size_t n, char out[33]) {
  static const char hex[] = "0123456789abcdef";
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(data, n));
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[c.digest[i] >> 4];
    out[2 * i + 1] = hex[c.digest[i] & 15];
  }
  out[32] = '\0';
}
