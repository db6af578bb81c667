/* journal.c - the per-process ring journal (journal.h): the monitor
 * appends every span of ring slots it consumed to the process's journal
 * with write(2) and then releases the span to the producer, so a ring's
 * room never waits for the writer's symbolization and COMMIT.  The
 * journal holds exactly what consumed-but-not-committed state a
 * successor daemon would otherwise have re-read from the ring:
 *
 *   store (committed at cursor C)  +  journal [C, rel)  +  ring [rel, head)
 *
 * is every record once, whenever the daemon dies (SIGKILL included).  The
 * writer cuts the journal at each snapshot (under the daemon lock, so
 * every span written before the cut ends at or below the snapshot's
 * cursors) and deletes the segments up to the cut once that snapshot is
 * committed.  A hand-back replays the segments from the committed cursor
 * (gpd_journal_replay) before the monitor reads the ring again.  While the
 * writer copies a process's profile its spans are appended unread and
 * applied from the journal afterwards (journal-hold.c).
 *
 * No fsync: the journal guards against the daemon dying, not the kernel.
 * A written page survives the daemon's SIGKILL in the page cache; a node
 * crash loses the producers' shared memory too, so the records a synced
 * journal would keep would belong to processes that are gone.
 *
 * Budgets: the live bytes of each uid's journals (appended, not yet
 * deleted) are bounded (uid_max), and those of all uids together (four
 * times that).  A span that would pass the bound, or
 * that cannot be written (disk full), stays in its ring until the
 * writer's commit releases it, as before the journal existed: only that
 * uid's rings fill up and drop.
 *
 * Files: <state dir>/journal/<profile id>.<segment>.jnl, 0600, created
 * O_EXCL | O_NOFOLLOW in a private directory (format: docs/FORMATS.md).
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "gpuprof/clock.h"
#include "gpuprof/grow.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"

#include "daemon.h"
#include "journal-internal.h"
#include "procstat.h"

static gpd_jacct_t *acct_get(gpd_journal_t *j, uid_t uid) {
  pthread_mutex_lock(&j->mu);
  gpd_jacct_t *a = j->accts;
  while (a && a->uid != uid)
    a = a->next;
  if (a == NULL && (a = calloc(1, sizeof *a)) != NULL) {
    a->uid = uid;
    a->next = j->accts;
    j->accts = a;
  }
  pthread_mutex_unlock(&j->mu);
  return a;
}

/* n bytes appended (add) or deleted (sub) for account a. */
static void live_add(gpd_journal_t *j, gpd_jacct_t *a, uint64_t n) {
  if (a)
    __atomic_fetch_add(&a->live, n, __ATOMIC_RELAXED);
  __atomic_fetch_add(&j->live, n, __ATOMIC_RELAXED);
}

static void live_sub(gpd_journal_t *j, gpd_jacct_t *a, uint64_t n) {
  if (a)
    __atomic_fetch_sub(&a->live, n, __ATOMIC_RELAXED);
  if (j)
    __atomic_fetch_sub(&j->live, n, __ATOMIC_RELAXED);
}

/* A span of a's uid refused by the budget (live bytes used of uid_max):
 * one line when it starts, then at most one every GPD_JOURNAL_OVER_LOG_NS
 * with the spans refused since (any monitor thread). */
#define GPD_JOURNAL_OVER_LOG_NS 10000000000ull
static void over_log(gpd_jacct_t *a, uint64_t live, uint64_t uid_max) {
  uint64_t n = __atomic_add_fetch(&a->over, 1, __ATOMIC_RELAXED);
  uint64_t now = gpd_clock_ns(), last = __atomic_load_n(&a->over_log_ns, __ATOMIC_RELAXED);
  if (n > 1 && now - last < GPD_JOURNAL_OVER_LOG_NS)
    return;
  if (!__atomic_compare_exchange_n(&a->over_log_ns, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    return; /* another monitor logs it */
  uint64_t before = __atomic_exchange_n(&a->over_logged, n, __ATOMIC_RELAXED);
  GPD_WARN("journal: uid %u has %" PRIu64 " bytes not yet committed (budget %" PRIu64
           "): its ring slots now wait for the writer's commit (%" PRIu64 " spans so, %" PRIu64
           " since the last line)",
           (unsigned)a->uid, live, uid_max, n, n - before);
}

void gpd_journal_pressure(gpd_daemon_t *d) {
  if (!__atomic_exchange_n(&d->journal_urgent, 1, __ATOMIC_RELAXED)) {
    __atomic_store_n(&d->flush_now, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&d->early_flushes, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&d->writer_cv);
  }
}

void gpd__journal_seg_name(char *buf, size_t n, uint64_t id, uint32_t seg) {
  snprintf(buf, n, "%" PRIu64 ".%u.jnl", id, seg);
}

/* "<id>.<seg>.jnl" -> 1 with *id, *seg; 0 for any other name. */
static int seg_parse(const char *name, uint64_t *id, uint32_t *seg) {
  char *end;
  if (name[0] < '0' || name[0] > '9')
    return 0;
  unsigned long long v = strtoull(name, &end, 10);
  if (*end != '.' || end[1] < '0' || end[1] > '9')
    return 0;
  unsigned long s = strtoul(end + 1, &end, 10);
  if (strcmp(end, ".jnl") != 0 || s > UINT32_MAX)
    return 0;
  *id = v;
  *seg = (uint32_t)s;
  return 1;
}

static uint64_t hdr_hash(const jhdr_t *h) {
  return gpd_hash64(h, offsetof(jhdr_t, hash), 0);
}

/* Read a segment's header from fd (a regular file of ours): 0 or -EINVAL. */
int gpd__journal_hdr_read(int fd, jhdr_t *h) {
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
    return -EINVAL;
  if (pread(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h || memcmp(h->magic, J_MAGIC, 8) != 0 ||
      h->version != J_VERSION || h->hdr_size != sizeof *h || h->hash != hdr_hash(h))
    return -EINVAL;
  return 0;
}

/* Is the process the header names still alive (same pid, same start)? */
static int hdr_alive(const jhdr_t *h) {
  if (h->pid <= 0 || kill(h->pid, 0) < 0)
    return 0;
  uint64_t st = gpd_procstat_start(h->pid);
  return h->proc_start == 0 || st == 0 || st == h->proc_start;
}

int gpd_journal_open(gpd_daemon_t *d, const char *state_dir, uint64_t uid_max) {
  char dir[PATH_MAX], err[256];
  if (snprintf(dir, sizeof dir, "%s/journal", state_dir) >= (int)sizeof dir)
    return -ENAMETOOLONG;
  int fd = gpd_dstore_private_dir(dir, 1, err, sizeof err);
  if (fd < 0) {
    GPD_ERR("journal: %s: %s; ring slots are released only after each commit", dir, err);
    return fd;
  }
  gpd_journal_t *j = calloc(1, sizeof *j);
  if (j == NULL) {
    close(fd);
    return -ENOMEM;
  }
  j->dirfd = fd;
  j->uid_max = uid_max;
  j->hold_max = GPD_JOURNAL_HOLD_MAX;
  j->hold_segs = GPD_JOURNAL_HOLD_SEGS;
  pthread_mutex_init(&j->mu, NULL);
  d->journal = j;
  gpd_journal_sweep(d);
  return 0;
}

void gpd_journal_close(gpd_daemon_t *d) {
  gpd_journal_t *j = d->journal;
  if (j == NULL)
    return;
  close(j->dirfd);
  while (j->accts) {
    gpd_jacct_t *a = j->accts;
    j->accts = a->next;
    free(a);
  }
  pthread_mutex_destroy(&j->mu);
  free(j);
  d->journal = NULL;
}

int gpd_journal_attach(gpd_daemon_t *d, gpd_proc_t *p) {
  gpd_pjournal_t *jr = &p->jr;
  if (d->journal == NULL || !p->has_region || p->cursor == NULL)
    return 0;
  uint32_t n = p->region.nrings;
  jr->rel = malloc((n ? n : 1) * sizeof *jr->rel);
  jr->from = malloc((n ? n : 1) * sizeof *jr->from);
  if (jr->rel == NULL || jr->from == NULL) {
    free(jr->rel);
    free(jr->from);
    jr->rel = jr->from = NULL;
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < n; i++) {
    jr->rel[i] = p->cursor[i];
    jr->from[i] = UINT64_MAX;
  }
  jr->j = d->journal;
  jr->acct = acct_get(d->journal, p->uid);
  return 0;
}

/* Open segment jr->seg (a fresh file: a name taken moves to the next). */
static int seg_open(gpd_journal_t *j, gpd_proc_t *p) {
  gpd_pjournal_t *jr = &p->jr;
  char name[64];
  for (int tries = 0; tries < 16; tries++, jr->seg++) {
    gpd__journal_seg_name(name, sizeof name, p->profile_id, jr->seg);
    int fd = openat(j->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
    if (fd < 0 && errno == EEXIST)
      continue;
    if (fd < 0)
      return -errno;
    jhdr_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, J_MAGIC, 8);
    h.version = J_VERSION;
    h.hdr_size = sizeof h;
    h.profile_id = p->profile_id;
    h.uid = (uint32_t)p->uid;
    h.gid = (uint32_t)p->gid;
    h.pid = (int32_t)p->pid;
    h.seg = jr->seg;
    h.proc_start = p->proc_start;
    h.nrings = p->region.nrings;
    h.ring_slots = p->region.ring_slots;
    h.hash = hdr_hash(&h);
    if (write(fd, &h, sizeof h) != (ssize_t)sizeof h) {
      int e = errno ? -errno : -EIO;
      close(fd);
      unlinkat(j->dirfd, name, 0);
      return e;
    }
    jr->fd = fd;
    jr->has_fd = 1;
    return 0;
  }
  return -EEXIST;
}

void gpd__journal_seg_close(gpd_pjournal_t *jr) {
  if (jr->has_fd) {
    close(jr->fd);
    jr->has_fd = 0;
    jr->seg++;
  }
}

int gpd__journal_span(gpd_daemon_t *d, gpd_proc_t *p, uint32_t ring, uint64_t to, uint32_t tid) {
  gpd_journal_t *j = d->journal;
  gpd_pjournal_t *jr = &p->jr;
  if (j == NULL || jr->rel == NULL || jr->failed || ring >= p->region.nrings)
    return 0;
  uint64_t from = jr->rel[ring];
  const uint64_t cap = p->region.ring_slots, mask = cap - 1;
  if (to <= from)
    return 0;
  uint64_t n = to - from;
  if (n > cap) { /* cannot happen: rel is at or above the tail */
    jr->skipped++;
    return 0;
  }
  uint64_t bytes = sizeof(jent_t) + n * GPD_SLOT_SIZE;
  gpd_jacct_t *a = jr->acct;
  uint64_t live = a ? __atomic_load_n(&a->live, __ATOMIC_RELAXED) : 0;
  if ((a && live + bytes > j->uid_max) || __atomic_load_n(&j->live, __ATOMIC_RELAXED) + bytes > 4 * j->uid_max) {
    if (a)
      over_log(a, live, j->uid_max);
    jr->skipped++;
    return 0;
  }
  /* a quarter of the budget used: the writer commits now, before its
   * interval and before retention's share (retention.c) */
  if (a && live > j->uid_max / 4)
    gpd_journal_pressure(d);
  int err = jr->has_fd ? 0 : seg_open(j, p);
  if (err < 0) {
    GPD_WARN("journal: profile %" PRIu64 ": cannot open a segment (%s); its slots wait for the "
             "commit", p->profile_id, strerror(-err));
    jr->failed = 1;
    jr->skipped++;
    return 0;
  }
  const uint8_t *slots = gpd_region_ring_data(&p->region, ring);
  uint64_t start = from & mask, first = n < cap - start ? n : cap - start;
  jent_t e = {.magic = J_ENT_MAGIC, .ring = ring, .pos = from, .nslots = (uint32_t)n,
              .tid = tid};
  /* one hash of the span's slots in order, wherever the ring wraps
   * (docs/FORMATS.md: what a replay computes over the entry) */
  XXH3_state_t st;
  XXH3_64bits_reset_withSeed(&st, gpd_hash64(&e, offsetof(jent_t, hash), 0));
  XXH3_64bits_update(&st, slots + start * GPD_SLOT_SIZE, first * GPD_SLOT_SIZE);
  if (n > first)
    XXH3_64bits_update(&st, slots, (n - first) * GPD_SLOT_SIZE);
  e.hash = XXH3_64bits_digest(&st);
  struct iovec iov[3] = {{&e, sizeof e},
                         {(void *)(slots + start * GPD_SLOT_SIZE), first * GPD_SLOT_SIZE},
                         {(void *)slots, (n - first) * GPD_SLOT_SIZE}};
  ssize_t w = writev(jr->fd, iov, n > first ? 3 : 2);
  if (w != (ssize_t)bytes) {
    /* a torn entry ends its segment for a replay: go on in a new one
     * (this span stays in the ring until the commit) */
    GPD_WARN("journal: profile %" PRIu64 ": write failed (%s); its slots wait for the commit",
             p->profile_id, w < 0 ? strerror(errno) : "short write");
    if (w > 0) {
      jr->written += (uint64_t)w;
      live_add(j, a, (uint64_t)w);
    }
    gpd__journal_seg_close(jr);
    jr->failed = 1;
    jr->skipped++;
    return 0;
  }
  jr->written += bytes;
  live_add(j, a, bytes);
  jr->rel[ring] = to;
  gpd_ring_release(&p->region, ring, to);
  return 1;
}

int gpd_journal_append(gpd_daemon_t *d, gpd_proc_t *p, uint32_t ring) {
  if (p->cursor == NULL || ring >= p->region.nrings)
    return 0;
  return gpd__journal_span(d, p, ring, p->cursor[ring], p->prof.ring_tid);
}

void gpd_journal_released(gpd_proc_t *p, uint32_t ring) {
  gpd_pjournal_t *jr = &p->jr;
  if (jr->rel && p->cursor && ring < p->region.nrings && p->cursor[ring] > jr->rel[ring])
    jr->rel[ring] = p->cursor[ring];
}

void gpd_journal_cut(gpd_proc_t *p, gpd_jcut_t *cut) {
  gpd_pjournal_t *jr = &p->jr;
  gpd__journal_seg_close(jr);
  /* held spans (journal-hold.c) are not in the profile yet: a commit of
   * this snapshot covers only the segments before them */
  uint32_t end = jr->hold_on ? jr->hold_seg : jr->seg;
  cut->any = end > jr->seg_lo;
  cut->lo = jr->seg_lo;
  cut->seg = end ? end - 1 : 0;
  cut->written = jr->hold_on ? jr->hold_written : jr->written;
}

void gpd_journal_committed(gpd_proc_t *p, const gpd_jcut_t *cut, const uint64_t *cursor,
                           uint32_t ncursor) {
  gpd_pjournal_t *jr = &p->jr;
  for (uint32_t i = 0; jr->rel && cursor && i < ncursor && i < p->region.nrings; i++)
    if (cursor[i] > jr->rel[i])
      jr->rel[i] = cursor[i];
  if (cut->any && cut->seg + 1 > jr->seg_lo)
    jr->seg_lo = cut->seg + 1;
  if (cut->written > jr->freed) {
    live_sub(jr->j, jr->acct, cut->written - jr->freed);
    jr->freed = cut->written;
  }
  jr->failed = 0; /* a disk that was full may have room again */
}

void gpd_journal_unlink(gpd_daemon_t *d, uint64_t profile_id, uint32_t lo, uint32_t seg) {
  if (d->journal == NULL)
    return;
  char name[64];
  for (uint64_t s = lo; s <= seg; s++) {
    gpd__journal_seg_name(name, sizeof name, profile_id, (uint32_t)s);
    unlinkat(d->journal->dirfd, name, 0);
  }
}

void gpd_journal_release(gpd_proc_t *p) {
  gpd_pjournal_t *jr = &p->jr;
  if (jr->has_fd) {
    close(jr->fd);
    jr->has_fd = 0;
  }
  if (jr->written > jr->freed)
    live_sub(jr->j, jr->acct, jr->written - jr->freed);
  jr->freed = jr->written;
  if (jr->acct && jr->corr_pub)
    __atomic_fetch_sub(&jr->acct->corr, jr->corr_pub, __ATOMIC_RELAXED);
  jr->corr_pub = 0;
  free(jr->rel);
  free(jr->from);
  jr->rel = jr->from = NULL;
  free(jr->rbuf);
  jr->rbuf = NULL;
  jr->rcap = 0;
  jr->hold_on = 0;
}

void gpd_journal_corr_bound(const gpd_daemon_t *d, gpd_proc_t *p) {
  gpd_jacct_t *a = p->jr.acct;
  if (a == NULL)
    return;
  uint64_t max = GPD_UID_MAX_CORR, quota = d ? gpd_gpubin_uid_quota(d) : 0;
  if (quota && quota / GPD_PENDING_ROW_BYTES < max)
    max = quota / GPD_PENDING_ROW_BYTES;
  uint64_t all = __atomic_load_n(&a->corr, __ATOMIC_RELAXED);
  uint64_t others = all > p->jr.corr_pub ? all - p->jr.corr_pub : 0;
  uint64_t room = others < max ? max - others : 0;
  if (room < 4096)
    room = 4096;
  p->prof.max_corr = room < GPD_PROFILE_MAX_CORR ? (uint32_t)room : GPD_PROFILE_MAX_CORR;
}

void gpd_journal_corr_publish(gpd_proc_t *p) {
  gpd_jacct_t *a = p->jr.acct;
  uint64_t n = p->prof.corr.n;
  if (a == NULL || n == p->jr.corr_pub)
    return;
  if (n > p->jr.corr_pub)
    __atomic_fetch_add(&a->corr, n - p->jr.corr_pub, __ATOMIC_RELAXED);
  else
    __atomic_fetch_sub(&a->corr, p->jr.corr_pub - n, __ATOMIC_RELAXED);
  p->jr.corr_pub = n;
}

uint64_t gpd_journal_uid_bytes(gpd_daemon_t *d, uid_t uid) {
  gpd_journal_t *j = d->journal;
  if (j == NULL)
    return 0;
  pthread_mutex_lock(&j->mu);
  uint64_t n = 0;
  for (gpd_jacct_t *a = j->accts; a; a = a->next)
    if (a->uid == uid)
      n = __atomic_load_n(&a->live, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&j->mu);
  return n;
}

/* ------------------------------------------------------------- replay */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Segment numbers of profile id, ascending (malloc'd), count in *n. */
static uint32_t *segs_of(gpd_journal_t *j, uint64_t id, uint32_t *n) {
  *n = 0;
  int fd = dup(j->dirfd);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  if (dir == NULL) {
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  rewinddir(dir);
  uint32_t *v = NULL;
  size_t cap = 0;
  for (struct dirent *de; (de = readdir(dir)) != NULL && *n < J_MAX_SEGS;) {
    uint64_t fid;
    uint32_t seg;
    if (!seg_parse(de->d_name, &fid, &seg) || fid != id)
      continue;
    if (gpd_grow(&v, &cap, *n, sizeof *v, 16) < 0)
      break;
    v[(*n)++] = seg;
  }
  closedir(dir);
  if (v)
    qsort(v, *n, sizeof *v, cmp_u32);
  return v;
}

ssize_t gpd__journal_entry_read(int fd, off_t off, uint32_t nrings, uint32_t ring_slots, jent_t *e,
                                uint8_t **buf, size_t *cap) {
  if (pread(fd, e, sizeof *e, off) != (ssize_t)sizeof *e)
    return 0;
  if (e->magic != J_ENT_MAGIC || e->ring >= nrings || e->nslots < 1 || e->nslots > ring_slots)
    return 0;
  size_t n = (size_t)e->nslots * GPD_SLOT_SIZE;
  if (n > *cap) {
    uint8_t *g = realloc(*buf, n);
    if (g == NULL)
      return -ENOMEM;
    *buf = g;
    *cap = n;
  }
  if (pread(fd, *buf, n, off + (off_t)sizeof *e) != (ssize_t)n)
    return 0; /* torn at the end: the daemon died in this write (not released) */
  if (gpd_hash64(*buf, n, gpd_hash64(e, offsetof(jent_t, hash), 0)) != e->hash)
    return 0;
  return (ssize_t)(sizeof *e + n);
}

int64_t gpd__journal_feed(gpd_profile_t *pr, const jent_t *e, const uint8_t *buf, uint64_t *cur, int *bad) {
  uint64_t q = e->pos, end = e->pos + e->nslots;
  int64_t n = 0;
  pr->ring_tid = e->tid;
  while (q < end) {
    const uint8_t *rec = buf + (q - e->pos) * GPD_SLOT_SIZE;
    unsigned ns = ((const gpd_rec_hdr_t *)rec)->nslots;
    if (ns < 1 || ns > end - q || ns * GPD_SLOT_SIZE > GPD_REC_MAX_BYTES) {
      *bad = 1;
      return n;
    }
    if (q >= *cur) {
      _Alignas(64) uint8_t copy[GPD_REC_MAX_BYTES];
      memcpy(copy, rec, (size_t)ns * GPD_SLOT_SIZE);
      if (gpd_rec_validate(copy, (size_t)ns * GPD_SLOT_SIZE) != 0) {
        *bad = 1;
        return n;
      }
      gpd_profile_ingest(pr, copy, (size_t)ns * GPD_SLOT_SIZE);
      n++;
      *cur = q + ns;
    }
    q += ns;
  }
  return n;
}

typedef struct replay_s {
  gpd_proc_t *p;
  uint64_t *cur;
  uint8_t *started, *stopped;
  uint8_t *buf; /* cap bytes */
  size_t cap;
  int64_t records;
} replay_t;

/* Feed one entry's records at or past the ring's position. */
static void replay_entry(replay_t *r, const jent_t *e) {
  uint32_t ring = e->ring;
  if (r->stopped[ring])
    return;
  if (!r->started[ring]) {
    r->cur[ring] = e->pos;
    r->started[ring] = 1;
  }
  if (e->pos > r->cur[ring]) { /* a gap: what follows is in the ring */
    r->stopped[ring] = 1;
    return;
  }
  if (e->pos + e->nslots <= r->cur[ring])
    return; /* committed already */
  int bad = 0;
  r->records += gpd__journal_feed(&r->p->prof, e, r->buf, &r->cur[ring], &bad);
  if (bad)
    r->stopped[ring] = 1;
}

/* Replay one segment file; 1 when it is p's (identity matches), else 0. */
static int replay_seg(replay_t *r, int fd) {
  gpd_proc_t *p = r->p;
  jhdr_t h;
  if (gpd__journal_hdr_read(fd, &h) < 0 || h.uid != (uint32_t)p->uid || h.pid != (int32_t)p->pid ||
      (h.proc_start && p->proc_start && h.proc_start != p->proc_start) ||
      h.nrings != p->region.nrings || h.ring_slots != p->region.ring_slots)
    return 0;
  jent_t e;
  ssize_t n;
  for (off_t off = sizeof h;
       (n = gpd__journal_entry_read(fd, off, h.nrings, h.ring_slots, &e, &r->buf, &r->cap)) > 0;
       off += n)
    replay_entry(r, &e);
  return 1;
}

int64_t gpd_journal_replay(gpd_daemon_t *d, gpd_proc_t *p, uint64_t from_id) {
  gpd_journal_t *j = d->journal;
  gpd_pjournal_t *jr = &p->jr;
  if (j == NULL || jr->rel == NULL || from_id == 0)
    return 0;
  uint32_t nr = p->region.nrings, nsegs = 0;
  replay_t r = {.p = p};
  r.cur = calloc(nr ? nr : 1, sizeof *r.cur);
  r.started = calloc(nr ? nr : 1, 1);
  r.stopped = calloc(nr ? nr : 1, 1);
  r.cap = (size_t)p->region.ring_slots * GPD_SLOT_SIZE;
  r.buf = malloc(r.cap);
  uint32_t *segs = segs_of(j, from_id, &nsegs);
  int64_t ret = -ENOMEM;
  if (!r.cur || !r.started || !r.stopped || !r.buf)
    goto out;
  for (uint32_t i = 0; i < nr; i++)
    if (jr->from[i] != UINT64_MAX) {
      r.cur[i] = jr->from[i];
      r.started[i] = 1;
    }
  p->prof.trace = d->trace;
  uint32_t adopted = 0, lo = 0, hi = 0;
  for (uint32_t k = 0; k < nsegs; k++) {
    char name[64], to[64];
    gpd__journal_seg_name(name, sizeof name, from_id, segs[k]);
    int fd = openat(j->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      continue;
    int mine = replay_seg(&r, fd);
    close(fd);
    if (!mine)
      continue;
    /* the segment is this profile's now: a successor of this daemon
     * replays it under the id the process hands back next time */
    if (from_id != p->profile_id) {
      gpd__journal_seg_name(to, sizeof to, p->profile_id, segs[k]);
      if (renameat(j->dirfd, name, j->dirfd, to) < 0)
        continue;
    }
    lo = adopted ? lo : segs[k];
    hi = segs[k];
    adopted++;
  }
  if (adopted) {
    jr->seg_lo = lo;
    jr->seg = hi + 1;
  }
  uint64_t lost = 0;
  for (uint32_t i = 0; i < nr; i++) {
    gpd_ring_ctl_t *c = &p->region.ctl[i];
    uint64_t tail = atomic_load_explicit(&c->tail, memory_order_acquire);
    uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
    uint64_t pos = r.started[i] ? r.cur[i] : tail;
    if (pos < tail) { /* released, yet neither stored nor journaled */
      lost += tail - pos;
      pos = tail;
    }
    if (pos > head || pos - tail > p->region.ring_slots)
      pos = tail;
    p->cursor[i] = pos;
    jr->rel[i] = pos;
    gpd_ring_release(&p->region, i, pos);
    if (jr->from[i] != UINT64_MAX)
      p->cursor_saved[i] = jr->from[i];
  }
  if (r.records)
    gpd_profile_retry(&p->prof);
  if (adopted)
    GPD_INFO("profile %" PRIu64 ": %" PRId64 " records replayed from %u journal segments of profile %" PRIu64,
             p->profile_id, r.records, adopted, from_id);
  if (lost)
    GPD_WARN("profile %" PRIu64 ": %" PRIu64 " ring slots were released but are neither stored nor "
             "journaled: lost", p->profile_id, lost);
  ret = r.records;
out:
  free(segs);
  free(r.cur);
  free(r.started);
  free(r.stopped);
  free(r.buf);
  free(jr->from);
  jr->from = NULL;
  return ret;
}

/* -------------------------------------------------------------- sweep */

void gpd_journal_sweep(gpd_daemon_t *d) {
  gpd_journal_t *j = d->journal;
  if (j == NULL)
    return;
  j->last_sweep_ns = gpd_clock_ns();
  int fd = dup(j->dirfd);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  if (dir == NULL) {
    if (fd >= 0)
      close(fd);
    return;
  }
  rewinddir(dir);
  unsigned removed = 0;
  for (struct dirent *de; (de = readdir(dir)) != NULL;) {
    uint64_t id;
    uint32_t seg;
    if (!seg_parse(de->d_name, &id, &seg))
      continue;
    int sfd = openat(j->dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    jhdr_t h;
    struct stat st;
    int keep = sfd >= 0 && gpd__journal_hdr_read(sfd, &h) == 0 && hdr_alive(&h);
    /* a header not readable yet: a segment the monitor is creating */
    if (!keep && sfd >= 0 && fstat(sfd, &st) == 0 && st.st_size < (off_t)sizeof h &&
        time(NULL) - st.st_mtime < 60)
      keep = 1;
    if (sfd >= 0)
      close(sfd);
    if (!keep && unlinkat(j->dirfd, de->d_name, 0) == 0)
      removed++;
  }
  closedir(dir);
  if (removed)
    GPD_INFO("journal: removed %u segments of processes that are gone", removed);
}

int gpd_journal_sweep_due(gpd_daemon_t *d, uint64_t every_ns) {
  return d->journal && gpd_clock_ns() - d->journal->last_sweep_ns >= every_ns;
}
