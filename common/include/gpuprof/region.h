/* region.h - the shared-memory region of one process and its SPSC rings.
 *
 * Layout of the memfd (all offsets from the start, little-endian, x86-64):
 *
 *   [0, 4096)              gpd_region_hdr_t (versioned header)
 *   [4096, data_off)       nrings x gpd_ring_ctl_t (ring slot table, 256 B each)
 *   [data_off, size)       nrings x ring_slots x GPD_SLOT_SIZE record slots
 *
 * The daemon creates the memfd (gpd_region_create), sizes it, seals it
 * against shrink/grow (F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL) and passes
 * the fd to the shim (SCM_RIGHTS).  The shim maps it (gpd_region_map),
 * checks the header and keeps the fd, so that it can hand it back to a
 * restarted daemon.
 *
 * Rings: a producer thread claims a free ring once (CAS FREE -> OWNED on
 * ctl->state) and is then its only writer; the daemon's monitor thread is
 * its only reader.  head and tail are monotonic slot counters (never
 * wrapped; index = counter & (ring_slots-1)).  The producer writes slots,
 * then publishes head with a release store; the consumer reads head with
 * an acquire load, copies slots out, then publishes tail with a release
 * store.  A full ring drops the record and counts it in ctl->drops; the
 * producer never waits.  When a thread exits, the shim marks its ring
 * RETIRED; the daemon drains it and sets it FREE again for reuse.
 *
 * The daemon treats everything in the region as untrusted: it reads the
 * geometry only from its own copy (gpd_region_t fields), and re-checks
 * head/tail on every drain (gpd_ring_consume).
 */
#ifndef GPUPROF_REGION_H
#define GPUPROF_REGION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuprof/record.h"

#define GPD_REGION_MAGIC 0x314e474552445047ull /* "GPDREGN1" */
/* Version 2: 32-byte slots (record.h GPD_SLOT_SIZE, GPD_REC_VERSION 2) and
 * hdr.slot_size.  A shim and a daemon of different versions refuse each
 * other: the daemon's Hello check (GPD_PROTO_VERSION) and gpd_region_map's
 * version check on either side (GPD_EBADVERSION). */
#define GPD_REGION_VERSION 2u
/* Protocol version of the shim's Hello (proto/gpuprof.proto), bumped with
 * GPD_REGION_VERSION: 2 = regions and records of version 2. */
#define GPD_PROTO_VERSION 2u
#define GPD_REGION_HDR_SIZE 4096u
#define GPD_RING_CTL_SIZE 256u

/** Ring states (gpd_ring_ctl_t.state). */
enum {
  GPD_RING_FREE = 0,    /* unowned; a producer may claim it             */
  GPD_RING_OWNED = 1,   /* one producer thread writes it                 */
  GPD_RING_RETIRED = 2, /* producer gone; daemon drains then sets FREE   */
};

/** Region header.  Written by the daemon at creation; the shim only
 *  updates the atomic counters. */
typedef struct gpd_region_hdr_s {
  uint64_t magic;       /* GPD_REGION_MAGIC */
  uint32_t version;     /* GPD_REGION_VERSION */
  uint32_t hdr_size;    /* GPD_REGION_HDR_SIZE */
  uint64_t size;        /* bytes of the whole region */
  uint32_t nrings;      /* rings in the table */
  uint32_t ring_slots;  /* slots per ring, power of two */
  uint64_t ctl_off;     /* offset of the ring slot table */
  uint64_t data_off;    /* offset of ring 0's slots */
  uint64_t profile_id;  /* daemon's id of this process's profile */
  int32_t pid;          /* registered pid */
  _Atomic uint32_t ring_hwm; /* shim: 1 + highest ring index ever claimed
                                (the monitor scans only [0, hwm), clamped) */
  _Atomic uint64_t no_ring_drops; /* records dropped: no free ring */
  _Atomic uint64_t next_corr;     /* shim's correlation counter (survives daemon restart) */
  _Atomic uint32_t next_node;     /* shim's last node id */
  _Atomic uint32_t next_string;   /* shim's last string / module id */
  uint32_t rec_types; /* daemon: record types it accepts (its GPD_REC_TYPE_MAX);
                         0 from a daemon before this field: no CPUSAMPLE */
  uint32_t slot_size; /* GPD_SLOT_SIZE: bytes per ring slot (checked by map) */
} gpd_region_hdr_t;

/** One ring's control block, 4 cache lines so producer and consumer
 *  fields never share a line. */
typedef struct gpd_ring_ctl_s {
  _Alignas(64) _Atomic uint64_t head; /* producer: next slot to write */
  _Atomic uint64_t pushed;            /* producer: records pushed */
  _Atomic uint64_t drops;             /* producer: records dropped (full) */
  _Atomic uint32_t state;             /* GPD_RING_* */
  _Atomic uint32_t tid;               /* producer thread id (gettid), stored at
                                         claim before the first head store;
                                         the owner of every record in the ring
                                         (gpd_ring_consume_pf's `owner`) */
  _Alignas(64) _Atomic uint64_t tail; /* consumer: next slot to read */
  _Atomic uint64_t consumed;          /* consumer: records consumed */
  _Alignas(64) uint8_t reserved[128];
} gpd_ring_ctl_t;

_Static_assert(sizeof(gpd_ring_ctl_t) == GPD_RING_CTL_SIZE, "ring ctl");

/** A mapped region (private, per side).  Geometry fields are validated
 *  copies; never re-read them from hdr. */
typedef struct gpd_region_s {
  int fd;               /* memfd, owned */
  void *base;           /* mapping */
  size_t size;
  uint32_t nrings;
  uint32_t ring_slots;
  gpd_region_hdr_t *hdr;
  gpd_ring_ctl_t *ctl;  /* nrings entries */
  uint8_t *data;        /* nrings * ring_slots * GPD_SLOT_SIZE */
} gpd_region_t;

/** Daemon: create a sealed memfd region with `nrings` rings of
 *  `ring_slots` slots (power of two, 64..2^24) for process `pid`.
 *  Returns 0 or -errno (-EINVAL for bad geometry). */
int gpd_region_create(gpd_region_t *r, uint32_t nrings, uint32_t ring_slots,
                      int32_t pid, uint64_t profile_id);

/** Either side: map an existing region fd (takes ownership of fd on
 *  success) and validate its header: magic, version, slot size, sizes
 *  consistent with fstat().  Returns 0, -errno, GPD_EBADVERSION (another
 *  version or slot size: a shim or daemon of another release) or
 *  GPD_EBADREGION. */
int gpd_region_map(gpd_region_t *r, int fd);

/** Unmap and close. Safe on a zeroed struct. */
void gpd_region_close(gpd_region_t *r);

/** Slots of ring i. */
static inline uint8_t *gpd_region_ring_data(const gpd_region_t *r, uint32_t i) {
  return r->data + (size_t)i * r->ring_slots * GPD_SLOT_SIZE;
}

/* ---------------------------------------------------------------- rings */

/** Producer handle (private to the producer thread). */
typedef struct gpd_producer_s {
  gpd_ring_ctl_t *ctl;
  uint8_t *slots;
  uint64_t mask;        /* ring_slots - 1 */
  uint64_t head;        /* private copy of ctl->head */
  uint64_t tail_cache;  /* last tail seen; refreshed only when looking full */
  uint64_t populated;   /* first lap: slots below this are populated */
  uint32_t pop_pages;   /* pages the next populate covers (1, 2, 4 .. 64) */
} gpd_producer_t;

/** Shim: claim a FREE ring for the calling thread (CAS) and fill `p`.
 *  Returns the ring index or -EBUSY when none is free (the caller counts
 *  its records in hdr->no_ring_drops).  Wait-free. */
int gpd_producer_claim(gpd_region_t *r, gpd_producer_t *p, uint32_t tid);

/** Shim: mark the ring RETIRED (thread exit).  p is unusable after. */
void gpd_producer_retire(gpd_producer_t *p);

/** Shim: reserve `nslots` contiguous-in-sequence slots; returns 0 and the
 *  first slot's sequence number in *seq, or -ENOSPC (drop counted).
 *  Use gpd_producer_slot() to address them (they may wrap), then
 *  gpd_producer_commit().  Wait-free, no allocation.  During the ring's
 *  first lap (head < ring_slots) it populates the pages ahead with one
 *  madvise(MADV_POPULATE_WRITE) per 1, 2, 4 .. 64 pages (a first write
 *  per page costs 22 us of CPU on a PVM guest, 7 us this way); no syscall
 *  after the first lap, nor when the kernel lacks it (checked once per
 *  claim). */
int gpd_producer_reserve(gpd_producer_t *p, unsigned nslots, uint64_t *seq);
static inline void *gpd_producer_slot(gpd_producer_t *p, uint64_t seq) {
  return p->slots + (seq & p->mask) * GPD_SLOT_SIZE;
}
void gpd_producer_commit(gpd_producer_t *p, unsigned nslots);

/** Shim: push one record of `len` bytes (copied, zero-padded to slots).
 *  Sets h.nslots of the ring copy to the slot count for `len`; the caller
 *  fills type, version and h.len.  Returns 0 or -ENOSPC (dropped and
 *  counted) / -E2BIG (len < 8 or > GPD_REC_MAX_BYTES). */
int gpd_producer_push(gpd_producer_t *p, const void *rec, size_t len);

/** Shim: as gpd_producer_push, but a full ring returns -ENOSPC WITHOUT
 *  counting a drop: for a caller that may wait and retry (a vendor's own
 *  completion thread, never an application thread); it counts the record
 *  with gpd_producer_count_drop() if it finally gives up. */
int gpd_producer_try_push(gpd_producer_t *p, const void *rec, size_t len);
void gpd_producer_count_drop(gpd_producer_t *p);

/** Daemon: copy out and validate up to `max` records of ring i, calling
 *  `fn(arg, rec, nbytes)` for each valid record (rec is an aligned private
 *  copy valid during the call).  Stops at the first invalid record:
 *  returns the number of records consumed (>= 0), or a negative GPD_E*
 *  code when the ring is corrupt (head beyond tail + ring_slots, bad
 *  record): the caller must then stop trusting this region.  Publishes
 *  tail after the batch (also up to a bad record).  A RETIRED ring found
 *  drained is set FREE here.  Only the monitor thread calls it.
 *  = gpd_ring_consume_at from the shared tail + gpd_ring_release. */
typedef void (*gpd_ring_fn)(void *arg, const void *rec, size_t nbytes);
int gpd_ring_consume(gpd_region_t *r, uint32_t i, unsigned max, gpd_ring_fn fn,
                     void *arg);

/** Slots pending in ring i (head - tail, clamped to 0..ring_slots). */
uint64_t gpd_ring_pending(const gpd_region_t *r, uint32_t i);

/* Additive (daemon restart without loss): consume from a private cursor,
 * publish tail only once what was consumed is durably stored.  The shared
 * tail then always equals the position the daemon has committed, so a
 * restarted daemon that adopts the region (hand-back) re-reads exactly the
 * records whose effect was not stored ("commit the consumer position with
 * the state"). */

/** Daemon: like gpd_ring_consume, but reads from the private position
 *  *cursor (slot counter, same scale as head/tail) instead of the shared
 *  tail, and does NOT publish tail: consumed slots stay reserved (the
 *  producer cannot overwrite them) until gpd_ring_release().  The caller
 *  starts *cursor at the shared tail (ctl->tail) when it maps/adopts the
 *  region.  Reads up to the shared head (acquire).  Validation as in
 *  gpd_ring_consume: tail <= *cursor <= head and head - tail <= ring_slots,
 *  else GPD_EBADRING with nothing delivered and *cursor unchanged; a bad
 *  record stops the batch with *cursor on it (the records before it were
 *  delivered) and returns its GPD_E* code.  Returns the number of records
 *  delivered (>= 0).  Adds them to ctl->consumed (statistics: a record
 *  re-read after a daemon restart counts twice there).  Never changes
 *  ring state (no RETIRED -> FREE: see gpd_ring_release).  One consumer
 *  thread per ring; gpd_ring_release may run on another thread if the
 *  caller serializes it with this call (the daemon's state lock). */
int gpd_ring_consume_at(gpd_region_t *r, uint32_t i, uint64_t *cursor, unsigned max,
                        gpd_ring_fn fn, void *arg);
/** Prefetch hook of gpd_ring_consume_pf: `slot` is the first slot of a
 *  record in the shared ring, read in place and NOT validated (a peer may
 *  have written anything there): use it only to compute addresses to
 *  prefetch. */
typedef void (*gpd_ring_pf_fn)(void *arg, const void *slot);
/** gpd_ring_consume_at that also calls pf (may be NULL) on each record a
 *  few records before fn gets it, so that the lookups fn will make can be
 *  prefetched (the daemon's correlation maps miss the cache with ~1 M
 *  entries), and, when `owner` is not NULL, stores in *owner before the
 *  first fn call the thread id of the producer that pushed every record of
 *  this call (ctl->tid read after head: a ring changes owner only once the
 *  consumer drained and released it to FREE, serialized with this call; an
 *  untrusted value like the records).  Same results and rules as
 *  gpd_ring_consume_at. */
int gpd_ring_consume_pf(gpd_region_t *r, uint32_t i, uint64_t *cursor, unsigned max,
                        gpd_ring_fn fn, gpd_ring_pf_fn pf, void *arg, uint32_t *owner);

/** Daemon: publish tail = upto for ring i (release store), returning the
 *  slots before `upto` to the producer.  Monotonic: an `upto` at or below
 *  the current tail stores nothing; an `upto` beyond head is clamped to
 *  head; one more than ring_slots past the tail (never a cursor of
 *  gpd_ring_consume_at) is ignored.  Afterwards, if tail == head and the
 *  producer RETIRED the ring, it is set FREE for reuse (the only place the
 *  consumer side reclaims a ring).  No-op for a bad index. */
void gpd_ring_release(gpd_region_t *r, uint32_t i, uint64_t upto);

#endif
