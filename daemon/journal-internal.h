/* journal-internal.h - what journal.c and journal-hold.c share: the
 * segment and entry formats (docs/FORMATS.md, "Ring journal"), the
 * daemon-wide journal state, and the helpers both sides use.  Not for
 * other files: they call journal.h. */
#ifndef GPD_DAEMON_JOURNAL_INTERNAL_H
#define GPD_DAEMON_JOURNAL_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "journal.h"

typedef struct gpd_profile_s gpd_profile_t;

#define J_MAGIC "GPDJRNL1"
#define J_VERSION 1u
#define J_ENT_MAGIC 0x454a5047u /* "GPJE" */
#define J_MAX_SEGS 65536u       /* segments of one profile considered by a replay */

/* Segment file header (64 bytes, little-endian). */
typedef struct jhdr_s {
  char magic[8];
  uint32_t version, hdr_size;
  uint64_t profile_id; /* the profile it was first written for */
  uint32_t uid, gid;
  int32_t pid;
  uint32_t seg;
  uint64_t proc_start;
  uint32_t nrings, ring_slots;
  uint64_t hash; /* XXH3-64 of the 56 bytes above */
} jhdr_t;
_Static_assert(sizeof(jhdr_t) == 64, "journal header");

/* One span: nslots slots of ring `ring` from position pos follow. */
typedef struct jent_s {
  uint32_t magic, ring;
  uint64_t pos;
  uint32_t nslots, tid;
  uint64_t hash; /* XXH3-64 of the slots, seeded with that of the 24 bytes above */
} jent_t;
_Static_assert(sizeof(jent_t) == 32, "journal entry");

struct gpd_jacct_s {
  struct gpd_jacct_s *next;
  uid_t uid;
  uint64_t live; /* atomic: bytes appended, not yet deleted */
  uint64_t over; /* atomic: spans refused by the budget */
  uint64_t over_logged; /* atomic: `over` at the last log line about it */
  uint64_t over_log_ns; /* atomic: when that line was written (gpd_clock_ns) */
  uint64_t corr; /* atomic: correlation map entries of its processes (as published) */
};

struct gpd_journal_s {
  int dirfd;
  uint64_t uid_max;
  uint64_t live; /* atomic: bytes of every uid (bounded by 4 x uid_max) */
  pthread_mutex_t mu; /* accts list */
  gpd_jacct_t *accts;
  uint64_t last_sweep_ns; /* writer thread */
  uint64_t hold_max;   /* per process: bytes held while frozen (GPD_JOURNAL_HOLD_MAX) */
  uint32_t hold_segs;  /* per process: segments held (GPD_JOURNAL_HOLD_SEGS) */
};

/** The file name of segment seg of profile id into buf (n bytes). */
void gpd__journal_seg_name(char *buf, size_t n, uint64_t id, uint32_t seg);
/** Close the process's open segment, if any (the next append opens
 *  segment seg + 1). */
void gpd__journal_seg_close(gpd_pjournal_t *jr);
/** Read a segment's header from fd (a regular file of the daemon's euid,
 *  its hash checked): 0 or -EINVAL. */
int gpd__journal_hdr_read(int fd, jhdr_t *h);
/** Append ring `ring`'s slots [p->jr.rel[ring], to) to p's journal as one
 *  entry of thread tid, then release the ring to `to` (lock held).  A
 *  span over the uid's budget or not written (an error) stays in the
 *  ring.  Returns 1 released, 0 not. */
int gpd__journal_span(gpd_daemon_t *d, gpd_proc_t *p, uint32_t ring, uint64_t to, uint32_t tid);
/** Read the entry at byte offset off of a segment (fd) whose header says
 *  nrings and ring_slots: its header into *e and its slots into *buf
 *  (grown as needed, *cap bytes).  Returns the entry's bytes (header +
 *  slots), or 0 at the end of the segment or at an entry that is torn or
 *  does not check (-ENOMEM: no buffer). */
ssize_t gpd__journal_entry_read(int fd, off_t off, uint32_t nrings, uint32_t ring_slots, jent_t *e,
                                uint8_t **buf, size_t *cap);
/** Ingest the records of entry e (slots buf) that lie at or past *cur
 *  into pr, each validated again; *cur advances past each one.  Returns
 *  the records ingested; *bad set at a record that does not fit the
 *  entry or does not validate (those before it are ingested). */
int64_t gpd__journal_feed(gpd_profile_t *pr, const jent_t *e, const uint8_t *buf, uint64_t *cur, int *bad);

#endif
