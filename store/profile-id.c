/* profile-id.c - profile ids that say nothing about other users
 * (store-id.h).
 *
 * A daemon counts its profiles (meta next_profile_id, reserved in blocks
 * by daemon/dstore.c); the id it hands out is that count sent through a
 * keyed permutation of [0, 2^52): an 8-round balanced Feistel network on
 * two 26-bit halves whose round function is SipHash-2-4 (Aumasson and
 * Bernstein 2012, reference test vector checked in tests/store) of
 * (round << 32 | half) under the file's 128-bit key.  Distinct counts give
 * distinct ids with no lookup, and without the key consecutive counts give
 * ids with no visible relation.  The id is 2^52 + the permuted count: above
 * every sequential id an older daemon wrote (those are < 2^52) and below
 * 2^53, so a JSON reader's double holds it exactly.
 */
#include "store-id.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "gpuprof/error.h"
#include "store-sql.h"

#define HALF_BITS (GPD_STORE_ID_BITS / 2)
#define HALF_MASK ((1ull << HALF_BITS) - 1)
#define ROUNDS 8

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIPROUND                                                                                                  \
  do {                                                                                                            \
    v0 += v1;                                                                                                     \
    v1 = rotl(v1, 13);                                                                                            \
    v1 ^= v0;                                                                                                     \
    v0 = rotl(v0, 32);                                                                                            \
    v2 += v3;                                                                                                     \
    v3 = rotl(v3, 16);                                                                                            \
    v3 ^= v2;                                                                                                     \
    v0 += v3;                                                                                                     \
    v3 = rotl(v3, 21);                                                                                            \
    v3 ^= v0;                                                                                                     \
    v2 += v1;                                                                                                     \
    v1 = rotl(v1, 17);                                                                                            \
    v1 ^= v2;                                                                                                     \
    v2 = rotl(v2, 32);                                                                                            \
  } while (0)

uint64_t gpd_store_id_siphash(const gpd_store_idkey_t *k, uint64_t m) {
  uint64_t v0 = k->k[0] ^ 0x736f6d6570736575ull, v1 = k->k[1] ^ 0x646f72616e646f6dull;
  uint64_t v2 = k->k[0] ^ 0x6c7967656e657261ull, v3 = k->k[1] ^ 0x7465646279746573ull;
  const uint64_t b = 8ull << 56; /* the last block: the length (8 bytes), nothing left over */
  v3 ^= m;
  SIPROUND;
  SIPROUND;
  v0 ^= m;
  v3 ^= b;
  SIPROUND;
  SIPROUND;
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t round_f(const gpd_store_idkey_t *k, unsigned r, uint64_t half) {
  return gpd_store_id_siphash(k, (uint64_t)r << 32 | half) & HALF_MASK;
}

uint64_t gpd_store_id_encode(const gpd_store_idkey_t *k, uint64_t seq) {
  uint64_t l = (seq >> HALF_BITS) & HALF_MASK, r = seq & HALF_MASK;
  for (unsigned i = 0; i < ROUNDS; i++) {
    uint64_t t = l ^ round_f(k, i, r);
    l = r;
    r = t;
  }
  return GPD_STORE_ID_BASE | l << HALF_BITS | r;
}

uint64_t gpd_store_id_decode(const gpd_store_idkey_t *k, uint64_t id) {
  if (id < GPD_STORE_ID_BASE || id >= 2 * GPD_STORE_ID_BASE)
    return id; /* a sequential id of an older daemon */
  uint64_t l = (id >> HALF_BITS) & HALF_MASK, r = id & HALF_MASK;
  for (unsigned i = ROUNDS; i-- > 0;) {
    uint64_t t = r ^ round_f(k, i, l);
    r = l;
    l = t;
  }
  return l << HALF_BITS | r;
}

int gpd_store_id_key(sqlite3 *db, gpd_store_idkey_t *k) {
  sqlite3_stmt *q = NULL;
  int err = GPD_ESTORE, found = 0;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='profile_id_key'", -1, &q, NULL) != SQLITE_OK)
    return GPD_ESTORE;
  int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) {
    const char *hex = (const char *)sqlite3_column_text(q, 0);
    unsigned long long a, b;
    int n = 0;
    /* 32 hex digits, nothing else: a damaged key is an error, never a
     * fresh key (ids of the old one would come again) */
    if (hex && strlen(hex) == 32 && sscanf(hex, "%16llx%16llx%n", &a, &b, &n) == 2 && n == 32) {
      k->k[0] = a;
      k->k[1] = b;
      found = 1;
    } else {
      sqlite3_finalize(q);
      return -EINVAL;
    }
  } else if (rc != SQLITE_DONE) {
    sqlite3_finalize(q);
    return GPD_ESTORE;
  }
  sqlite3_finalize(q);
  if (found)
    return 0;
  if (getrandom(k->k, sizeof k->k, 0) != (ssize_t)sizeof k->k)
    return errno ? -errno : -EIO;
  char sql[128];
  snprintf(sql, sizeof sql, "INSERT INTO meta VALUES('profile_id_key','%016llx%016llx');",
           (unsigned long long)k->k[0], (unsigned long long)k->k[1]);
  if ((err = gpd_store_db_exec(db, sql)) < 0)
    return err;
  return 0;
}

static void seq_fn(sqlite3_context *c, int argc, sqlite3_value **v) {
  (void)argc;
  const gpd_store_idkey_t *k = sqlite3_user_data(c);
  sqlite3_result_int64(c, (int64_t)gpd_store_id_decode(k, (uint64_t)sqlite3_value_int64(v[0])));
}

int gpd_store_id_register(sqlite3 *db, const gpd_store_idkey_t *k) {
  return sqlite3_create_function(db, "gpd_profile_seq", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY,
                                 (void *)k, seq_fn, NULL, NULL) == SQLITE_OK
             ? 0
             : GPD_ESTORE;
}
