/* dstore.h - the daemon's profile store: its handle (dstore.c,
 * gpd_dstore_*), writer thread (checkpoint.c, gpd_checkpoint_*),
 * hand-back (handback.c, gpd_handback_*), retention (retention.c,
 * gpd_retention_*) and GPU-binary files (gpubin.c, gpd_gpubin_*), on top
 * of store/ (which holds every SQL statement and owns the prefix
 * gpd_store_*: docs/STORE.md).
 *
 * Lock: each function says which thread calls it; flush takes
 * gpd_daemon_t.lock only to copy, never across SQLite calls. */
#ifndef GPD_DAEMON_DSTORE_H
#define GPD_DAEMON_DSTORE_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "registry.h"

typedef struct gpd_daemon_s gpd_daemon_t;
typedef struct gpd_dstore_s gpd_dstore_t;

/** Open (create) the database at path: schema (an older format is
 *  upgraded, a newer one refused), WAL, metric_desc; marks profiles left
 *  'running' by a dead daemon as 'lost'; reserves a block of profile ids.
 *  The file and its -wal/-shm must be regular files of the daemon's euid
 *  with one link (never a symbolic link); they are made 0600.  0 or
 *  GPD_ESTORE (logged). */
int gpd_dstore_open(gpd_dstore_t **out, const char *path);
void gpd_dstore_close(gpd_dstore_t *s);
/** First profile id this daemon may hand out: above every stored profile
 *  and every id a previous daemon reserved (meta next_profile_id). */
uint64_t gpd_dstore_first_profile_id(gpd_dstore_t *s);
struct sqlite3;
/** Another connection to the open store (same open rules: no links, busy
 *  timeout 10 s), for a thread with writes of its own (the devices
 *  sampler).  0 or GPD_ESTORE; the caller closes it with
 *  gpd_store_db_close (store-db.h). */
int gpd_dstore_connect(gpd_dstore_t *s, struct sqlite3 **db);
/** Hand out a fresh profile id (d->next_profile_id++) that is durably
 *  reserved, so that a killed daemon's successor never gives it again.
 *  Main thread, d->lock NOT held (taken inside).  Normally no I/O: the
 *  writer keeps a block reserved ahead; when that ran out, one short
 *  transaction on the main thread's connection.  0 or GPD_ESTORE. */
int gpd_dstore_take_profile_id(gpd_daemon_t *d, uint64_t *id);
/** Verify (and with create, first mkdir 0700) a private directory: not a
 *  symbolic link, owned by the daemon's euid, not writable by group or
 *  others; read/search bits for group/others are removed.  Returns an
 *  open O_DIRECTORY fd (caller closes) or a negative errno with errmsg. */
int gpd_dstore_private_dir(const char *dir, int create, char *errmsg, size_t errlen);
/** The writer's longest hold of the daemon lock since the store was opened
 *  or gpd_checkpoint_lock_max_reset, ns (also in the writer's stop line).  Any
 *  thread. */
uint64_t gpd_checkpoint_lock_max_ns(gpd_dstore_t *s);
void gpd_checkpoint_lock_max_reset(gpd_dstore_t *s);
/** How many new modules, strings, contexts, locals, metric and pending
 *  rows the writer copies per hold of the daemon lock after a process's
 *  snapshot (the hold that takes its cursors and journal cut; the process
 *  stays frozen until its copy is complete): 0 the default
 *  (GPD_CHECKPOINT_SNAP_CHUNK), UINT32_MAX the whole flush's snapshot in one
 *  hold (the benchmarks' baseline).  Before the writer starts. */
void gpd_checkpoint_snapshot_chunk(gpd_dstore_t *s, uint32_t n);
/** Writer thread: start / stop (stop does a last flush of everything). */
int gpd_checkpoint_writer_start(gpd_daemon_t *d);
void gpd_checkpoint_writer_stop(gpd_daemon_t *d);
/** Copy dirty data under d->lock and write it in one transaction.  Any
 *  thread but only one at a time (the writer, or main after it stopped).
 *  Returns 0 or GPD_ESTORE. */
int gpd_checkpoint_flush(gpd_daemon_t *d);
/** Hand-back: reload profile_id's CCT, strings, modules and metrics into
 *  p->prof if the stored profile has uid `uid`, re-feed its persisted
 *  unmatched records (table pending) and move p->cursor of each ring to
 *  its committed position (table ring_cursor) where that is ahead of the
 *  shared tail (a daemon killed between COMMIT and release), releasing
 *  it; with a journal (p->jr.from) the positions go there instead and
 *  gpd_journal_replay moves the cursors.  p->region and p->cursor must be
 *  set up (gpd_registry_cursors).
 *  1 loaded, 0 not found or other uid, <0 error.  Main thread, own
 *  connection. */
int gpd_handback_load(gpd_dstore_t *s, gpd_proc_t *p, uid_t uid);
/** The writer's flush as retention runs it between two of its
 *  transactions (gpd_checkpoint_flush): 0 or GPD_ESTORE, which the flush logs
 *  itself. */
typedef int (*gpd_retention_flush_fn)(gpd_daemon_t *d);
/** Retention pass (writer thread, after a flush; retention.c): finished
 *  profiles by age, by per-uid share, by store size, and what only they
 *  referred to, in transactions of about 10 ms; between two, when a flush
 *  is due (cfg.flush_ms since the last, or flush_now) it calls flush
 *  (the writer passes gpd_checkpoint_flush; NULL: none), and returns early (0)
 *  once d->writer_stop is set, leaving the rest on the work lists for the
 *  next pass.  The flush comes in as an argument so that retention sits
 *  below the writer (checkpoint.c), not beside it.  0 or GPD_ESTORE. */
int gpd_retention_run(gpd_daemon_t *d, gpd_retention_flush_fn flush);
/** At start: the newest `keep` stored profiles back into the live view
 *  (EXITED, or LOST while their process may still hand back).  Returns
 *  how many, or a negative code.  Main thread, before the threads start. */
int gpd_handback_restore(gpd_daemon_t *d, unsigned keep);

/** GPU binary upload in progress on one connection.  fd: the private
 *  temporary file (-1 none, -2 already stored: chunks are swallowed);
 *  tmp: its unique name inside the gpubins directory dirfd (borrowed from
 *  the store, valid while fd >= 0). */
typedef struct gpd_gpubin_s {
  char hash[33];
  char kind[32];
  uint64_t total, received;
  int fd;
  int dirfd;
  char tmp[96];
  uint32_t uid;
  /* on the store's list of uploads in progress (reg_lock): its hash is
   * not removed by retention, its bytes count in its uid's quota */
  gpd_dstore_t *listed;
  struct gpd_gpubin_s *prev, *next;
} gpd_gpubin_t;

#define GPD_GPUBIN_MAX_BYTES (512ull << 20)
struct Gpuprof__GpuBinary;
/** Store one chunk of a binary of profile_id, whose process runs as uid
 *  (main thread).  A new binary (no file of that hash yet) is refused
 *  with -EDQUOT when it would take the uid past its quota
 *  (gpd_gpubin_uid_quota): what retention last counted as undeletable
 *  (its running profiles and their binaries), plus binaries committed
 *  since, queued, and being uploaded, plus this one.  0, or a negative
 *  code with errmsg. */
int gpd_gpubin_store(gpd_daemon_t *d, gpd_gpubin_t *g, uint64_t profile_id, uint32_t uid,
                     const struct Gpuprof__GpuBinary *m, char *errmsg, size_t errlen);
void gpd_gpubin_abort(gpd_gpubin_t *g);
/** A uid's share of the store in bytes: [store] retention_uid_max_bytes,
 *  or half of retention_max_bytes when that is 0; 0 = no limit. */
uint64_t gpd_gpubin_uid_quota(const gpd_daemon_t *d);

#endif
