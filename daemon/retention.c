/* retention.c - the store's retention pass (writer thread, after a
 * flush): removes finished profiles by age, by per-uid quota and by the
 * store's size, then the contexts, frames and GPU binaries no profile
 * refers to any more (docs/DAEMON.md "Retention", docs/FORMATS.md).
 *
 * Fast: the statements (store/purge.c) are index lookups or ranges, and
 * a profile's rows go a chunk at a time, so the cost is what is removed,
 * not the size of the store.
 *
 * Never holds the writer: work runs in short transactions, each committed
 * once it ran TXN_BUDGET_NS; between two, the lock stays free for GAP_US
 * (the other connections' turn), a flush that is due (interval or
 * flush_now) runs, and a stopping daemon (SIGTERM: retain_stop, or
 * writer_stop) ends the pass.  A
 * removal that spans transactions is kept in work lists in the database
 * (retain_drop: profiles whose row is gone and whose data is being
 * removed; retain_ctx: contexts that may have lost their last reference;
 * retain_bin: binaries that may have), so that the next pass, or the next
 * daemon, finishes it.  The profile row goes in the first transaction:
 * readers never see half a profile.
 *
 * Fair: each uid has a share (gpd_gpubin_uid_quota).  Its use is estimated
 * (profile_size: rows times a per-table size, plus text lengths; its
 * contexts and frames; the GPU binaries its profiles sent, each counted
 * whole for every uid that sent it).  Victims, oldest finished first:
 *   1. profiles that ended more than retention_max_age_s ago (any uid);
 *   2. a uid over its share loses its own oldest, the uid furthest over
 *      first, until it is within; no one else's profile goes for it;
 *   3. while the store (database pages in use + its -wal file + GPU
 *      binaries) is over retention_max_bytes and no uid is over its
 *      share, the uid furthest over its share (use - share largest) among
 *      those using more than an equal part of the limit (limit / uids)
 *      loses its oldest.
 * A profile live in memory (running, or lost and waiting for a hand-back)
 * is never removed.  What bounds the live part instead: each count gives
 * every uid an allowance of new trace rows (admit_publish, trace.h), the
 * uid's unmatched invocations (the pending rows) are bounded by its share
 * (journal.h), its uploads by its share (gpubin.c).
 *
 * Pace: while the store is over its limit, the pass works as long as the
 * writer's last flush took, at most flush_interval_ms, before it runs the
 * next (rt_check), and running profiles are sized every second.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "dstore-internal.h"
#include "store-purge.h"
#include "sizer.h"

#define TXN_BUDGET_NS (10ull * 1000000)    /* a transaction commits after this */
#define RESIZE_RUNNING_NS (10ull * 1000000000) /* a running profile's size, this often */
#define RESIZE_URGENT_NS (1ull * 1000000000) /* and while the store is over its limit */
#define USE_EVERY_NS (10ull * 1000000000)  /* per-uid use counted at least this often */
#define MAX_ROUNDS 4096                    /* profiles removed per pass at most */
#define FREE_SLACK (1ll << 20)             /* free pages kept in the file at most, bytes */
#define GAP_US 3000                        /* the lock left free after a transaction */
#define RT_SLOW_STEP_NS 300000000ull       /* a stretch without a flush point this long is logged */
#define RT_SLOW_EVERY_NS 10000000000ull    /* at most one such line this often */

typedef struct {
  uint64_t id;
  uint32_t uid;
} live_t;

/* One pass's state (writer thread). */
typedef struct {
  gpd_daemon_t *d;
  gpd_dstore_t *s;
  sqlite3 *db;
  gpd_store_purge_t *pg; /* the pass's statements */
  uint64_t t_txn;   /* when the open transaction began; 0: none open */
  uint64_t t_flush; /* the last flush */
  gpd_retention_flush_fn flush; /* the writer's, run when one is due; NULL none */
  live_t *live;     /* profiles live in memory: never removed */
  size_t nlive;
  uint64_t removed0; /* s->rstats.profiles when the pass began */
  int urgent;        /* the store is over retention_max_bytes: rt_check's share */
  const char *what;  /* the step running now (slow-step lines) */
  uint64_t flush_ns; /* time spent in flushes run from rt_check */
  uint64_t t_step;   /* when the last flush point returned */
} rt_t;

enum { RT_STOP = 1 }; /* the writer is stopping: end the pass */

/* The profiles live in memory (daemon lock taken briefly).  0 or -ENOMEM. */
static int live_list(rt_t *r) {
  gpd_daemon_t *d = r->d;
  free(r->live);
  r->nlive = 0;
  gpd_registry_lock(d);
  r->live = calloc(d->nprocs + 1, sizeof *r->live);
  for (gpd_proc_t *p = d->procs; p && r->live; p = p->next)
    if (p->state != GPD_PROC_EXITED) {
      r->live[r->nlive].id = p->profile_id;
      r->live[r->nlive++].uid = (uint32_t)p->uid;
    }
  pthread_mutex_unlock(&d->lock);
  return r->live ? 0 : -ENOMEM;
}

/* Which profiles are live: a count is redone when it changes (a process
 * that ended no longer holds its uid's uploads back). */
static uint64_t live_sig(const rt_t *r) {
  uint64_t sig = r->nlive;
  for (size_t i = 0; i < r->nlive; i++)
    sig += (r->live[i].id + 1) * 0x9e3779b97f4a7c15ull;
  return sig;
}

static int is_live(const rt_t *r, int64_t id) {
  for (size_t i = 0; i < r->nlive; i++)
    if ((int64_t)r->live[i].id == id)
      return 1;
  return 0;
}

static int rt_begin(rt_t *r) {
  if (r->t_txn)
    return 0;
  if (gpd_store_db_begin(r->db) < 0)
    return GPD_ESTORE;
  r->t_txn = gpd_clock_ns();
  return 0;
}

static int rt_commit(rt_t *r) {
  if (r->t_txn == 0)
    return 0;
  int err = gpd_store_db_commit(r->db);
  uint64_t dt = gpd_clock_ns() - r->t_txn;
  r->s->rstats.txn_slow += dt > 100000000ull;
  r->t_txn = 0;
  r->s->rstats.txns++;
  if (dt > r->s->rstats.txn_max_ns)
    r->s->rstats.txn_max_ns = dt;
  return err;
}

/* The stretch since the last flush point (r->what ran): the longest is
 * kept, one of RT_SLOW_STEP_NS or more logged (at most one line per
 * RT_SLOW_EVERY_NS, with the count since): every commit of every process
 * waits through such a stretch. */
static void step_time(rt_t *r, uint64_t now) {
  gpd_retain_stats_t *st = &r->s->rstats;
  uint64_t dt = now - r->t_step;
  r->t_step = now;
  if (dt > st->step_max_ns)
    st->step_max_ns = dt;
  if (dt < RT_SLOW_STEP_NS)
    return;
  st->slow_steps++;
  if (st->slow_log_ns && now - st->slow_log_ns < RT_SLOW_EVERY_NS)
    return;
  GPD_INFO("store: retention ran %.0f ms without a flush point (%s; %llu such stretches since the last "
           "line)", (double)dt / 1e6, r->what ? r->what : "pass", (unsigned long long)(st->slow_steps - st->slow_logged));
  st->slow_logged = st->slow_steps;
  st->slow_log_ns = now;
}

/* Between two steps: once the transaction ran its budget, commit it, run
 * a flush that is due, and end the pass if the writer is stopping.
 * 0 go on, RT_STOP, or a negative code. */
static int rt_check(rt_t *r) {
  gpd_daemon_t *d = r->d;
  uint64_t now = gpd_clock_ns();
  step_time(r, now);
  if (r->t_txn && now - r->t_txn < TXN_BUDGET_NS)
    return 0;
  int had = r->t_txn != 0;
  int err = rt_commit(r);
  if (err < 0)
    return err;
  if (__atomic_load_n(&d->writer_stop, __ATOMIC_RELAXED) ||
      __atomic_load_n(&d->retain_stop, __ATOMIC_RELAXED))
    return RT_STOP;
  /* The tracing threads and the device sampler write through their own
   * connections; their busy handler retries at intervals up to 100 ms and
   * would rarely find the lock free between two transactions that follow
   * each other at once. */
  if (had)
    usleep(GAP_US);
  uint32_t ms = __atomic_load_n(&d->cfg.flush_ms, __ATOMIC_RELAXED);
  uint64_t since = now - r->t_flush;
  ms = ms ? ms : 1000;
  /* The store over its limit: retention works as long as the last flush
   * took before the next one runs (half of the writer's time, whatever
   * asks for flushes: a slow flush does not leave the pass one short
   * transaction per flush while the store grows), but never longer than
   * the flush interval: a flush slowed by one uid's volume must not
   * lengthen the next wait for every process's commit in turn. */
  uint64_t share = r->s->flush_last_ns < (uint64_t)ms * 1000000 ? r->s->flush_last_ns : (uint64_t)ms * 1000000;
  /* a uid's journal filling up (gpd_journal_pressure): its rings fill
   * next, so the commit goes first */
  if (r->urgent && since < share && !__atomic_load_n(&d->journal_urgent, __ATOMIC_RELAXED))
    return 0;
  if (__atomic_load_n(&d->flush_now, __ATOMIC_RELAXED) || since >= (uint64_t)ms * 1000000) {
    __atomic_store_n(&d->flush_now, 0, __ATOMIC_RELAXED);
    uint64_t t_fl = gpd_clock_ns();
    if (r->flush) {
      r->flush(d); /* a failure is the flush's to log and retry */
      r->s->flush_last_ns = gpd_clock_ns() - t_fl;
      r->flush_ns += r->s->flush_last_ns;
    }
    r->t_flush = gpd_clock_ns();
    r->t_step = r->t_flush;
    r->s->rstats.flushes++;
    if ((err = live_list(r)) < 0)
      return err;
  }
  return 0;
}

/* Every row of profile id (uid), a chunk at a time; the contexts and
 * binaries it referred to become candidates.  0, RT_STOP or < 0. */
static int purge(rt_t *r, int64_t id, int64_t uid) {
  int err = 0;
  r->what = "removing a profile's rows";
  for (unsigned k = 0; k < gpd_store_purge_tables() && err == 0; k++) {
    for (;;) {
      int more = 0;
      if ((err = rt_begin(r)) < 0 || (err = gpd_store_purge_rows(r->pg, k, id, uid, &more)) < 0)
        break;
      if ((err = rt_check(r)) != 0 || !more)
        break;
    }
  }
  if (err == 0 && (err = rt_begin(r)) == 0)
    err = gpd_store_purge_dropped(r->pg, id);
  return err;
}

/* Contexts on the candidate list that nothing refers to any more (no
 * metric or cct_local row of a profile of their uid, no child): removed
 * with their frames, and their parent becomes a candidate.  Roots stay.
 * 0, RT_STOP or < 0. */
static int sweep_contexts(rt_t *r) {
  int err = 0;
  r->what = "removing unused contexts";
  for (;;) {
    int64_t u[64], c[64];
    if ((err = rt_begin(r)) < 0)
      return err;
    int n = gpd_store_purge_ctx_list(r->pg, u, c, 64);
    if (n == 0)
      return 0;
    for (int i = 0; i < n; i++) {
      int rm = gpd_store_purge_ctx(r->pg, u[i], c[i]);
      if (rm < 0)
        return rm;
      r->s->rstats.contexts += (uint64_t)rm;
    }
    if ((err = rt_check(r)) != 0)
      return err;
  }
}

/* The gpubins folder for unlinks, opened once (no folder: no files). */
static int bin_dir(gpd_dstore_t *s) {
  if (s->rbindir >= 0)
    return s->rbindir;
  char dir[PATH_MAX + 16], msg[256];
  snprintf(dir, sizeof dir, "%s/gpubins", s->dir);
  int fd = gpd_dstore_private_dir(dir, 0, msg, sizeof msg);
  if (fd >= 0)
    s->rbindir = fd;
  return fd;
}

/* Binaries on the candidate list that no profile refers to: the file and
 * the row go, unless the hash is queued or being uploaded (then it stays
 * listed: the upload adds a reference).  0, RT_STOP or < 0. */
static int sweep_bins(rt_t *r) {
  r->what = "removing unused binaries";
  char last[33] = "", h[64][33];
  int err = 0;
  for (;;) {
    int n = 0;
    if ((err = rt_begin(r)) < 0)
      return err;
    n = gpd_store_purge_bin_list(r->pg, last, h, 64);
    if (n == 0)
      return 0;
    for (int i = 0; i < n; i++) {
      memcpy(last, h[i], sizeof last);
      int used = gpd_store_purge_bin_used(r->pg, h[i]);
      int busy = 0;
      if (!used) {
        int dfd = gpd__gpubin_valid_hash(h[i]) ? bin_dir(r->s) : -1;
        pthread_mutex_lock(&r->d->reg_lock);
        busy = gpd__gpubin_busy(r->s, h[i]);
        if (!busy && dfd >= 0) {
          char name[64];
          snprintf(name, sizeof name, "%.32s.gpubin", h[i]);
          unlinkat(dfd, name, 0); /* ENOENT: gone already */
        }
        pthread_mutex_unlock(&r->d->reg_lock);
        if (!busy) {
          if (gpd_store_purge_bin_drop(r->pg, h[i]) < 0)
            return GPD_ESTORE;
          r->s->rstats.gpubins++;
        }
      }
      if (!busy) {
        if (gpd_store_purge_bin_done(r->pg, h[i]) < 0)
          return GPD_ESTORE;
      }
    }
    if ((err = rt_check(r)) != 0)
      return err;
  }
}

/* Once per daemon: files in gpubins/ that no row names (a daemon killed
 * between the rename and the commit of its row) and temporary files with
 * no upload of their hash in progress (a killed daemon's).  Best effort:
 * no error of its own. */
static int sweep_stray_files(rt_t *r) {
  int dfd = bin_dir(r->s), err = 0;
  if (dfd < 0)
    return 0;
  int fd = dup(dfd);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  if (dir == NULL) {
    if (fd >= 0)
      close(fd);
    return 0;
  }
  struct dirent *e;
  unsigned n = 0;
  while ((e = readdir(dir)) != NULL) {
    char h[33] = "";
    size_t len = strlen(e->d_name);
    if (len == 32 + 7 && strcmp(e->d_name + 32, ".gpubin") == 0) {
      memcpy(h, e->d_name, 32);
      if (!gpd__gpubin_valid_hash(h))
        continue;
      if (gpd_store_purge_bin_stored(r->pg, h))
        continue;
    } else if (e->d_name[0] == '.' && len > 34 + 4 && e->d_name[33] == '.' &&
               strcmp(e->d_name + len - 4, ".tmp") == 0) {
      memcpy(h, e->d_name + 1, 32); /* .<hash>.<pid>.<n>.<random>.tmp (gpubin.c) */
    } else {
      continue; /* "." and "..", what gpubin.c does not make */
    }
    pthread_mutex_lock(&r->d->reg_lock);
    if (!gpd__gpubin_busy(r->s, h)) /* an upload of that hash: maybe its file */
      unlinkat(dfd, e->d_name, 0);
    pthread_mutex_unlock(&r->d->reg_lock);
    if (++n % 64 == 0 && (err = rt_check(r)) != 0)
      break;
  }
  closedir(dir);
  return err;
}

/* Removals left unfinished (by the last pass or a previous daemon) and
 * candidates left on the lists.  0, RT_STOP or < 0. */
static int finish_removals(rt_t *r) {
  r->what = "finishing removals";
  int err;
  for (;;) {
    if ((err = rt_begin(r)) < 0)
      return err;
    int64_t id = -1, uid = 0;
    if (!gpd_store_purge_next_drop(r->pg, &id, &uid))
      break;
    if ((err = purge(r, id, uid)) != 0)
      return err;
  }
  if ((err = sweep_contexts(r)) != 0)
    return err;
  return sweep_bins(r);
}

/* Remove profile id: its row now (one transaction with the work-list
 * entry), then its rows and what only it referred to. */
static int drop(rt_t *r, int64_t id, int64_t uid, const char *why) {
  int err = rt_begin(r);
  if (err < 0)
    return err;
  if (gpd_store_purge_drop(r->pg, id) < 0)
    return GPD_ESTORE;
  GPD_INFO("store: retention removed profile %lld (uid %lld: %s)", (long long)id, (long long)uid,
           why);
  r->s->rstats.profiles++;
  if ((err = purge(r, id, uid)) != 0)
    return err;
  if ((err = sweep_contexts(r)) != 0)
    return err;
  return sweep_bins(r);
}

/* Estimate the size of profiles never counted, running ones every
 * RESIZE_RUNNING_NS, and ended ones once more.  The counts (long for a
 * large running profile) run outside any transaction; their
 * results are written 64 at a time.  0, RT_STOP or < 0. */
static int size_profiles(rt_t *r) {
  uint64_t now = gpd_clock_ns();
  r->what = "sizing profiles";
  gpd_sizer_urgent(r->d, r->urgent);
  if (r->d->sizer) { /* estimated on the sizer's connection: only stored here */
    static gpd_size_res_t res[GPD_SIZER_MAX]; /* writer thread only */
    uint32_t n = gpd_sizer_take(r->d, res, GPD_SIZER_MAX);
    int err = n ? rt_begin(r) : 0;
    for (uint32_t i = 0; i < n && err == 0; i++)
      if (gpd_store_purge_size_set(r->pg, res[i].id, res[i].uid, res[i].bytes, res[i].final, res[i].t_ns) < 0)
        err = GPD_ESTORE;
    return err;
  }
  /* an ended profile's size is final once the tracing threads committed
   * everything pushed before its end (its trace rows come after the
   * flush that stored it ended) */
  uint64_t tf = r->d->trace ? gpd_trace_flushed_ns(r->d->trace) : UINT64_MAX;
  int64_t traced = tf > INT64_MAX ? INT64_MAX : (int64_t)tf;
  int err = 0;
  for (;;) {
    int64_t id[64], uid[64], run[64], bytes[64];
    int n = 0;
    if ((err = rt_commit(r)) < 0)
      return err;
    /* the store over its limit: running profiles' sizes at most 1 s old
     * (their uid's trace allowance is what is left of its share) */
    /* ... but at most a quarter of the writer's time: counting a running
     * profile of millions of trace rows takes long, and every process's
     * commit waits between two counts */
    uint64_t every = r->urgent ? RESIZE_URGENT_NS : RESIZE_RUNNING_NS;
    if (every < 4 * r->s->rstats.size_ns)
      every = 4 * r->s->rstats.size_ns;
    n = gpd_store_purge_size_todo(r->pg, (int64_t)(now - every), traced, (int64_t)now, id, uid, run, 64);
    if (n == 0)
      return 0;
    /* a running profile's trace rows: what its tracing threads were
     * handed, from memory (no count over the table) */
    int64_t events[64];
    gpd_sizer_events(r->d, id, run, n, events);
    for (int i = 0; i < n; i++) {
      bytes[i] = gpd_store_purge_size_of(r->pg, id[i], events[i]);
      if ((err = rt_check(r)) != 0) /* no transaction open: a stop and flush point */
        return err;
    }
    if ((err = rt_begin(r)) < 0)
      return err;
    for (int i = 0; i < n; i++) {
      if (gpd_store_purge_size_set(r->pg, id[i], uid[i], bytes[i], run[i] == 0, now) < 0)
        return GPD_ESTORE;
    }
  }
}

/* uid's estimated use, and the part retention cannot remove (its live
 * profiles and the binaries they sent). */
static void uid_use(rt_t *r, uint32_t uid, uint64_t *use, uint64_t *live) {
  *use = gpd_store_purge_uid_use(r->pg, uid);
  *live = 0;
  for (size_t i = 0; i < r->nlive; i++)
    if (r->live[i].uid == uid)
      *live += gpd_store_purge_live_use(r->pg, r->live[i].id);
}

typedef struct {
  uint32_t uid;
  uint64_t use, live;
  int exhausted; /* nothing of this uid can be removed in this pass */
} uid_row_t;

/* Count every uid's use and publish the undeletable part for uploads
 * (s->uses, reg_lock).  0, RT_STOP or < 0. */
static int count_uses(rt_t *r, uid_row_t **rows, size_t *nrows) {
  gpd_dstore_t *s = r->s;
  /* binaries committed from now on count as unseen again */
  pthread_mutex_lock(&r->d->reg_lock);
  for (size_t i = 0; i < s->nuses; i++)
    s->uses[i].unseen = 0;
  pthread_mutex_unlock(&r->d->reg_lock);
  uint64_t t_size = gpd_clock_ns(), fl0 = r->flush_ns;
  int err = size_profiles(r);
  s->rstats.size_ns = gpd_clock_ns() - t_size - (r->flush_ns - fl0); /* without the flushes in it */
  r->what = "counting each uid's use";
  if (err == 0)
    err = rt_commit(r); /* the counts below only read */
  if (err != 0)
    return err;
  uint32_t *uids = NULL;
  size_t n = 0;
  if (gpd_store_purge_uids(r->pg, &uids, &n) < 0)
    return -ENOMEM;
  uid_row_t *u = calloc(n ? n : 1, sizeof *u);
  if (u == NULL) {
    free(uids);
    return -ENOMEM;
  }
  for (size_t i = 0; i < n; i++)
    u[i].uid = uids[i];
  free(uids);
  for (size_t i = 0; i < n; i++)
    uid_use(r, u[i].uid, &u[i].use, &u[i].live);
  pthread_mutex_lock(&r->d->reg_lock);
  for (size_t i = 0; i < s->nuses; i++)
    s->uses[i].live = 0;
  for (size_t i = 0; i < n; i++) {
    gpd_uid_use_t *e = gpd__gpubin_uid_use(s, u[i].uid);
    if (e)
      e->live = u[i].live;
  }
  pthread_mutex_unlock(&r->d->reg_lock);
  free(*rows);
  *rows = u;
  *nrows = n;
  s->use_t_ns = gpd_clock_ns();
  s->use_live_sig = live_sig(r);
  return 0;
}

/* Each counted uid's allowance of new trace rows until the next count
 * (trace.h, gpd_trace_admit): what is left of its share, plus an equal
 * part of the room left under retention_max_bytes.  So between two counts
 * the store grows by at most the room plus what the uids within their
 * shares may still add; a uid over its share of a full store writes no
 * trace row, whatever retention's pace. */
static void admit_publish(rt_t *r, const uid_row_t *u, size_t n, uint64_t quota, uint64_t max_bytes,
                          uint64_t total) {
  gpd_trace_t *t = r->d->trace;
  uint64_t room = max_bytes > total ? max_bytes - total : 0;
  for (size_t i = 0; t && i < n; i++) {
    uint64_t own = quota > u[i].use ? quota - u[i].use : 0;
    uint64_t allow = own + (max_bytes ? room / n : 0);
    if (gpd_trace_admit(t, u[i].uid, allow > INT64_MAX - 1 ? INT64_MAX - 1 : (int64_t)allow) < 0)
      GPD_WARN("store: more than %u uids: uid %u's trace rows are not limited", GPD_TRACE_ADMIT_UIDS,
               (unsigned)u[i].uid);
  }
}

/* The oldest removable profile of uid, or -1. */
static int64_t oldest_of(rt_t *r, uint32_t uid) {
  int64_t id[64], victim = -1;
  int n = gpd_store_purge_oldest(r->pg, uid, id, 64);
  for (int i = 0; i < n && victim < 0; i++)
    if (!is_live(r, id[i]))
      victim = id[i];
  return victim;
}

/* The uid furthest over its share (use - quota largest) with something
 * removable among those using more than floor bytes.  NULL: none. */
static uid_row_t *furthest_over(rt_t *r, uid_row_t *u, size_t n, uint64_t quota, uint64_t floor,
                                int64_t *victim) {
  for (;;) {
    uid_row_t *best = NULL;
    for (size_t i = 0; i < n; i++) {
      if (u[i].exhausted || u[i].use <= floor)
        continue;
      if (best == NULL || (int64_t)(u[i].use - quota) > (int64_t)(best->use - quota))
        best = &u[i];
    }
    if (best == NULL)
      return NULL;
    if ((*victim = oldest_of(r, best->uid)) >= 0)
      return best;
    best->exhausted = 1;
  }
}

/* 1 when some uid uses more than its share. */
static int any_over(const uid_row_t *u, size_t n, uint64_t quota) {
  for (size_t i = 0; quota && i < n; i++)
    if (u[i].use > quota)
      return 1;
  return 0;
}

static int pass(rt_t *r) {
  gpd_daemon_t *d = r->d;
  gpd_dstore_t *s = r->s;
  uint64_t max_bytes = __atomic_load_n(&d->cfg.retain_bytes, __ATOMIC_RELAXED);
  uint64_t max_age = __atomic_load_n(&d->cfg.retain_age_s, __ATOMIC_RELAXED);
  uint64_t quota = gpd_gpubin_uid_quota(d);
  uint64_t now = gpd_clock_ns();
  int64_t cutoff = max_age && now > max_age * 1000000000ull
                       ? (int64_t)(now - max_age * 1000000000ull) : INT64_MIN;
  int err = s->rstats.passes == 0 ? sweep_stray_files(r) : 0;
  if (err == 0)
    err = finish_removals(r);
  if (err != 0)
    return err;
  uint64_t total = gpd_store_purge_total(r->pg);
  r->urgent = max_bytes && total > max_bytes;
  int unseen = 0;
  pthread_mutex_lock(&d->reg_lock);
  for (size_t i = 0; i < s->nuses; i++)
    unseen |= s->uses[i].unseen != 0;
  pthread_mutex_unlock(&d->reg_lock);
  uint64_t step = quota ? quota / 16 : max_bytes / 16;
  uint64_t moved = total > s->use_total ? total - s->use_total : s->use_total - total;
  uid_row_t *u = NULL;
  size_t nu = 0;
  int counted = 0;
  if (quota || max_bytes) {
    if (s->use_t_ns == 0 || now - s->use_t_ns >= USE_EVERY_NS || unseen || moved >= step ||
        live_sig(r) != s->use_live_sig || (max_bytes && total > max_bytes) ||
        gpd_trace_admit_spent(d->trace)) {
      if ((err = count_uses(r, &u, &nu)) != 0)
        goto out;
      total = gpd_store_purge_total(r->pg); /* the trace rows written meanwhile */
      s->use_total = total;
      counted = 1;
      admit_publish(r, u, nu, quota, max_bytes, total);
    }
  } else {
    gpd_trace_admit_clear(d->trace);
  }
  if (quota) /* a uid not counted yet (its first process) */
    gpd_trace_admit_default(d->trace, quota > INT64_MAX - 1 ? INT64_MAX - 1 : (int64_t)quota);
  for (int round = 0; round < MAX_ROUNDS; round++) {
    char why[160];
    int64_t victim = -1, vuid = -1;
    uid_row_t *who = NULL;
    /* 1. too old, whoever owns it */
    if (cutoff != INT64_MIN) {
      int64_t id[64], uid[64];
      int n = gpd_store_purge_aged(r->pg, cutoff, id, uid, 64);
      for (int i = 0; i < n && victim < 0; i++)
        if (!is_live(r, id[i])) {
          victim = id[i];
          vuid = uid[i];
        }
      snprintf(why, sizeof why, "ended more than %llu s ago", (unsigned long long)max_age);
    }
    /* 2. a uid over its share loses its own oldest */
    if (victim < 0 && counted && quota &&
        (who = furthest_over(r, u, nu, quota, quota, &victim)) != NULL)
      snprintf(why, sizeof why, "over its share: %llu of %llu bytes",
               (unsigned long long)who->use, (unsigned long long)quota);
    /* 3. the store over its limit: the uid furthest over its share among
     * those using more than an equal part of the limit; not while a uid
     * is over its share (what is left of it is live: the store stays
     * over by that much, bounded by its allowances, and no one within
     * their share pays for it) */
    if (victim < 0 && counted && max_bytes && total > max_bytes && !any_over(u, nu, quota) &&
        (who = furthest_over(r, u, nu, quota, nu ? max_bytes / nu : 0, &victim)) != NULL)
      snprintf(why, sizeof why, "store over its limit: %llu of %llu bytes; this uid uses %llu",
               (unsigned long long)total, (unsigned long long)max_bytes,
               (unsigned long long)who->use);
    if (victim < 0)
      break;
    if (who)
      vuid = who->uid;
    if ((err = drop(r, victim, vuid, why)) != 0)
      goto out;
    if ((err = rt_check(r)) != 0)
      goto out;
    for (size_t i = 0; i < nu; i++) /* counted again: what it freed, contexts and binaries included */
      if ((int64_t)u[i].uid == vuid)
        uid_use(r, u[i].uid, &u[i].use, &u[i].live);
    total = gpd_store_purge_total(r->pg);
    s->use_total = total;
    r->urgent = max_bytes && total > max_bytes;
  }
  r->urgent = 0;
  if (counted && s->rstats.profiles != r->removed0)
    admit_publish(r, u, nu, quota, max_bytes, total); /* the room it made */
  /* give free pages back to the file system, a little at a time: after
   * removals, and whenever more than FREE_SLACK are free (the flushes'
   * rewritten rows: a correlation flood's pending rows leave tens of MiB) */
  if (s->rstats.profiles != r->removed0 || gpd_store_db_free(r->db) > FREE_SLACK) {
    r->what = "giving free pages back";
    for (int k = 0; k < 4096; k++) {
      if ((err = rt_begin(r)) < 0)
        goto out;
      int64_t fl = 0;
      if (gpd_store_db_vacuum(r->db, 256, &fl) < 0) {
        err = GPD_ESTORE;
        goto out;
      }
      if (fl == 0)
        break;
      if ((err = rt_check(r)) != 0)
        goto out;
    }
  }
out:
  free(u);
  return err;
}

int gpd_retention_run(gpd_daemon_t *d, gpd_retention_flush_fn flush) {
  gpd_dstore_t *s = d->store;
  if (s == NULL || __atomic_load_n(&d->writer_stop, __ATOMIC_RELAXED) ||
      __atomic_load_n(&d->retain_stop, __ATOMIC_RELAXED))
    return 0;
  uint64_t t0 = gpd_clock_ns(), removed0 = s->rstats.profiles;
  rt_t r = {.d = d, .s = s, .db = s->wdb, .removed0 = removed0, .flush = flush, .what = "starting a pass"};
  r.t_flush = t0;
  r.t_step = t0;
  int err = gpd_store_purge_open(s->wdb, &r.pg);
  if (err == 0)
    err = live_list(&r);
  /* Removals dirty many pages: checkpoint the log every 128 pages (512
   * KiB) rather than every 1000, so that no COMMIT copies 4 MiB back into
   * the file (a slow COMMIT: docs/STORE.md). */
  gpd_store_db_autocheckpoint(s->wdb, 128);
  if (err == 0)
    err = pass(&r);
  if (err >= 0)
    err = rt_commit(&r) < 0 ? GPD_ESTORE : err;
  if (err >= 0) /* the pass's frames out of the -wal, if readers allow it now */
    gpd_store_db_wal_truncate(s->wdb);
  if (err < 0 && r.t_txn) {
    gpd_store_db_quiet(1); /* SQLite may have rolled back already */
    gpd_store_db_rollback(s->wdb);
    gpd_store_db_quiet(0);
    r.t_txn = 0;
  }
  gpd_store_db_autocheckpoint(s->wdb, 0);
  gpd_store_purge_close(r.pg);
  free(r.live);
  uint64_t dt = gpd_clock_ns() - t0;
  s->rstats.passes++;
  s->rstats.pass_ns = dt;
  if (dt > s->rstats.pass_max_ns)
    s->rstats.pass_max_ns = dt;
  s->rstats.stopped = err == RT_STOP;
  if (s->rstats.profiles != removed0)
    GPD_INFO("store: retention pass removed %llu profiles in %.1f ms%s",
             (unsigned long long)(s->rstats.profiles - removed0), (double)dt / 1e6,
             err == RT_STOP ? " (stopped: the daemon is stopping)" : "");
  return err == RT_STOP ? 0 : err;
}
