/* checkpoint.c - the store's writer thread and its checkpoint: the
 * exactly-once protocol with journal.c (docs/DAEMON.md, "No loss on daemon
 * SIGKILL", "Release never waits for a commit").
 *
 * A flush copies dirty data under the daemon lock (snapshot.c: new
 * modules, strings, contexts and cct_local rows past each profile's
 * watermarks, the metrics of dirty nodes, the profile rows, each ring's
 * monitor cursor and the process's unmatched correlation state: the rows
 * that changed) and cuts each process's journal there.  One hold takes
 * what must agree with the cursors (they and the journal cut, the pending
 * delta, samples, windows, the profile row) and the ranges of the rest;
 * the process is then frozen (the monitor journals its rings without
 * applying them: journal-hold.c) while the contexts, locals and dirty
 * metrics are copied GPD_CHECKPOINT_SNAP_CHUNK items per hold, so nobody waits
 * on the lock for more than one chunk and the copy still reads one
 * instant of the profile.  With no lock held it looks up FRAME
 * contexts in the symbolizer (never waiting: an unknown call site is
 * queued and stored by module + offset), writes everything and the
 * symbols that arrived in ONE transaction, and after COMMIT returned
 * releases each ring's shared tail to the copied cursor where the monitor
 * had not (spans it could not journal) and deletes the journal segments
 * up to the cut.  So the tail never passes what is stored or journaled; a
 * daemon killed after COMMIT but before the deletion replays spans the
 * store already has, skipped by position (ring_cursor).
 * A snapshot that could not be copied completely (out of memory) is not
 * written at all and the process is rewritten in full next time; so is
 * everything of a failed transaction (disk full: see gpd_checkpoint_flush).
 * Metric rows hold a node's running total (INSERT OR REPLACE), only
 * non-zero values.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "gpuprof/metric.h"

#include "daemon.h"
#include "dstore-internal.h"
#include "store-write.h"
#include "cpusample.h"
#include "pcsample.h"
#include "snapshot.h"
#include "symbolizer.h"

/* Tests only (GPUPROF_TEST_WRITER_DELAY_MS, read at the writer's start):
 * every flush with something to write waits this long before BEGIN, as a
 * slow disk or a slow statement would hold the writer. */
static unsigned writer_delay_ms;

/* Tests only (GPUPROF_TEST_FROZEN_MS, read at the writer's start): a
 * process whose snapshot is copied in chunks stays frozen this much
 * longer (the writer waits without the lock before its first chunk), as
 * the copy of a large profile on a loaded machine keeps it frozen. */
static unsigned frozen_delay_ms;

/* At the daemon's stop: how long the symbolizer may take for the call
 * sites still queued (SIGTERM is answered within ~5 s). */
#define GPD_STORE_STOP_SYMBOLS_MS 2500u

/* Rows copied in one flush above which freed memory is trimmed. */
#define GPD_TRIM_AFTER_ROWS 65536u


/* Detach p's region into closing[*n] (closed once the lock is dropped),
 * or close it now when there is no array (out of memory). */
static void close_later(gpd_proc_t *p, gpd_region_t *closing, uint32_t *n) {
  if (closing == NULL)
    gpd_registry_close_region(p);
  else if (gpd_registry_detach_region(p, &closing[*n]))
    (*n)++;
}

/* Unlock d->lock, held since t_held (ns) for part `what` of a flush
 * (HOLD_*): the longest hold of each is kept for the stop line and
 * gpd_checkpoint_lock_max_ns. */
enum { HOLD_SNAP, HOLD_CHUNK, HOLD_COMMIT };

/* What gpd_snapshot_alloc sizes for s: its modules, strings, contexts,
 * locals and dirty metrics.  A snapshot of no more than the hold's budget
 * is allocated and copied in that hold: a process that ended after a few
 * kernels costs the writer no extra wait for the lock. */
static uint64_t snap_items(const gpd_snapshot_t *s) {
  return (uint64_t)(s->mod_to - s->mod_from) + (s->str_to - s->str_from) + (s->node_to - s->node_from) +
         (s->loc_to - s->loc_from) + s->ndirty;
}

/* The order of a flush's turns: by uid; in a uid ended processes first
 * (they hold regions), then the least recently written. */
static int turn_cmp(const void *a, const void *b) {
  const gpd_proc_t *p = *(gpd_proc_t *const *)a, *q = *(gpd_proc_t *const *)b;
  if (p->uid != q->uid)
    return p->uid < q->uid ? -1 : 1;
  int pr = p->state == GPD_PROC_RUNNING || p->state == GPD_PROC_ENDING;
  int qr = q->state == GPD_PROC_RUNNING || q->state == GPD_PROC_ENDING;
  if (pr != qr)
    return pr - qr;
  return p->flush_seq < q->flush_seq ? -1 : p->flush_seq > q->flush_seq;
}

/* The rows p's next snapshot writes, about (what gpd_snapshot_take
 * ranges over; lock held). */
static uint64_t proc_rows(const gpd_proc_t *p) {
  const gpd_profile_t *pr = &p->prof;
  uint64_t dirty = pr->ndirtyv == UINT32_MAX ? pr->nnodes : pr->ndirtyv;
  return (uint64_t)(pr->nmods - pr->nmods_saved) + (pr->nstrs - pr->nstrs_saved) +
         (pr->nnodes - pr->nodes_clean) + (pr->nlocals - pr->nlocals_saved) + dirty;
}

/* Of the n processes in c (lock held), keep at most
 * GPD_CHECKPOINT_PROCS_PER_UID per uid and, past its first, no more than
 * GPD_CHECKPOINT_ROWS_PER_UID rows of one uid, packed at the front in
 * turn order, each marked with seq; *more says whether any was left.
 * The count kept. */
static uint32_t take_turns(gpd_proc_t **c, uint32_t n, uint64_t seq, int *more) {
  *more = 0;
  if (n > 1)
    qsort(c, n, sizeof *c, turn_cmp);
  uint32_t k = 0, run = 0;
  uint64_t rows = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (i && c[i]->uid == c[i - 1]->uid) {
      run++;
    } else {
      run = 0;
      rows = 0;
    }
    uint64_t r = proc_rows(c[i]);
    if (run >= GPD_CHECKPOINT_PROCS_PER_UID || (rows && rows + r > GPD_CHECKPOINT_ROWS_PER_UID)) {
      *more = 1;
      continue;
    }
    rows += r ? r : 1;
    c[i]->flush_seq = seq;
    c[k++] = c[i];
  }
  return k;
}

/* d->lock for the writer (gpd_registry_lock_writer); the wait added to *wait. */
static void wlock(gpd_daemon_t *d, int adopt, uint64_t *wait) {
  uint64_t t = gpd_clock_ns();
  gpd_registry_lock_writer(d, adopt);
  *wait += gpd_clock_ns() - t;
}

/* A flush's phases, in order (their ends: slow_line). */
enum { PH_SNAP, PH_BEGIN, PH_ROWS, PH_COMMIT, PH_RELEASE, PH_REGIONS, PH_JOURNAL, PH__N };

/* One line for a flush that took GPD_CHECKPOINT_SLOW_NS or more: where
 * its time went, per phase in ms (t0 its start, ph the phases' ends). */
static void slow_line(uint64_t t0, const uint64_t ph[PH__N], uint32_t n, uint32_t nclosed, uint64_t wait) {
  double ms[PH__N];
  for (int k = 0; k < PH__N; k++)
    ms[k] = (double)(ph[k] - (k ? ph[k - 1] : t0)) / 1e6;
  GPD_INFO("store: slow flush, %.0f ms for %u processes (%u ended): snapshot %.0f, symbols and BEGIN "
           "%.0f, rows %.0f, COMMIT %.0f, release under the lock %.0f, regions unmapped %.0f, "
           "journal segments deleted %.0f ms; %.0f ms of it waiting for the lock",
           (double)(ph[PH_JOURNAL] - t0) / 1e6, n, nclosed, ms[PH_SNAP], ms[PH_BEGIN], ms[PH_ROWS],
           ms[PH_COMMIT], ms[PH_RELEASE], ms[PH_REGIONS], ms[PH_JOURNAL], (double)wait / 1e6);
}
static void lock_release(gpd_daemon_t *d, gpd_dstore_t *s, uint64_t t_held, int what) {
  pthread_mutex_unlock(&d->lock);
  uint64_t dt = gpd_clock_ns() - t_held;
  if (dt > __atomic_load_n(&s->lock_max_ns[what], __ATOMIC_RELAXED))
    __atomic_store_n(&s->lock_max_ns[what], dt, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------- write */

/* The frame rows of context ctx of uid. */
static int write_frames(gpd_store_write_t *w, int64_t uid, uint64_t ctx, const gpd_sframe_t *fr, unsigned nfr) {
  int e = 0;
  for (unsigned k = 0; k < nfr && e == 0; k++) {
    gpd_store_frame_row_t f = {fr[k].function, fr[k].file, fr[k].line, fr[k].inlined};
    e = gpd_store_write_frame(w, uid, ctx, k, &f);
  }
  return e;
}

/* Symbols that arrived from the symbolizer for contexts stored by module
 * + offset: the physical function becomes the label, the frames follow. */
static int write_symbols(gpd_store_write_t *w, const gpd_symupd_t *u, uint32_t n) {
  int e = 0;
  for (uint32_t i = 0; i < n && e == 0; i++)
    if ((e = gpd_store_write_label(w, (int64_t)u[i].uid, u[i].ctx, u[i].fr[0].function)) == 0)
      e = write_frames(w, (int64_t)u[i].uid, u[i].ctx, u[i].fr, u[i].n);
  return e;
}

static int write_proc(gpd_dstore_t *s, gpd_store_write_t *w, gpd_snapshot_t *p) {
  int e = 0;
  gpd_store_profile_row_t row = {
      .id = p->id, .pid = p->pid, .ppid = p->ppid, .uid = p->uid, .gid = p->gid, .rank = p->rank,
      .local_rank = p->local_rank, .exe = p->exe, .argv = p->argv, .hostname = p->hostname, .job = p->job,
      .step = p->step, .error = p->error, .start_ns = p->start_ns, .end_ns = p->end_ns, .records = p->records,
      .drops = p->drops, .proc_start = p->proc_start, .state = p->state};
  if ((e = gpd_store_write_profile(w, &row)) < 0)
    return e;
  for (int i = 0; i < p->nbe; i++) {
    gpd_store_backend_row_t b = {p->be[i].api, p->be[i].enabled, p->be[i].code, p->be[i].reason};
    if ((e = gpd_store_write_backend(w, p->id, &b)) < 0)
      return e;
  }
  for (uint32_t i = 0; i < p->nmods; i++) {
    char *bid = gpd__dstore_hex(p->mods[i].build_id, p->mods[i].build_id_len);
    gpd_store_module_row_t m = {p->mods[i].id, p->mods[i].path, bid, p->mods[i].base, p->mods[i].size};
    e = gpd_store_write_module(w, p->id, &m);
    free(bid);
    if (e < 0)
      return e;
  }
  for (uint32_t i = 0; i < p->nstrs; i++) {
    gpd_store_string_row_t r = {p->strs[i].id, p->strs[i].kind, p->strs[i].text};
    if ((e = gpd_store_write_string(w, p->id, &r)) < 0)
      return e;
  }
  for (uint32_t i = 0; i < p->nctxs; i++) {
    gpd_snapshot_ctx_t *c = &p->ctxs[i];
    char buf[64];
    gpd_store_context_row_t r = {.id = c->id, .parent = c->parent, .offset = c->offset, .kind = c->kind,
                                 .module = c->module, .build_id = c->build_id, .label = c->label, .raw = c->raw};
    if (c->kind == GPD_NODE_FRAME) {
      if (c->nfr > 0)
        r.label = c->fr[0].function; /* the physical function holding the call site */
      else {
        snprintf(buf, sizeof buf, "0x%" PRIx64, c->offset);
        r.label = buf;
      }
    } else if (c->kind == GPD_NODE_ROOT) {
      r.label = "<root>";
    }
    /* rows of this profile's owner only: another user's announcement of
     * the same module key never changes them (PRIMARY KEY(uid, id)) */
    if ((e = gpd_store_write_context(w, p->uid, &r)) < 0 || (e = write_frames(w, p->uid, c->id, c->fr, c->nfr)) < 0)
      return e;
  }
  for (uint32_t i = 0; i < p->nlocals; i++)
    if ((e = gpd_store_write_local(w, p->id, p->locals[i].local, p->locals[i].ctx)) < 0)
      return e;
  for (uint32_t i = 0; i < p->nmets; i++) {
    const gpd_mval_t *mv = p->mval + p->mets[i].off;
    for (uint32_t k = 0; k < p->mets[i].n; k++) /* sparse: only non-zero */
      if (mv[k].v != 0 && (e = gpd_store_write_metric(w, p->id, p->mets[i].ctx, mv[k].id, mv[k].v)) < 0)
        return e;
  }
  if (p->pend_write && p->pend_full && (e = gpd_store_write_pending_del(w, p->id, -1)) < 0)
    return e;
  for (uint32_t i = 0; p->pend_write && i < p->npdel; i++)
    if ((e = gpd_store_write_pending_del(w, p->id, (int64_t)p->pdel[i])) < 0)
      return e;
  for (uint32_t i = 0; p->pend_write && i < p->npend; i++)
    if ((e = gpd_store_write_pending(w, p->id, p->pend[i].seq, p->pend[i].b, p->pend[i].len)) < 0)
      return e;
  /* Kept after the process exited too: a daemon killed between this
   * COMMIT and the release must still skip what is stored here when the
   * process hands its region back (deleted with the profile). */
  for (uint32_t i = 0; i < p->ncursor; i++)
    if (p->cursor[i] != p->cursor_prev[i] && (e = gpd_store_write_cursor(w, p->id, i, p->cursor[i])) < 0)
      return e;
  if (gpd_store_write_pcsample(s->wdb, (int64_t)p->id, &p->pcs) < 0 ||
      gpd_store_write_cpusample(s->wdb, (int64_t)p->id, &p->cps) < 0 ||
      gpd_store_write_tracewin(s->wdb, (int64_t)p->id, &p->tw) < 0)
    return GPD_ESTORE;
  return 0;
}

int gpd_checkpoint_flush(gpd_daemon_t *d) {
  gpd_dstore_t *s = d->store;
  if (s == NULL)
    return 0;
  gpd_snapshot_t *snaps = NULL;
  uint32_t n = 0;
  uint64_t lock_wait = 0; /* ns waited for d->lock */
  int err = 0;
  uint64_t t_snap = gpd_clock_ns();
  uint32_t chunk = s->snap_chunk ? s->snap_chunk : GPD_CHECKPOINT_SNAP_CHUNK;
  __atomic_store_n(&d->journal_urgent, 0, __ATOMIC_RELAXED); /* this flush answers it */
  wlock(d, 1, &lock_wait);
  uint64_t t_held = gpd_clock_ns();
  int part = HOLD_SNAP;
  gpd_proc_t **pins = NULL; /* snaps[i].proc, pinned (snap_pinned) until the end */
  if (d->nprocs) {
    snaps = calloc(d->nprocs, sizeof *snaps);
    pins = calloc(d->nprocs, sizeof *pins);
    if (pins == NULL) {
      free(snaps);
      snaps = NULL;
    }
  }
  for (gpd_proc_t *p = d->procs; p && snaps && n < d->nprocs; p = p->next) {
    if ((p->state == GPD_PROC_EXITED || p->state == GPD_PROC_LOST) && p->flushed)
      continue; /* written already, or restored from the store unchanged */
    pins[n++] = p;
  }
  n = take_turns(pins, n, s->flushes + 1, &s->flush_more);
  for (uint32_t i = 0; i < n; i++) {
    pins[i]->snap_pinned = 1;
    snaps[i].proc = pins[i];
    snaps[i].id = pins[i]->profile_id;
  }
  /* keep a reserved block of profile ids ahead of the registry */
  uint64_t id_hw = 0;
  pthread_mutex_lock(&d->reg_lock);
  gpubin_row_t *gbrows = s->gpubins;
  s->gpubins = NULL;
  if (s->id_hw - d->next_profile_id < GPD_DSTORE_ID_BLOCK / 2)
    id_hw = d->next_profile_id + GPD_DSTORE_ID_BLOCK;
  pthread_mutex_unlock(&d->reg_lock);
  /* Process by process: its snapshot (one instant: gpd_snapshot_take), then its
   * new contexts, locals, metrics and pending rows, while it is frozen;
   * at most `chunk` of those per hold of the lock, so that the monitors
   * and the event loop wait for one chunk, not for the whole snapshot,
   * and a process is frozen only during its own copy. */
  for (uint32_t i = 0, budget = chunk; i < n;) {
    gpd_snapshot_t *sp = &snaps[i];
    gpd_proc_t *p = pins[i]; /* pinned: still in the list */
    if (p->profile_id != sp->id) { /* another profile meanwhile: nothing to write */
      memset(sp, 0, sizeof *sp);
      sp->incomplete = 1;
      i++;
      continue;
    }
    if (!sp->frozen && sp->proc && !sp->taken) {
      gpd_snapshot_take(d, p, sp);
      sp->taken = 1;
      if (sp->frozen && chunk != UINT32_MAX && (snap_items(sp) > budget || frozen_delay_ms)) {
        /* its arrays (megabytes for 100 000 contexts) are allocated
         * without the lock: the process is frozen, the sizes fixed */
        lock_release(d, s, t_held, part);
        gpd_snapshot_alloc(sp);
        if (frozen_delay_ms) /* tests only: a long chunked copy */
          usleep(frozen_delay_ms * 1000u);
        wlock(d, 0, &lock_wait);
        t_held = gpd_clock_ns();
        part = HOLD_CHUNK;
        budget = chunk;
        continue;
      }
      gpd_snapshot_alloc(sp);
    }
    if (sp->frozen)
      budget -= gpd_snapshot_chunk(p, sp, budget); /* incomplete: unfreezes at once */
    if (!sp->frozen)
      i++;
    if (budget == 0 && i < n) {
      lock_release(d, s, t_held, part);
      /* a mutex is not fair: without a pause the next chunk would take
       * the lock again before a woken waiter runs */
      nanosleep(&(struct timespec){0, 20000}, NULL);
      wlock(d, 0, &lock_wait);
      t_held = gpd_clock_ns();
      part = HOLD_CHUNK;
      budget = chunk;
    }
  }
  lock_release(d, s, t_held, part);
  uint64_t ph[PH__N] = {0}; /* the phases' ends (ns), for a slow flush's line */
  ph[PH_SNAP] = gpd_clock_ns();
  if (n == 0 && gbrows == NULL && id_hw == 0 && !gpd_symbolizer_pending(d->symbolizer))
    goto out;
  /* Symbols the symbolizer thread has already: a call site it has not
   * seen is queued there and stored by module + offset now; its symbols
   * come as an update of a later flush (symbolizer.c).  Without the
   * thread (unit tests that flush by hand) the resolver runs here. */
  uint64_t t_sym = gpd_clock_ns();
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; !snaps[i].incomplete && k < snaps[i].nctxs; k++) {
      gpd_snapshot_ctx_t *c = &snaps[i].ctxs[k];
      if (c->kind != GPD_NODE_FRAME || c->module == NULL)
        continue;
      if (d->symbolizer)
        gpd_symbolizer_lookup(d->symbolizer, c->module, (uid_t)snaps[i].uid, (gid_t)snaps[i].gid, c->offset,
                              c->id, &c->fr, &c->nfr);
      else
        gpd_symbols_resolve(c->module, (uid_t)snaps[i].uid, (gid_t)snaps[i].gid, c->offset, &c->fr,
                            &c->nfr);
    }
  t_sym = gpd_clock_ns() - t_sym;
  s->wr_sym_max_ns = t_sym > s->wr_sym_max_ns ? t_sym : s->wr_sym_max_ns;
  gpd_symupd_t *supd = NULL;
  uint32_t nsupd = 0;
  gpd_symbolizer_take(d->symbolizer, &supd, &nsupd);
  if (writer_delay_ms) /* tests only: a slow disk or a slow statement */
    usleep(writer_delay_ms * 1000u);

  gpd_store_db_quiet(s->failing);
  char why[128] = "";
  gpd_store_write_t *w = NULL;
  if ((err = gpd_store_write_open(s->wdb, &w)) < 0)
    goto fin;
  uint64_t t_begin = gpd_clock_ns();
  if ((err = gpd_store_db_begin(s->wdb)) < 0)
    goto fin;
  t_begin = gpd_clock_ns() - t_begin;
  if (t_begin > s->wr_begin_max_ns)
    s->wr_begin_max_ns = t_begin;
  ph[PH_BEGIN] = gpd_clock_ns();
  for (uint32_t i = 0; i < n && err == 0; i++)
    if (!snaps[i].incomplete)
      err = write_proc(s, w, &snaps[i]);
  if (err == 0)
    err = write_symbols(w, supd, nsupd);
  if (err == 0)
    err = gpd_store_write_gpubins(w, gbrows);
  if (err == 0 && id_hw)
    err = gpd_store_meta_reserve(s->wdb, id_hw);
  ph[PH_ROWS] = gpd_clock_ns();
  if (err == 0)
    err = gpd_store_db_commit(s->wdb);
  ph[PH_COMMIT] = gpd_clock_ns();
  if (err < 0) {
    snprintf(why, sizeof why, "%s", sqlite3_errmsg(s->wdb));
    gpd_store_db_quiet(1); /* SQLite may have rolled back already */
    gpd_store_db_rollback(s->wdb);
  }
fin:
  gpd_store_write_close(w);
  if (err < 0)
    gpd_symbolizer_untake(d->symbolizer, supd, nsupd); /* again next time */
  else
    free(supd);
  gpd_store_db_quiet(0);
  /* one log line when writes start failing and one when they resume */
  if (err < 0 && !s->failing) {
    if (why[0] == 0)
      snprintf(why, sizeof why, "%s", sqlite3_errmsg(s->wdb));
    snprintf(s->why, sizeof s->why, "not stored yet: %s; kept in memory, retried", why);
    GPD_ERR("store: writes to %s fail (%s); profiles are kept in memory and written when "
            "it works again", s->path, why);
    s->failing = 1;
  } else if (err == 0 && s->failing) {
    GPD_INFO("store: writes to %s work again", s->path);
    s->failing = 0;
  }
  /* the regions of ended processes are unmapped after the lock is dropped */
  gpd_region_t *closing = n ? malloc(n * sizeof *closing) : NULL;
  uint32_t nclosing = 0;
  wlock(d, 0, &lock_wait);
  t_held = gpd_clock_ns();
  pthread_mutex_lock(&d->reg_lock);
  if (err < 0 && gbrows) { /* again at the next flush */
    gpubin_row_t **t = &gbrows;
    while (*t)
      t = &(*t)->next;
    *t = s->gpubins;
    s->gpubins = gbrows;
    gbrows = NULL;
  }
  if (err == 0 && id_hw > s->id_hw)
    s->id_hw = id_hw;
  if (err == 0)
    gpd__gpubin_committed(s, gbrows);
  pthread_mutex_unlock(&d->reg_lock);
  for (uint32_t i = 0; i < n; i++) {
    gpd_proc_t *p = snaps[i].proc;
    pins[i]->snap_pinned = 0;
    if (p == NULL)
      continue;
    if (err < 0 || snaps[i].incomplete) {
      /* write everything again next time; the tails stay where they are */
      gpd_snapshot_redo(p);
      gpd_pcsample_unsnap(p->prof.pcs, &snaps[i].pcs);
      gpd_cpusample_unsnap(p->prof.cps, &snaps[i].cps);
      if (err < 0 && (p->error[0] == 0 || p->store_error)) {
        snprintf(p->error, sizeof p->error, "%s", s->why); /* ps shows it */
        p->store_error = 1;
      }
      /* A process that ended was drained completely into its profile:
       * nobody will hand its region back, so the region (memfd and
       * mapping) is freed now; the profile stays until it is written. */
      if (err < 0 && snaps[i].exited && p->state == GPD_PROC_EXITED)
        close_later(p, closing, &nclosing);
      continue;
    }
    if (p->store_error) {
      p->error[0] = 0;
      p->store_error = 0;
      p->meta_dirty = 1;
    }
    /* committed: the state up to these cursors is durable, give the
     * producer its slots back (and reclaim drained RETIRED rings) */
    int same = snaps[i].ncursor && p->has_region && p->cursor && p->region.nrings == snaps[i].ncursor;
    if (same) {
      for (uint32_t k = 0; k < snaps[i].ncursor; k++) {
        gpd_ring_release(&p->region, k, snaps[i].cursor[k]);
        p->cursor_saved[k] = snaps[i].cursor[k];
      }
    }
    /* the journal up to the snapshot's cut is stored: deleted below */
    gpd_journal_committed(p, &snaps[i].jcut, same ? snaps[i].cursor : NULL, same ? snaps[i].ncursor : 0);
    snaps[i].jdone = snaps[i].jcut.any;
    /* still EXITED from the same end: a hand-back to this daemon may have
     * revived it since the snapshot (gpd_registry_hello), then it keeps
     * its region; revived and ended again, what it drained since the
     * snapshot is not written yet (the next flush does it) */
    if (snaps[i].exited && p->state == GPD_PROC_EXITED && p->ends == snaps[i].ends) {
      p->flushed = 1;
      close_later(p, closing, &nclosing);
    }
  }
  s->flushes++;
  lock_release(d, s, t_held, HOLD_COMMIT);
  ph[PH_RELEASE] = gpd_clock_ns();
  for (uint32_t i = 0; i < nclosing; i++)
    gpd_region_close(&closing[i]);
  free(closing);
  ph[PH_REGIONS] = gpd_clock_ns();
  for (uint32_t i = 0; i < n; i++)
    if (snaps[i].jdone)
      gpd_journal_unlink(d, snaps[i].id, snaps[i].jcut.lo, snaps[i].jcut.seg);
  ph[PH_JOURNAL] = gpd_clock_ns();
  if (err == 0) {
    uint64_t dt = gpd_clock_ns() - t_snap;
    s->wr_n++;
    s->wr_ns += dt;
    s->wr_max_ns = dt > s->wr_max_ns ? dt : s->wr_max_ns;
    s->wr_slow += dt > 50000000ull;
    if (dt >= GPD_CHECKPOINT_SLOW_NS)
      slow_line(t_snap, ph, n, nclosing, lock_wait);
  }
out:;
  size_t copied = 0;
  for (uint32_t i = 0; i < n; i++) {
    copied += (size_t)snaps[i].nctxs + snaps[i].nmets + snaps[i].npend;
    gpd_snapshot_free(&snaps[i]);
  }
  free(snaps);
  free(pins);
  /* A large snapshot (sizes: docs/STORE.md) leaves as much free memory
   * in this thread's malloc arena, which glibc keeps resident: hand it
   * back to the kernel. */
  if (copied >= GPD_TRIM_AFTER_ROWS)
    malloc_trim(0);
  while (gbrows) {
    gpubin_row_t *g = gbrows;
    gbrows = g->next;
    free(g);
  }
  return err;
}

uint64_t gpd_checkpoint_lock_max_ns(gpd_dstore_t *s) {
  uint64_t m = 0;
  for (int i = 0; i < 3; i++) {
    uint64_t v = __atomic_load_n(&s->lock_max_ns[i], __ATOMIC_RELAXED);
    m = v > m ? v : m;
  }
  return m;
}

void gpd_checkpoint_lock_max_reset(gpd_dstore_t *s) {
  for (int i = 0; i < 3; i++)
    __atomic_store_n(&s->lock_max_ns[i], 0, __ATOMIC_RELAXED);
}

void gpd_checkpoint_snapshot_chunk(gpd_dstore_t *s, uint32_t n) { s->snap_chunk = n; }

/* ------------------------------------------------------------ writer */

static void *writer_main(void *arg) {
  gpd_daemon_t *d = arg;
  for (;;) {
    pthread_mutex_lock(&d->lock);
    /* flush_now: atomic (set without the lock by the registry, gpubin.c
     * and the monitor's back-pressure) */
    if (!__atomic_load_n(&d->flush_now, __ATOMIC_RELAXED) && !d->writer_stop) {
      uint32_t ms = __atomic_load_n(&d->cfg.flush_ms, __ATOMIC_RELAXED);
      struct timespec ts = gpd_clock_deadline((uint64_t)(ms ? ms : 1000) * 1000000u);
      pthread_cond_timedwait(&d->writer_cv, &d->lock, &ts);
    }
    __atomic_store_n(&d->flush_now, 0, __ATOMIC_RELAXED);
    int stop = d->writer_stop;
    pthread_mutex_unlock(&d->lock);
    uint64_t t_fl = gpd_clock_ns();
    int ferr = gpd_checkpoint_flush(d);
    if (d->store)
      d->store->flush_last_ns = gpd_clock_ns() - t_fl;
    /* processes left for the next turn: at once, after retention's share */
    for (int k = 0; stop && d->store && d->store->flush_more && k < 10000; k++)
      if (gpd_checkpoint_flush(d) < 0) /* stopping: every turn now */
        break;
    if (d->store && d->store->flush_more)
      __atomic_store_n(&d->flush_now, 1, __ATOMIC_RELAXED);
    if (ferr == 0)
      gpd_retention_run(d, gpd_checkpoint_flush);
    if (gpd_journal_sweep_due(d, 60000000000ull))
      gpd_journal_sweep(d);
    if (stop) {
      /* the call sites of that last flush, without budgets, for a
       * bounded time, and one more flush that stores their symbols */
      if (!gpd_symbolizer_drain(d->symbolizer, GPD_STORE_STOP_SYMBOLS_MS))
        GPD_WARN("store: symbolization not finished within %u ms of the stop: the rest stays "
                 "module + offset", GPD_STORE_STOP_SYMBOLS_MS);
      if (gpd_symbolizer_pending(d->symbolizer))
        gpd_checkpoint_flush(d);
      break;
    }
  }
  return NULL;
}

int gpd_checkpoint_writer_start(gpd_daemon_t *d) {
  /* until the first retention count, a uid writes at most its share of
   * trace rows (retention.c) */
  uint64_t quota = gpd_gpubin_uid_quota(d);
  if (quota)
    gpd_trace_admit_default(d->trace, quota > INT64_MAX - 1 ? INT64_MAX - 1 : (int64_t)quota);
  const char *delay = getenv("GPUPROF_TEST_WRITER_DELAY_MS");
  writer_delay_ms = delay ? (unsigned)strtoul(delay, NULL, 10) % 600000u : 0;
  if (writer_delay_ms)
    GPD_WARN("test delay: every flush waits %u ms before it writes", writer_delay_ms);
  const char *frozen = getenv("GPUPROF_TEST_FROZEN_MS");
  frozen_delay_ms = frozen ? (unsigned)strtoul(frozen, NULL, 10) % 600000u : 0;
  if (frozen_delay_ms)
    GPD_WARN("test delay: a process copied in chunks stays frozen %u ms longer", frozen_delay_ms);
  int err = pthread_create(&d->writer_tid, NULL, writer_main, d);
  if (err)
    return -err;
  d->writer_started = 1;
  return 0;
}

void gpd_checkpoint_writer_stop(gpd_daemon_t *d) {
  if (!d->writer_started)
    return;
  pthread_mutex_lock(&d->lock);
  __atomic_store_n(&d->writer_stop, 1, __ATOMIC_RELAXED); /* retention reads it unlocked */
  pthread_cond_signal(&d->writer_cv);
  pthread_mutex_unlock(&d->lock);
  pthread_join(d->writer_tid, NULL);
  d->writer_started = 0;
  gpd_dstore_t *s = d->store;
  if (s && s->wr_n)
    GPD_INFO("store: %llu writes (%llu asked early by rings half full), snapshot to ring release "
             "%.2f ms mean, %.2f ms max, %llu over 50 ms; longest symbolization %.2f ms, wait in BEGIN %.2f ms, "
             "hold of the daemon lock %.2f ms (snapshot %.2f, chunks %.2f, after the commit %.2f); "
             "retention's longest stretch without a flush point %.2f ms",
             (unsigned long long)s->wr_n,
             (unsigned long long)__atomic_load_n(&d->early_flushes, __ATOMIC_RELAXED),
             (double)s->wr_ns / (double)s->wr_n / 1e6, (double)s->wr_max_ns / 1e6,
             (unsigned long long)s->wr_slow, (double)s->wr_sym_max_ns / 1e6,
             (double)s->wr_begin_max_ns / 1e6, (double)gpd_checkpoint_lock_max_ns(s) / 1e6, (double)s->lock_max_ns[HOLD_SNAP] / 1e6,
             (double)s->lock_max_ns[HOLD_CHUNK] / 1e6, (double)s->lock_max_ns[HOLD_COMMIT] / 1e6,
             (double)s->rstats.step_max_ns / 1e6);
}

