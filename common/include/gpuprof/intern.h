/* intern.h - the shim's process-wide CCT intern table.
 *
 * Maps (parent node id, call-site address) -> node id.  Lock-free open
 * addressing over a fixed-capacity table allocated once (mmap) at init:
 * bounded memory, no allocation, no lock on the application's thread.
 * Node ids are dense, starting at 1.  When a key is new, the inserting
 * thread gets `*is_new = 1` and must announce the node (NODE record) before
 * any record refers to it; other threads that race on the same key wait
 * (bounded spin) until the id is published.  A full table returns 0: the
 * caller attributes to the deepest node it has (and counts it).
 */
#ifndef GPUPROF_INTERN_H
#define GPUPROF_INTERN_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct gpd_intern_entry_s {
  _Atomic uint64_t key_ip;     /* call-site address; 0 = empty */
  _Atomic uint32_t key_parent; /* parent node id */
  _Atomic uint32_t id;         /* 0 until claimed; n | 0x80000000 until published; n */
} gpd_intern_entry_t;

typedef struct gpd_intern_s {
  gpd_intern_entry_t *tab;
  uint64_t mask;               /* capacity - 1 */
  _Atomic uint32_t next_id;    /* last id handed out */
  _Atomic uint64_t full_fails; /* lookups that found the table full */
} gpd_intern_t;

/** Allocate a table of `capacity` entries (power of two). 0 or -errno. */
int gpd_intern_init(gpd_intern_t *t, uint64_t capacity);
void gpd_intern_free(gpd_intern_t *t);

/** Find or insert (parent, ip).  Returns the node id (> 0) or 0 when the
 *  table is full.  *is_new is set to 1 for the one caller that created it.
 *  Thread-safe, lock-free. */
uint32_t gpd_intern_get(gpd_intern_t *t, uint32_t parent, uint64_t ip, int *is_new);

/** Mark the id of a new entry as published (call after announcing). */
void gpd_intern_publish(gpd_intern_t *t, uint32_t parent, uint64_t ip, uint32_t id);

#endif
