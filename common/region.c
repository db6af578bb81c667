/* region.c - the shared-memory region and its SPSC rings (region.h).
 *
 * Memory ordering (region.h): the producer writes slots with plain stores
 * and publishes ctl->head with a release store; the consumer reads head
 * with an acquire load, copies the slots out, and publishes ctl->tail with
 * a release store, which the producer reads with an acquire load before it
 * reuses those slots.  pushed/drops/consumed have a single writer each and
 * are statistics: relaxed load + relaxed store, no read-modify-write.
 *
 * Ring reuse: gpd_ring_release() (and gpd_ring_consume() through it) sets
 * a RETIRED ring back to FREE once its tail reached head after the
 * producer retired.  gpd_ring_consume_at() reads from a private cursor
 * and never publishes tail: the daemon releases a position only after the
 * state built from it is committed to its store.  Counters are
 * never reset: the next owner continues from the current head.
 */
#include "gpuprof/region.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuprof/error.h"

#define RING_SLOTS_MIN 64u
#define RING_SLOTS_MAX (1u << 24)
#define NRINGS_MAX 65536u
#define PAGE 4096u

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

static void stat_inc(_Atomic uint64_t *c, uint64_t n) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

/** Geometry check shared by create and map.  Computes the region layout
 *  for (nrings, ring_slots) into *data_off / *size; overflow-safe. */
static int region_layout(uint64_t nrings, uint64_t ring_slots, uint64_t *data_off, uint64_t *size) {
  if (nrings < 1 || nrings > NRINGS_MAX || !is_pow2(ring_slots) || ring_slots < RING_SLOTS_MIN ||
      ring_slots > RING_SLOTS_MAX)
    return -EINVAL;
  /* nrings <= 2^16, ring_slots*GPD_SLOT_SIZE <= 2^30: no overflow in 64 bits. */
  uint64_t ctl_end = GPD_REGION_HDR_SIZE + nrings * GPD_RING_CTL_SIZE;
  *data_off = (ctl_end + PAGE - 1) & ~(uint64_t)(PAGE - 1);
  *size = *data_off + nrings * ring_slots * GPD_SLOT_SIZE;
  if (*size > SIZE_MAX || *size > (uint64_t)INT64_MAX)
    return -EINVAL;
  return 0;
}

static void region_fill(gpd_region_t *r, int fd, void *base, size_t size, uint32_t nrings,
                        uint32_t ring_slots, uint64_t ctl_off, uint64_t data_off) {
  r->fd = fd;
  r->base = base;
  r->size = size;
  r->nrings = nrings;
  r->ring_slots = ring_slots;
  r->hdr = base;
  r->ctl = (gpd_ring_ctl_t *)((uint8_t *)base + ctl_off);
  r->data = (uint8_t *)base + data_off;
}

int gpd_region_create(gpd_region_t *r, uint32_t nrings, uint32_t ring_slots, int32_t pid,
                      uint64_t profile_id) {
  uint64_t data_off, size;
  void *base = MAP_FAILED;
  int fd = -1;
  int err;

  memset(r, 0, sizeof *r);
  r->fd = -1;
  err = region_layout(nrings, ring_slots, &data_off, &size);
  if (err)
    return err;

  fd = memfd_create("gpuprof", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    err = -errno;
    goto fail;
  }
  if (ftruncate(fd, (off_t)size) < 0) {
    err = -errno;
    goto fail;
  }
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
    err = -errno;
    goto fail;
  }
  base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    err = -errno;
    goto fail;
  }
  /* The memfd is zero-filled: all rings FREE, all counters 0. */
  gpd_region_hdr_t *h = base;
  h->magic = GPD_REGION_MAGIC;
  h->version = GPD_REGION_VERSION;
  h->hdr_size = GPD_REGION_HDR_SIZE;
  h->size = size;
  h->nrings = nrings;
  h->ring_slots = ring_slots;
  h->ctl_off = GPD_REGION_HDR_SIZE;
  h->data_off = data_off;
  h->profile_id = profile_id;
  h->pid = pid;
  h->rec_types = GPD_REC_TYPE_MAX;
  h->slot_size = GPD_SLOT_SIZE;
  region_fill(r, fd, base, size, nrings, ring_slots, GPD_REGION_HDR_SIZE, data_off);
  return 0;

fail:
  if (fd >= 0)
    close(fd);
  return err;
}

/* Untrusted fd (the shim hands one back after a daemon restart): the file
 * must be sealed against shrinking (else truncation would SIGBUS us), and
 * every geometry field must be consistent with the file size. */
int gpd_region_map(gpd_region_t *r, int fd) {
  struct stat st;
  void *base = MAP_FAILED;
  size_t size;
  int err;

  memset(r, 0, sizeof *r);
  r->fd = -1;
  if (fd < 0)
    return -EBADF;
  if (fstat(fd, &st) < 0)
    return -errno;
  if (!S_ISREG(st.st_mode) || st.st_size < (off_t)GPD_REGION_HDR_SIZE)
    return GPD_EBADREGION;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK))
    return GPD_EBADREGION;
  if ((uint64_t)st.st_size > SIZE_MAX)
    return GPD_EBADREGION;
  size = (size_t)st.st_size;

  base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED)
    return -errno;

  /* Read each field once into locals; the peer may change the header. */
  const volatile gpd_region_hdr_t *h = base;
  uint64_t magic = h->magic, hsize = h->size, ctl_off = h->ctl_off, data_off = h->data_off;
  uint32_t version = h->version, hdr_size = h->hdr_size, nrings = h->nrings, ring_slots = h->ring_slots;
  uint32_t slot_size = h->slot_size;
  uint64_t want_data_off, want_size;

  err = GPD_EBADREGION;
  if (magic != GPD_REGION_MAGIC || hdr_size != GPD_REGION_HDR_SIZE)
    goto fail;
  if (version != GPD_REGION_VERSION || slot_size != GPD_SLOT_SIZE) {
    err = GPD_EBADVERSION;
    goto fail;
  }
  if (region_layout(nrings, ring_slots, &want_data_off, &want_size) < 0)
    goto fail;
  /* Offsets: the table after the header, data after the table, both
   * aligned; everything inside the file (no overflow: all terms bounded). */
  if (ctl_off < GPD_REGION_HDR_SIZE || ctl_off % 64 || data_off % 64)
    goto fail;
  if (ctl_off > size || (size - ctl_off) / GPD_RING_CTL_SIZE < nrings)
    goto fail;
  if (data_off < ctl_off + (uint64_t)nrings * GPD_RING_CTL_SIZE || data_off > size)
    goto fail;
  if ((size - data_off) / GPD_SLOT_SIZE / ring_slots < nrings)
    goto fail;
  if (hsize != size)
    goto fail;

  region_fill(r, fd, base, size, nrings, ring_slots, ctl_off, data_off);
  return 0;

fail:
  munmap(base, size);
  return err;
}

void gpd_region_close(gpd_region_t *r) {
  if (r->base && r->base != MAP_FAILED)
    munmap(r->base, r->size);
  if (r->fd > 0 || (r->fd == 0 && r->base))
    close(r->fd);
  memset(r, 0, sizeof *r);
  r->fd = -1;
}

/* ------------------------------------------------------------- producer */

int gpd_producer_claim(gpd_region_t *r, gpd_producer_t *p, uint32_t tid) {
  for (uint32_t i = 0; i < r->nrings; i++) {
    gpd_ring_ctl_t *c = &r->ctl[i];
    uint32_t expect = GPD_RING_FREE;
    if (atomic_load_explicit(&c->state, memory_order_relaxed) != GPD_RING_FREE)
      continue;
    if (!atomic_compare_exchange_strong_explicit(&c->state, &expect, GPD_RING_OWNED, memory_order_acq_rel,
                                                 memory_order_relaxed))
      continue;
    atomic_store_explicit(&c->tid, tid, memory_order_relaxed); /* before any head store (release) */
    /* Rings are claimed lowest index first, so the monitor need only look
     * below the high-water mark. */
    uint32_t hwm = atomic_load_explicit(&r->hdr->ring_hwm, memory_order_relaxed);
    while (hwm < i + 1 && !atomic_compare_exchange_weak_explicit(&r->hdr->ring_hwm, &hwm, i + 1,
                                                                 memory_order_release, memory_order_relaxed))
      ;
    p->ctl = c;
    p->slots = gpd_region_ring_data(r, i);
    p->mask = (uint64_t)r->ring_slots - 1;
    p->head = atomic_load_explicit(&c->head, memory_order_relaxed);
    p->tail_cache = atomic_load_explicit(&c->tail, memory_order_acquire);
    p->populated = p->head < (uint64_t)r->ring_slots ? p->head : UINT64_MAX;
    p->pop_pages = 1;
    return (int)i;
  }
  return -EBUSY;
}

void gpd_producer_retire(gpd_producer_t *p) {
  if (!p->ctl)
    return;
  /* Release: the consumer that sees RETIRED also sees the final head. */
  atomic_store_explicit(&p->ctl->state, GPD_RING_RETIRED, memory_order_release);
  memset(p, 0, sizeof *p);
}

/* First lap of a ring: its pages have never been written in this mapping,
 * and a first write faults.  On a PVM guest (shadow page tables) a fault
 * costs ~22 us of CPU per 4-KiB page; populating the pages ahead in
 * batches costs ~7 us per page (bench-ring's page row;
 * docs/PERFORMANCE.md).  Batches grow 1, 2, 4 .. 64 pages, so a thread that
 * pushes a few records populates at most twice the pages it writes.
 * Slot indices equal sequence numbers during the first lap (head <
 * ring_slots), so the batch is contiguous in the mapping.  A failure
 * (a kernel before 5.14: EINVAL) stops populating for this claim. */
#define RING_POPULATE_MAX_PAGES 64u
#define RING_SLOTS_PER_PAGE (PAGE / GPD_SLOT_SIZE)

static void producer_populate(gpd_producer_t *p, uint64_t upto) {
  uint64_t cap = p->mask + 1;
  while (p->populated < upto && p->populated < cap) {
    uint64_t start = p->populated & ~(uint64_t)(RING_SLOTS_PER_PAGE - 1);
    uint64_t end = start + (uint64_t)p->pop_pages * RING_SLOTS_PER_PAGE;
    if (end > cap)
      end = cap;
#ifdef MADV_POPULATE_WRITE
    if (madvise(p->slots + start * GPD_SLOT_SIZE, (size_t)(end - start) * GPD_SLOT_SIZE, MADV_POPULATE_WRITE) < 0) {
      p->populated = UINT64_MAX;
      return;
    }
#endif
    p->populated = end;
    if (p->pop_pages < RING_POPULATE_MAX_PAGES)
      p->pop_pages *= 2;
  }
  if (p->populated >= cap)
    p->populated = UINT64_MAX; /* first lap done: never called again */
}

/* One reservation at a time: reserve, write, commit. */
static int producer_reserve(gpd_producer_t *p, unsigned nslots, uint64_t *seq, int count_drop) {
  uint64_t cap = p->mask + 1;
  if (nslots == 0 || nslots > GPD_REC_MAX_SLOTS)
    return -E2BIG;
  if (p->head + nslots - p->tail_cache > cap) {
    p->tail_cache = atomic_load_explicit(&p->ctl->tail, memory_order_acquire);
    /* A tail beyond head (corrupted by someone else) looks full forever:
     * we drop rather than overwrite unread slots. */
    if (p->tail_cache > p->head || p->head + nslots - p->tail_cache > cap) {
      if (count_drop)
        stat_inc(&p->ctl->drops, 1);
      return -ENOSPC;
    }
  }
  if (__builtin_expect(p->head + nslots > p->populated, 0))
    producer_populate(p, p->head + nslots);
  *seq = p->head;
  return 0;
}

int gpd_producer_reserve(gpd_producer_t *p, unsigned nslots, uint64_t *seq) {
  return producer_reserve(p, nslots, seq, 1);
}

void gpd_producer_count_drop(gpd_producer_t *p) { stat_inc(&p->ctl->drops, 1); }

void gpd_producer_commit(gpd_producer_t *p, unsigned nslots) {
  p->head += nslots;
  atomic_store_explicit(&p->ctl->head, p->head, memory_order_release);
  stat_inc(&p->ctl->pushed, 1);
}

/* Push sets the copy's h.nslots to the slot count for len: callers need
 * not fill it (they must fill type, version and len). */
static int producer_push(gpd_producer_t *p, const void *rec, size_t len, int count_drop) {
  uint64_t seq;
  if (len < sizeof(gpd_rec_hdr_t) || len > GPD_REC_MAX_BYTES)
    return -E2BIG;
  unsigned nslots = (unsigned)((len + GPD_SLOT_SIZE - 1) / GPD_SLOT_SIZE);
  int err = producer_reserve(p, nslots, &seq, count_drop);
  if (err)
    return err;
  const uint8_t *src = rec;
  for (unsigned i = 0; i < nslots; i++) {
    uint8_t *dst = gpd_producer_slot(p, seq + i);
    size_t n = len - (size_t)i * GPD_SLOT_SIZE;
    if (n >= GPD_SLOT_SIZE) {
      memcpy(dst, src + (size_t)i * GPD_SLOT_SIZE, GPD_SLOT_SIZE);
    } else {
      memcpy(dst, src + (size_t)i * GPD_SLOT_SIZE, n);
      memset(dst + n, 0, GPD_SLOT_SIZE - n);
    }
  }
  ((gpd_rec_hdr_t *)gpd_producer_slot(p, seq))->nslots = (uint8_t)nslots;
  gpd_producer_commit(p, nslots);
  return 0;
}

int gpd_producer_push(gpd_producer_t *p, const void *rec, size_t len) {
  return producer_push(p, rec, len, 1);
}

int gpd_producer_try_push(gpd_producer_t *p, const void *rec, size_t len) {
  return producer_push(p, rec, len, 0);
}

/* ------------------------------------------------------------- consumer */

/* The ring is untrusted: head and tail are read once, checked, and every
 * slot is copied out before it is looked at.  On a bad record the cursor
 * stays on it (the records delivered before it are consumed). */
/* Prefetch distance of gpd_ring_consume_pf, in records: enough misses in
 * flight to cover a DRAM access at ~40 ns of work per record. */
#define GPD_RING_PF_AHEAD 12u

int gpd_ring_consume_pf(gpd_region_t *r, uint32_t i, uint64_t *cursor, unsigned max, gpd_ring_fn fn,
                        gpd_ring_pf_fn pf, void *arg, uint32_t *owner) {
  _Alignas(64) uint8_t buf[GPD_REC_MAX_BYTES];
  if (!r || i >= r->nrings || !fn || !cursor)
    return -EINVAL;
  gpd_ring_ctl_t *c = &r->ctl[i];
  const uint8_t *slots = gpd_region_ring_data(r, i);
  const uint64_t cap = r->ring_slots, mask = cap - 1;
  const uint64_t tail = atomic_load_explicit(&c->tail, memory_order_relaxed);
  const uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
  uint64_t pos = *cursor;
  unsigned n = 0, ahead_n = 0;
  int err = 0;

  if (tail > head || head - tail > cap || pos < tail || pos > head)
    return GPD_EBADRING;
  /* after the head (acquire): the claim stored tid before its first push */
  if (owner)
    *owner = atomic_load_explicit(&c->tid, memory_order_relaxed);

  /* pf sees the first slot of the record GPD_RING_PF_AHEAD records past
   * the one handed to fn (unvalidated: a bad nslots advances by one) */
  uint64_t ahead = pos;
  while (pf && ahead_n < GPD_RING_PF_AHEAD && ahead < head && ahead_n < max) {
    const uint8_t *s = slots + (ahead & mask) * GPD_SLOT_SIZE;
    pf(arg, s);
    unsigned ns = ((const gpd_rec_hdr_t *)s)->nslots;
    ahead += ns >= 1 && ns <= head - ahead ? ns : 1;
    ahead_n++;
  }
  while (n < max && pos < head) {
    uint64_t avail = head - pos;
    memcpy(buf, slots + (pos & mask) * GPD_SLOT_SIZE, GPD_SLOT_SIZE);
    unsigned ns = ((const gpd_rec_hdr_t *)buf)->nslots;
    if (ns < 1 || ns > avail) {
      err = GPD_EBADRECORD;
      break;
    }
    for (unsigned k = 1; k < ns; k++)
      memcpy(buf + (size_t)k * GPD_SLOT_SIZE, slots + ((pos + k) & mask) * GPD_SLOT_SIZE, GPD_SLOT_SIZE);
    size_t nbytes = (size_t)ns * GPD_SLOT_SIZE;
    /* the INVOKE (one slot, most records) checked inline, the rest by call */
    if (((const gpd_rec_hdr_t *)buf)->type != GPD_REC_INVOKE || !gpd_rec_invoke_ok((const void *)buf)) {
      err = gpd_rec_validate(buf, nbytes);
      if (err)
        break;
    }
    if (pf && ahead < head && ahead_n < max) {
      const uint8_t *s = slots + (ahead & mask) * GPD_SLOT_SIZE;
      pf(arg, s);
      unsigned as = ((const gpd_rec_hdr_t *)s)->nslots;
      ahead += as >= 1 && as <= head - ahead ? as : 1;
      ahead_n++;
    }
    fn(arg, buf, nbytes);
    pos += ns;
    n++;
  }
  *cursor = pos;
  if (n)
    stat_inc(&c->consumed, n);
  return err ? err : (int)n;
}

int gpd_ring_consume_at(gpd_region_t *r, uint32_t i, uint64_t *cursor, unsigned max, gpd_ring_fn fn,
                        void *arg) {
  return gpd_ring_consume_pf(r, i, cursor, max, fn, NULL, arg, NULL);
}

/* Only the consumer stores tail, so a plain load + store is enough for
 * monotonicity; the bounds keep a tail that a peer scribbled on from
 * being "repaired" into something that uncovers unread slots. */
void gpd_ring_release(gpd_region_t *r, uint32_t i, uint64_t upto) {
  if (!r || i >= r->nrings)
    return;
  gpd_ring_ctl_t *c = &r->ctl[i];
  uint64_t tail = atomic_load_explicit(&c->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
  if (upto > head)
    upto = head;
  if (upto > tail && upto - tail <= r->ring_slots) {
    /* Release: our reads of the slots happen before the producer reuses them. */
    atomic_store_explicit(&c->tail, upto, memory_order_release);
    tail = upto;
  }
  /* Drained a retired ring: hand it back for reuse.  The producer stored
   * RETIRED (release) after its last head store, so re-reading head after
   * an acquire load of state gives its final value. */
  if (tail == head && atomic_load_explicit(&c->state, memory_order_acquire) == GPD_RING_RETIRED &&
      atomic_load_explicit(&c->head, memory_order_acquire) == tail) {
    uint32_t expect = GPD_RING_RETIRED;
    atomic_compare_exchange_strong_explicit(&c->state, &expect, GPD_RING_FREE, memory_order_acq_rel,
                                            memory_order_relaxed);
  }
}

int gpd_ring_consume(gpd_region_t *r, uint32_t i, unsigned max, gpd_ring_fn fn, void *arg) {
  if (!r || i >= r->nrings || !fn)
    return -EINVAL;
  uint64_t cursor = atomic_load_explicit(&r->ctl[i].tail, memory_order_relaxed);
  int rc = gpd_ring_consume_at(r, i, &cursor, max, fn, arg);
  if (rc == GPD_EBADRING || rc == -EINVAL)
    return rc;
  /* also after a bad record: the prefix before it is consumed (the bad
   * record is before head, so no reclaim can happen then) */
  gpd_ring_release(r, i, cursor);
  return rc;
}

/* Pending slots (not records), clamped to [0, ring_slots]. */
uint64_t gpd_ring_pending(const gpd_region_t *r, uint32_t i) {
  if (!r || i >= r->nrings)
    return 0;
  gpd_ring_ctl_t *c = &r->ctl[i];
  uint64_t tail = atomic_load_explicit(&c->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
  if (tail >= head)
    return 0;
  return head - tail > r->ring_slots ? r->ring_slots : head - tail;
}
