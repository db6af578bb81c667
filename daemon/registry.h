/* registry.h - the registered processes of the node.
 *
 * Lock: the caller holds gpd_daemon_t.lock unless a function says otherwise. */
#ifndef GPD_DAEMON_REGISTRY_H
#define GPD_DAEMON_REGISTRY_H

#include <stdint.h>
#include <sys/types.h>

#include "gpuprof/region.h"

#include "access.h"
#include "journal.h"
#include "pcrotate.h"
#include "profile.h"

typedef struct gpd_daemon_s gpd_daemon_t;

enum { GPD_PROC_RUNNING = 0, GPD_PROC_ENDING = 1, GPD_PROC_EXITED = 2, GPD_PROC_LOST = 3 };

struct gpd_client_s;

/** Regions a uid holds (registry.c): one cell per uid that ever held one,
 *  in d->uid_held (list under d->reg_lock; never freed before
 *  gpd_registry_fini, so a process keeps a pointer to its uid's cell).
 *  n: atomic.  Bounded by max_procs_per_uid except for root; the monitor
 *  sizes each process's batch from it (monitor.c, fair_batch). */
typedef struct gpd_uid_held_s {
  struct gpd_uid_held_s *next;
  uid_t uid;
  unsigned n;
} gpd_uid_held_t;

/** One registered process. */
typedef struct gpd_proc_s {
  struct gpd_proc_s *next;
  uint64_t profile_id;
  pid_t pid, ppid;
  uid_t uid;
  gid_t gid;
  char *exe, *job_id, *step_id, *hostname, *argv_json;
  int job_verified;     /* job_id (and step_id) from its cgroup; 0: as the
                         * Hello claimed it (job.h) */
  char **argv;
  size_t argc;
  int32_t rank, local_rank;
  uint64_t start_ns, end_ns;
  /* the kernel's start time of pid (/proc/pid/stat field 22, clock ticks
   * after boot; 0 unknown): with pid and uid, who may hand back */
  uint64_t proc_start;
  int state;            /* GPD_PROC_* */
  int has_region;
  gpd_region_t region;
  /* Per ring (region.nrings entries, with the region): the monitor's
   * private read position (gpd_ring_consume_at), and the position last
   * committed to the store (ring_cursor table).  The shared tail is
   * released to a committed position only (writer, after COMMIT), so a
   * restarted daemon re-reads exactly what was not stored. */
  uint64_t *cursor;
  uint64_t *cursor_saved;
  int bad;              /* stopped trusting its region */
  int snap_frozen;      /* the writer is copying its profile in chunks (checkpoint.c):
                         * until then the monitor journals its rings without
                         * applying them (journal-hold.c; lock) */
  gpd_uid_held_t *held; /* its uid's count, which this entry adds 1 to until its
                         * region is detached (NULL: root, or not counted) */
  int mon_pinned;       /* where a monitor pass goes on after letting the
                         * writer in (monitor.c): not unlinked meanwhile (lock) */
  unsigned end_passes;  /* monitor passes since the connection's EOF (ENDING) */
  int snap_pinned;      /* in the writer's flush now (checkpoint.c): neither
                         * unlinked nor freed until that flush ends, so the
                         * writer reaches it without searching the list (lock) */
  char error[256];
  int store_error;      /* error holds the store's "not stored yet" text */
  gpd_profile_t prof;
  uint32_t rings_in_use; /* monitor's last count of non-FREE rings */
  uint64_t drops;       /* ring-full + no-ring drops (shim counters) */
  int meta_dirty;       /* profile row needs an upsert */
  int flushed;          /* EXITED and written by the writer */
  uint64_t flush_seq;   /* the writer's flush that last took it (checkpoint.c's per-uid turn) */
  uint32_t ends;        /* times the monitor finished it (finish_proc): a
                         * hand-back revives an EXITED entry, which may end
                         * again while the writer commits a snapshot of the
                         * first end; only a commit of the latest end may
                         * mark it flushed (lock held) */
  struct gpd_client_s *client; /* NULL after EOF */
  struct gpd_proc_s *eof_next; /* on d->eofs: EOF seen, not yet applied (reg_lock) */
  int eof_pending;             /* (reg_lock) */
  gpd_pjournal_t jr;    /* its ring journal (journal.c; d->lock) */
  uint32_t control_on;  /* bit k: Control kind k on (the shim's last ack;
                         * control.c, main thread, under the lock) */
  struct gpd_proc_policy_s *policy; /* collection policy state (policy.c; lock) */
  gpd_pcrot_proc_t pcrot; /* rotating PC-sampling windows (pcrotate.c; lock) */
} gpd_proc_t;

/** Take d->lock and move the processes registered meanwhile (the
 *  incoming list) into the registry.  Every thread that looks for a
 *  process, or may find the registry empty, takes the lock this way. */
void gpd_registry_lock(gpd_daemon_t *d);
/** Free d->uid_held (at exit, when no process entry is left). */
void gpd_registry_fini(gpd_daemon_t *d);
/** The writer's way to take d->lock: it says it waits (d->lock_want), so
 *  that a monitor pass lets it in between two processes instead of after
 *  every ring of every process; with adopt, as gpd_registry_lock. */
void gpd_registry_lock_writer(gpd_daemon_t *d, int adopt);
/** The same without waiting: 0 (locked, caller unlocks) or -EBUSY. */
int gpd_registry_trylock(gpd_daemon_t *d);

/** Registry (caller holds d->lock unless noted). */
gpd_proc_t *gpd_registry_add(gpd_daemon_t *d);
gpd_proc_t *gpd_registry_find(gpd_daemon_t *d, uint64_t profile_id);
gpd_proc_t *gpd_registry_find_pid(gpd_daemon_t *d, pid_t pid);
/** The entry of pid that peer may see (gpd_access_may_see; the running
 *  one first), or NULL: a pid of another user is answered as a pid nobody
 *  profiles, with one text (GPD_NO_PID_FMT), so that nobody learns of
 *  another user's processes. */
gpd_proc_t *gpd_registry_find_visible(gpd_daemon_t *d, const gpd_peer_t *peer, pid_t pid);
/** The one error text for a pid not profiled or not visible (-ESRCH). */
#define GPD_NO_PID_FMT "no profiled process %d"
/** Free p and what it owns: region, cursors, profile, policy state
 *  (registry-proc.c).  NULL is ignored. */
void gpd_registry_free_proc(gpd_proc_t *p);
/** Forget exited, flushed processes beyond `keep` (memory bound). */
void gpd_registry_trim(gpd_daemon_t *d, unsigned keep);
/** Count of processes not yet EXITED+flushed. */
unsigned gpd_registry_live(gpd_daemon_t *d);
/** Records dropped (ring full + no ring), rings in use, consumed. */
void gpd_registry_counters(const gpd_proc_t *p, uint32_t *rings, uint64_t *records, uint64_t *drops);

/** Handle a Hello from client `c` (main thread).  `fd` is an attached fd
 *  (-1 none; ownership taken).  Fills the reply fields; *reply_fd is the
 *  region fd to attach (borrowed) or -1.  Returns 0 or a negative code with
 *  errmsg set (refused). */
struct Gpuprof__Hello;
int gpd_registry_hello(gpd_daemon_t *d, struct gpd_client_s *c, const struct Gpuprof__Hello *h,
                       int fd, uint64_t *profile_id, int *reply_fd, char *errmsg, size_t errlen);
/** EOF on a process's connection: request the final drain (main thread;
 *  never waits for d->lock: when busy, applied by gpd_registry_lock). */
void gpd_registry_eof(gpd_daemon_t *d, gpd_proc_t *p);
/** Allocate p->cursor / p->cursor_saved for p->region, both at each
 *  ring's shared tail (a new or adopted region).  0 or -ENOMEM. */
int gpd_registry_cursors(gpd_proc_t *p);
/** The process's rings were released to the committed positions and it
 *  has EXITED: unmap the region, drop the cursors (lock held). */
void gpd_registry_close_region(gpd_proc_t *p);
/** The same, but the mapping is moved to *out for the caller to unmap
 *  with gpd_region_close once the lock is dropped (an unmap takes
 *  milliseconds); 1 moved, 0 there was none (lock held). */
int gpd_registry_detach_region(gpd_proc_t *p, gpd_region_t *out);

#endif
