/* store-id.h - the profile ids of a daemon's .gpdb (profile-id.c): a
 * keyed permutation of the daemon's profile count, so that the ids one
 * user sees say nothing of how many profiles others started in between
 * (issue 23).  The 128-bit key lives in the file's meta table (row
 * profile_id_key), beside the count it permutes: the two are written in
 * the same transactions and the file is private to the daemon (0600), so
 * ids stay unique across restarts with no lookup.  docs/STORE.md.
 */
#ifndef GPD_STORE_ID_H
#define GPD_STORE_ID_H

#include <stdint.h>

#include <sqlite3.h>

/** Bits of the permuted count; ids are GPD_STORE_ID_BASE + a permuted
 *  count, so every id is in [2^52, 2^53) (exact in a double) and above
 *  every sequential id an older daemon handed out. */
#define GPD_STORE_ID_BITS 52
#define GPD_STORE_ID_BASE (1ull << GPD_STORE_ID_BITS)

/** ORDER BY terms that list a file's profiles in the order they began
 *  without the key: an older daemon's sequential ids first, by id, then
 *  permuted ids by start_ns (then id). */
#define GPD_STORE_ID_ORDER "id >= 4503599627370496, CASE WHEN id < 4503599627370496 THEN id ELSE start_ns END, id"

/** A permutation key (two SipHash key words). */
typedef struct gpd_store_idkey_s {
  uint64_t k[2];
} gpd_store_idkey_t;

/** The file's key (meta profile_id_key, 32 hex digits); when the file has
 *  none, a new one from getrandom(2) is inserted in the caller's
 *  transaction.  0, -EINVAL (the row is not 32 hex digits: never replaced,
 *  old ids would come again), -errno of getrandom or GPD_ESTORE. */
int gpd_store_id_key(sqlite3 *db, gpd_store_idkey_t *k);
/** The id of count seq (< 2^52; higher bits are ignored): a bijection of
 *  [0, 2^52) onto [2^52, 2^53) that depends on k.  Pure, thread-safe. */
uint64_t gpd_store_id_encode(const gpd_store_idkey_t *k, uint64_t seq);
/** The count of id (gpd_store_id_encode's inverse); an id outside
 *  [2^52, 2^53) is an older daemon's sequential id and is its own count. */
uint64_t gpd_store_id_decode(const gpd_store_idkey_t *k, uint64_t id);
/** SipHash-2-4 of one 64-bit little-endian word under k (the round
 *  function; exposed for its reference test vector). */
uint64_t gpd_store_id_siphash(const gpd_store_idkey_t *k, uint64_t m);
/** Register the SQL function gpd_profile_seq(id) (gpd_store_id_decode
 *  under k, which must outlive db) on the daemon's connection db, for
 *  "newest first" orders.  0 or GPD_ESTORE. */
int gpd_store_id_register(sqlite3 *db, const gpd_store_idkey_t *k);

#endif
