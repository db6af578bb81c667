/* journal.h - the per-process ring journal: what lets the monitor release
 * ring slots before the writer commits them (docs/DAEMON.md, "Release
 * never waits for a commit"; file format in docs/FORMATS.md).
 *
 * Lock: the per-process functions run with d->lock held (the monitor's
 * pass, the writer's snapshot and release) unless noted; the daemon-wide
 * state (directory, per-uid accounts) has its own mutex and atomics. */
#ifndef GPD_DAEMON_JOURNAL_H
#define GPD_DAEMON_JOURNAL_H

#include <stdint.h>
#include <sys/types.h>

typedef struct gpd_daemon_s gpd_daemon_t;
typedef struct gpd_proc_s gpd_proc_t;
typedef struct gpd_journal_s gpd_journal_t;
typedef struct gpd_jacct_s gpd_jacct_t;

/** One process's journal (embedded in gpd_proc_t, zeroed with it).
 *  Segments are files <profile id>.<seg>.jnl; segments seg_lo .. seg may
 *  exist; a write opens segment seg when none is open.  rel[i] is ring i's
 *  released position: everything below it is committed or journaled (a
 *  private recorder's, --release-on-consume: or consumed). */
typedef struct gpd_pjournal_s {
  int fd, has_fd;       /* open segment (seg) */
  uint32_t seg, seg_lo;
  uint64_t *rel;        /* per ring, region.nrings entries, or NULL: off */
  uint64_t *from;       /* hand-back: committed positions (UINT64_MAX none) */
  uint64_t written;     /* bytes ever appended (all segments) */
  uint64_t freed;       /* bytes of segments deleted after commits */
  uint64_t skipped;     /* spans left in the ring: over budget or an error */
  gpd_journal_t *j;     /* the daemon's journal (NULL: not attached) */
  gpd_jacct_t *acct;    /* its uid's account */
  uint64_t corr_pub;    /* prof.corr.n last added to the account */
  int failed;           /* a write failed: journaling off for this process */
  /* Spans journaled while the writer copied the profile (journal-hold.c):
   * on a ring, cursor[i] < rel[i] while they are not yet applied. */
  int hold_on;          /* some are journaled, not yet applied */
  uint32_t hold_seg;    /* the first segment that holds them */
  uint64_t hold_written; /* `written` when the hold began */
  uint32_t rseg;        /* the apply reads segment rseg at byte roff next */
  uint64_t roff;
  uint8_t *rbuf;        /* its read buffer (rcap bytes), freed at the end */
  size_t rcap;
  uint64_t held;        /* records applied after a copy (ever; statistics) */
} gpd_pjournal_t;

/** What a snapshot closed (gpd_journal_cut): segments <= seg are covered
 *  by it once it is committed. */
typedef struct gpd_jcut_s {
  int any;          /* the process had segments */
  uint32_t lo, seg; /* segments lo .. seg */
  uint64_t written; /* p->jr.written at the cut */
} gpd_jcut_t;

/** Bytes of journal not yet committed per uid (all uids: 4x). */
#define GPD_JOURNAL_UID_MAX (512ull << 20)

/** Open <state dir>/journal (private, created 0700) and remove the
 *  segments of processes that are gone.  uid_max: bytes of live journal
 *  per uid (beyond: that uid's spans stay in its rings until a commit).
 *  d->journal stays NULL (journaling off: release at commit, as before)
 *  when the directory cannot be had (logged).  Main thread, before the
 *  threads start. */
int gpd_journal_open(gpd_daemon_t *d, const char *state_dir, uint64_t uid_max);
void gpd_journal_close(gpd_daemon_t *d);
/** Registration (or hand-back): per-ring released positions start at the
 *  cursors.  Lock not needed (p is not yet shared).  0 or -ENOMEM (then
 *  the process is released at commit only). */
int gpd_journal_attach(gpd_daemon_t *d, gpd_proc_t *p);
/** Monitor, after consuming ring i: append slots [rel[i], cursor[i]) to the
 *  process's journal and release the ring to cursor[i].  A span that is
 *  not written (over the uid's budget, a write error) stays unreleased
 *  until the writer's commit.  Returns 1 released, 0 not. */
int gpd_journal_append(gpd_daemon_t *d, gpd_proc_t *p, uint32_t ring);
/** Monitor of a private recorder (--release-on-consume), after it
 *  consumed ring `ring` and released it to its cursor without journaling
 *  the span: the released position follows the cursor, so that a hold
 *  (gpd_journal_hold) starts there.  Lock held; no-op without a journal. */
void gpd_journal_released(gpd_proc_t *p, uint32_t ring);
/** Writer's snapshot: close the open segment; later appends go to a new
 *  one.  Fills *cut. */
void gpd_journal_cut(gpd_proc_t *p, gpd_jcut_t *cut);
/** Writer, after the snapshot's COMMIT (lock held): the released positions
 *  catch up with the committed cursors and the cut's segments leave the
 *  budget.  Delete their files afterwards with gpd_journal_unlink. */
void gpd_journal_committed(gpd_proc_t *p, const gpd_jcut_t *cut, const uint64_t *cursor,
                           uint32_t ncursor);
/** Delete segments lo .. seg of profile_id (no lock; any thread). */
void gpd_journal_unlink(gpd_daemon_t *d, uint64_t profile_id, uint32_t lo, uint32_t seg);
/** Close the process's open segment (files stay).  Any lock. */
void gpd_journal_release(gpd_proc_t *p);
/** Hand-back (main thread, p private): replay the journal of profile
 *  `from_id` into p->prof from p->jr.from (or each ring's first entry),
 *  if its identity (uid, pid, start time, ring geometry) is p's.  The
 *  segments become p's (renamed when p got another profile id).  Then
 *  each ring's cursor is the end of what was replayed or the shared tail,
 *  whichever is ahead; the ring is released to it.  Returns records
 *  replayed, or a negative errno. */
int64_t gpd_journal_replay(gpd_daemon_t *d, gpd_proc_t *p, uint64_t from_id);
/** Bounds on what one process holds in its journal while frozen
 *  (journal-hold.c): bytes appended since the hold began, and segments. */
#define GPD_JOURNAL_HOLD_MAX (128ull << 20)
#define GPD_JOURNAL_HOLD_SEGS 256u
/** Tests: the per-process hold bounds of d's journal, in place of
 *  GPD_JOURNAL_HOLD_MAX (max_bytes appended since the hold began) and
 *  GPD_JOURNAL_HOLD_SEGS (max_segs segments).  No-op without a journal.
 *  Lock held, or before the monitor starts. */
void gpd_journal_hold_bounds(gpd_daemon_t *d, uint64_t max_bytes, uint32_t max_segs);
/** Monitor, for a process the writer is copying (p->snap_frozen) or whose
 *  held spans are not all applied yet: append every ring's published
 *  slots [rel, head) to the journal without reading them and release the
 *  ring there.  Past GPD_JOURNAL_HOLD_MAX / GPD_JOURNAL_HOLD_SEGS, the
 *  uid's budget or on a write error a span stays in its ring.  Returns
 *  the slots released; 0 also when p has no journal (d NULL, journal
 *  off, a private recorder). */
uint64_t gpd_journal_hold(gpd_daemon_t *d, gpd_proc_t *p);
/** Monitor, once p is no longer frozen: ingest the held records from the
 *  journal, about `budget` records (whole entries), in ring order;
 *  when every ring's cursor has reached its released position the hold
 *  ends and the rings are consumed again.  Returns the records ingested
 *  or GPD_EBADRECORD (a record that does not validate: p is bad). */
int64_t gpd_journal_apply(gpd_daemon_t *d, gpd_proc_t *p, uint64_t budget);
/** A uid's journal passed a quarter of its budget: wake the writer now
 *  (d->flush_now) and let that flush run before retention's share
 *  (d->journal_urgent, cleared when the flush starts).  Any thread; the
 *  monitor calls it with d->lock held, so the writer's wait cannot miss
 *  the signal. */
void gpd_journal_pressure(gpd_daemon_t *d);
/** Delete the segments of processes no longer alive (writer, about once
 *  a minute; and at open). */
void gpd_journal_sweep(gpd_daemon_t *d);
/** Has every_ns passed since the last sweep?  Writer thread. */
int gpd_journal_sweep_due(gpd_daemon_t *d, uint64_t every_ns);
/** Per-uid bound on unmatched invocations (correlation map entries) of
 *  all the uid's processes together; lower when the uid's share of the
 *  store (gpd_gpubin_uid_quota) holds fewer pending rows, at
 *  GPD_PENDING_ROW_BYTES each (the pending table keeps them: retention
 *  cannot remove a live profile's rows). */
#define GPD_UID_MAX_CORR (1u << 20)
#define GPD_PENDING_ROW_BYTES 64u
/** Monitor, before draining p: p's correlation map may hold what its
 *  uid's bound leaves after the uid's other processes (at least 4096,
 *  at most GPD_PROFILE_MAX_CORR); past it the oldest are evicted (their
 *  activities go to <unknown context>, counted), so one user's
 *  never-matched invocations cost only that user.  d NULL: the
 *  constant bound. */
void gpd_journal_corr_bound(const gpd_daemon_t *d, gpd_proc_t *p);
/** Monitor, after draining p: its map size into the uid's account. */
void gpd_journal_corr_publish(gpd_proc_t *p);
/** Live journal bytes of uid (tests, ps).  Any thread. */
uint64_t gpd_journal_uid_bytes(gpd_daemon_t *d, uid_t uid);

#endif
