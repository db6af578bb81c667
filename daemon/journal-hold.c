/* journal-hold.c - a frozen process's rings go on draining (journal.h,
 * docs/DAEMON.md "Frozen processes").  While the writer copies a
 * process's profile in chunks (gpd_proc_t.snap_frozen) the monitor may not
 * change the profile, yet its producers keep pushing.  The monitor then
 * appends each ring's published slots [rel, head) to the process's journal
 * without reading them and releases the ring (gpd_journal_hold); once the
 * copy is complete it reads those entries back from the journal and
 * ingests them (gpd_journal_apply), a budget per pass, and only then
 * consumes the rings again.  Meanwhile cursor[i] < rel[i] on a ring:
 *
 *   store (committed at cursor C) + journal [C, rel) + ring [rel, head)
 *
 * holds as before: the held entries are ordinary journal entries above
 * the applied cursor, so a successor replays them (gpd_journal_replay),
 * and a snapshot's cut (gpd_journal_cut) stops before the first segment
 * that holds them, so no commit deletes what the store does not have.
 * Held spans begin in a fresh segment (hold_seg).
 *
 * Bounds: per process GPD_JOURNAL_HOLD_MAX bytes and GPD_JOURNAL_HOLD_SEGS
 * segments held (a test sets others: gpd_journal_hold_bounds), within
 * its uid's journal budget (journal.c); a span past them stays in its
 * ring, as if the process were not drained (a full ring drops and
 * counts).
 *
 * Lock: d->lock held (the monitor's pass; one monitor thread per process
 * per pass).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "journal-internal.h"

static void hold_begin(gpd_pjournal_t *jr) {
  gpd__journal_seg_close(jr);
  jr->hold_on = 1;
  jr->hold_seg = jr->seg;
  jr->hold_written = jr->written;
  jr->rseg = jr->seg;
  jr->roff = sizeof(jhdr_t);
}

static void hold_end(gpd_pjournal_t *jr) {
  jr->hold_on = 0;
  free(jr->rbuf);
  jr->rbuf = NULL;
  jr->rcap = 0;
}

void gpd_journal_hold_bounds(gpd_daemon_t *d, uint64_t max_bytes, uint32_t max_segs) {
  if (d == NULL || d->journal == NULL)
    return;
  d->journal->hold_max = max_bytes;
  d->journal->hold_segs = max_segs;
}

uint64_t gpd_journal_hold(gpd_daemon_t *d, gpd_proc_t *p) {
  gpd_pjournal_t *jr = &p->jr;
  gpd_region_t *r = &p->region;
  if (d == NULL || d->journal == NULL || jr->rel == NULL || jr->failed || !p->has_region || p->bad)
    return 0;
  uint32_t hwm = atomic_load_explicit(&r->hdr->ring_hwm, memory_order_acquire);
  if (hwm > r->nrings)
    hwm = r->nrings;
  uint64_t slots = 0;
  for (uint32_t i = 0; i < hwm; i++) {
    gpd_ring_ctl_t *c = &r->ctl[i];
    uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&c->tail, memory_order_relaxed);
    uint64_t from = jr->rel[i];
    /* nothing new, or a ring the peer scribbled on: the consume judges it
     * once the process thaws */
    if (head <= from || tail > from || head - from > r->ring_slots)
      continue;
    uint64_t bytes = sizeof(jent_t) + (head - from) * GPD_SLOT_SIZE;
    if (jr->hold_on && (jr->written - jr->hold_written + bytes > d->journal->hold_max ||
                        jr->seg - jr->hold_seg >= d->journal->hold_segs)) {
      jr->skipped++;
      continue;
    }
    if (!jr->hold_on)
      hold_begin(jr);
    /* the ring's owner: the claim stored tid before its first push */
    uint32_t tid = atomic_load_explicit(&c->tid, memory_order_relaxed);
    if (gpd__journal_span(d, p, i, head, tid))
      slots += head - from;
  }
  return slots;
}

/* Every ring's applied cursor has reached its released position. */
static int caught_up(const gpd_proc_t *p) {
  for (uint32_t i = 0; i < p->region.nrings; i++)
    if (p->cursor[i] < p->jr.rel[i])
      return 0;
  return 1;
}

int64_t gpd_journal_apply(gpd_daemon_t *d, gpd_proc_t *p, uint64_t budget) {
  gpd_pjournal_t *jr = &p->jr;
  if (d == NULL || d->journal == NULL || !jr->hold_on || p->snap_frozen || p->cursor == NULL)
    return 0;
  int64_t n = 0;
  int fd = -1, missing = 0;
  uint32_t fdseg = 0;
  while (!caught_up(p) && (uint64_t)n < budget) {
    /* the newest segment that may exist */
    uint32_t last = jr->has_fd || jr->seg == 0 ? jr->seg : jr->seg - 1;
    if (fd < 0 || fdseg != jr->rseg) {
      char name[64];
      if (fd >= 0)
        close(fd);
      gpd__journal_seg_name(name, sizeof name, p->profile_id, jr->rseg);
      fd = openat(d->journal->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      fdseg = jr->rseg;
    }
    jent_t e;
    ssize_t k = fd < 0 ? 0 : gpd__journal_entry_read(fd, (off_t)jr->roff, p->region.nrings, p->region.ring_slots,
                                                      &e, &jr->rbuf, &jr->rcap);
    if (k < 0)
      break; /* out of memory: the next pass */
    if (k == 0) { /* the end of segment rseg (or no such file): the next one */
      if (jr->rseg < last) {
        jr->rseg++;
        jr->roff = sizeof(jhdr_t);
        continue;
      }
      missing = 1;
      break;
    }
    jr->roff += (uint64_t)k;
    uint64_t *cur = &p->cursor[e.ring];
    if (e.pos + e.nslots <= *cur)
      continue; /* applied already (consumed before the hold) */
    if (e.pos > *cur) { /* cannot happen: every held span starts at rel */
      GPD_WARN("profile %" PRIu64 ": ring %u: %" PRIu64 " slots missing from the journal", p->profile_id, e.ring,
               e.pos - *cur);
      *cur = e.pos;
    }
    int bad = 0;
    n += gpd__journal_feed(&p->prof, &e, jr->rbuf, cur, &bad);
    if (bad) {
      if (fd >= 0)
        close(fd);
      jr->held += (uint64_t)n;
      return GPD_EBADRECORD;
    }
  }
  if (fd >= 0)
    close(fd);
  jr->held += (uint64_t)n;
  if (missing && !caught_up(p)) {
    /* the journal ends before what was released: cannot happen unless
     * its files were removed under the daemon */
    uint64_t lost = 0;
    for (uint32_t i = 0; i < p->region.nrings; i++)
      if (p->cursor[i] < jr->rel[i]) {
        lost += jr->rel[i] - p->cursor[i];
        p->cursor[i] = jr->rel[i];
      }
    GPD_WARN("profile %" PRIu64 ": %" PRIu64 " ring slots released while frozen are not in its journal: lost",
             p->profile_id, lost);
  }
  if (caught_up(p))
    hold_end(jr);
  return n;
}
