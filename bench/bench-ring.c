/* bench-ring.c - cross-process ring throughput and consumer ingest.
 *
 *   bench-ring [-n RECORDS] [-s RING_SLOTS] [--spin] [--experiments] [--build DIR (ignored)]
 *
 * 1. ring, drop:  a forked producer pushes N 1-slot INVOKE records (32 B,
 *    record format 2) into one ring as fast as it can (shim semantics: a
 *    full ring drops); the parent drains with gpd_ring_consume.  Rate =
 *    records received / parent time.
 * 2. ring, lossless: the same, the producer retries on -ENOSPC (the most
 *    the consumer can take).
 *    The consumer polls as gpuprofd's monitor does (daemon/monitor.c): it
 *    sleeps poll_us (200 us) after a pass that found fewer than 256
 *    records.  --spin (and the "spinning consumer" row) polls without
 *    sleeping: the consumer then chases the producer record by record and
 *    every record's slot and the head line move between the cores while
 *    they are written (the worst case).
 *    Besides the rate, CPU ns per record of each side (getrusage / wait4:
 *    not inflated by other processes' load) are shown.
 * 3. baseline in the same run: the lossless row with 64-byte records (a
 *    2-slot CPUSAMPLE: the bytes per record of format 1, whose INVOKE
 *    filled a 64-byte slot), through the same ring code.
 * 4. ingest: the consumer alone, ring pre-filled (INVOKE + ACTIVITY mix),
 *    validate + dispatch to a no-op callback; refills are not timed.
 * Baselines in the same run: memcpy of the records into a ring-sized
 * buffer in one process (32-B and 64-B records), and a pipe(2) carrying
 * the same 32-B records between two processes (4 KiB writes).
 * Also: the cost of the first write to each 4-KiB page of a fresh shared
 * memfd mapping (a page fault; a ring's pages are each written for the
 * first time during its first lap), CPU us per page, and the same for a
 * producer's first lap through a fresh ring.
 * Target (docs/DESIGN.md): >= 100 M records/s cross-process, >= 25 M/s
 * ingest per monitor thread. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/region.h"

static uint64_t n_rec = 50000000ull;
static uint32_t ring_slots = 1u << 17; /* 4 MiB of 32-B slots: gpuprofd's default ring */
static int spin_only = 0;
static int experiments = 0; /* --experiments: the EXP_* rows */

#define POLL_US 200u       /* gpuprofd's default poll_us */
#define SLEEP_BELOW 256    /* the monitor sleeps after a pass below this */

static double tv_ns(struct timeval tv) { return (double)tv.tv_sec * 1e9 + (double)tv.tv_usec * 1e3; }
static double ru_ns(const struct rusage *ru) { return tv_ns(ru->ru_utime) + tv_ns(ru->ru_stime); }

static gpd_rec_invoke_t mk_invoke(uint64_t corr) {
  gpd_rec_invoke_t v;
  memset(&v, 0, sizeof v);
  v.h.type = GPD_REC_INVOKE;
  v.h.version = GPD_REC_VERSION;
  v.api = GPD_API_CUDA;
  v.op = GPD_OP_KERNEL;
  v.node = 1;
  v.corr = corr;
  return v;
}

/* The baseline's 64-byte record: a CPUSAMPLE (2 slots), sequence in ts. */
static gpd_rec_cpusample_t mk_wide(uint64_t seq) {
  gpd_rec_cpusample_t c;
  memset(&c, 0, sizeof c);
  c.h.type = GPD_REC_CPUSAMPLE;
  c.h.version = GPD_REC_VERSION;
  c.node = 1;
  c.ts = seq;
  c.weight = 1;
  c.expirations = 1;
  return c;
}

typedef struct {
  uint64_t n;
  uint64_t last;
  uint64_t bad;
} sink_t;

static void sink_fn(void *arg, const void *rec, size_t nbytes) {
  sink_t *s = arg;
  const gpd_rec_hdr_t *h = rec;
  uint64_t seq = h->type == GPD_REC_INVOKE ? ((const gpd_rec_invoke_t *)rec)->corr
                                           : ((const gpd_rec_cpusample_t *)rec)->ts;
  (void)nbytes;
  if (seq <= s->last)
    s->bad++;
  s->last = seq;
  s->n++;
}

static void nop_fn(void *arg, const void *rec, size_t nbytes) {
  (void)rec;
  (void)nbytes;
  (*(uint64_t *)arg)++;
}

typedef struct {
  double secs;
  uint64_t received;
  uint64_t drops;
  uint64_t bad;
  double prod_cpu_ns; /* producer CPU time (child, wait4) */
  double cons_cpu_ns; /* consumer CPU time (parent, getrusage delta) */
} result_t;

/* Experiments (--experiments): what limits the cross-process rate.  Not
 * the shim's protocol: a bench-local producer writes the 32-B INVOKE slots
 * and head directly (lossless, waiting for room), and for one of them a
 * bench-local consumer replaces gpd_ring_consume.
 *   EXP_BATCH : head published once per 16 records, not per record;
 *   EXP_NOREAD: the consumer moves the tail without reading the slots (no
 *               slot line goes to the consumer's core and back);
 *   EXP_RAW   : the same bench-local producer, head published per record
 *               (EXP_BATCH's own baseline: what the batching alone buys).
 * The ring is populated at once (madvise) instead of ahead. */
enum { EXP_NONE, EXP_BATCH, EXP_NOREAD, EXP_RAW };
#define EXP_BATCH_N 16u

static void raw_publish(gpd_ring_ctl_t *c, uint64_t head) {
  atomic_store_explicit(&c->head, head, memory_order_release);
}

static void raw_produce(gpd_producer_t *p, int exp) {
  gpd_ring_ctl_t *c = p->ctl;
  const uint64_t cap = p->mask + 1;
  uint64_t head = p->head, tail = p->tail_cache, pub = head;
#ifdef MADV_POPULATE_WRITE
  madvise(p->slots, (size_t)cap * GPD_SLOT_SIZE, MADV_POPULATE_WRITE);
#endif
  gpd_rec_invoke_t v = mk_invoke(1);
  v.h.nslots = GPD_REC_NSLOTS(v);
  for (uint64_t s = 1; s <= n_rec; s++) {
    while (head + 1 - tail > cap) {
      if (pub != head) /* never wait on records not yet published */
        raw_publish(c, pub = head);
      tail = atomic_load_explicit(&c->tail, memory_order_acquire);
      if (head + 1 - tail > cap)
        __builtin_ia32_pause();
    }
    v.corr = s;
    memcpy(p->slots + (head & p->mask) * GPD_SLOT_SIZE, &v, sizeof v);
    head++;
    if (exp != EXP_BATCH || head % EXP_BATCH_N == 0)
      raw_publish(c, pub = head);
  }
  raw_publish(c, head);
}

/* Bench-local consumer of EXP_NOREAD: up to 8192 slots per pass, tail
 * published after the pass.  Records taken, or -1. */
static int raw_consume(gpd_region_t *r, sink_t *s) {
  gpd_ring_ctl_t *c = &r->ctl[0];
  uint64_t tail = atomic_load_explicit(&c->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
  if (head < tail || head - tail > r->ring_slots)
    return -1;
  uint64_t n = head - tail < 8192 ? head - tail : 8192;
  s->n += n;
  atomic_store_explicit(&c->tail, tail + n, memory_order_release);
  return (int)n;
}

static int run_ring(int lossless, int spin, int exp, int wide, result_t *res) {
  gpd_region_t r;
  int err = gpd_region_create(&r, 1, ring_slots, (int32_t)getpid(), 1);
  if (err)
    return err;
  struct rusage ru0, ru1, cru;
  getrusage(RUSAGE_SELF, &ru0);
  uint64_t t0 = gpd_clock_ns();
  pid_t pid = fork();
  if (pid < 0)
    return -errno;
  if (pid == 0) {
    gpd_region_t cr;
    gpd_producer_t p;
    if (gpd_region_map(&cr, dup(r.fd)) || gpd_producer_claim(&cr, &p, (uint32_t)getpid()) < 0)
      _exit(2);
    if (exp != EXP_NONE) {
      raw_produce(&p, exp);
      _exit(0);
    }
    gpd_rec_invoke_t v = mk_invoke(1);
    gpd_rec_cpusample_t w = mk_wide(1);
    const void *rec = wide ? (const void *)&w : (const void *)&v;
    size_t len = wide ? sizeof w : sizeof v;
    for (uint64_t s = 1; s <= n_rec; s++) {
      v.corr = s;
      w.ts = s;
      if (lossless) {
        while (gpd_producer_push(&p, rec, len) == -ENOSPC)
          __builtin_ia32_pause(); /* don't steal the tail's line */
      } else {
        gpd_producer_push(&p, rec, len);
      }
    }
    gpd_producer_retire(&p);
    _exit(0);
  }
  sink_t s = {0};
  int exited = 0, status = 0;
  uint64_t next_wait = 0; /* wait4 at most once per ms: a syscall per empty
                             poll (~10 us on a PVM guest) made the spinning
                             consumer a syscall loop */
  for (;;) {
    int got = exp == EXP_NOREAD ? raw_consume(&r, &s) : gpd_ring_consume(&r, 0, 8192, sink_fn, &s);
    if (got < 0) {
      fprintf(stderr, "consume: %d\n", got);
      break;
    }
    if (got == 0) {
      if (exited)
        break;
      uint64_t now = gpd_clock_ns();
      if (now >= next_wait) {
        next_wait = now + 1000000;
        if (wait4(pid, &status, WNOHANG, &cru) == pid)
          exited = 1; /* drain once more */
      }
    }
    if (!spin && got < SLEEP_BELOW)
      usleep(POLL_US);
  }
  res->secs = (double)(gpd_clock_ns() - t0) / 1e9;
  getrusage(RUSAGE_SELF, &ru1);
  res->cons_cpu_ns = ru_ns(&ru1) - ru_ns(&ru0);
  res->prod_cpu_ns = ru_ns(&cru);
  res->received = s.n;
  res->bad = s.bad;
  /* counters live in the shared region; with lossless retries the drops
   * counter counts failed attempts, not lost records */
  res->drops = atomic_load(&r.ctl[0].drops);
  gpd_region_close(&r);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

static double run_ingest(uint64_t *out_n) {
  gpd_region_t r;
  gpd_producer_t p;
  if (gpd_region_create(&r, 1, ring_slots, 1, 1) || gpd_producer_claim(&r, &p, 1) < 0)
    return -1;
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.h.type = GPD_REC_ACTIVITY;
  a.h.version = GPD_REC_VERSION;
  a.api = GPD_API_CUDA;
  a.op = GPD_OP_KERNEL;
  a.corr = 1;
  uint64_t total = 0, ns = 0, corr = 1;
  while (total < n_rec) {
    /* fill: 2 INVOKE per ACTIVITY until full (not timed) */
    for (;;) {
      gpd_rec_invoke_t v = mk_invoke(corr++);
      int rc = (corr % 3) ? gpd_producer_push(&p, &v, sizeof v) : gpd_producer_push(&p, &a, sizeof a);
      if (rc)
        break;
    }
    uint64_t n = 0, t0 = gpd_clock_ns();
    int got;
    while ((got = gpd_ring_consume(&r, 0, 1u << 20, nop_fn, &n)) > 0)
      ;
    ns += gpd_clock_ns() - t0;
    if (got < 0)
      return -1;
    total += n;
  }
  gpd_region_close(&r);
  *out_n = total;
  return (double)ns / 1e9;
}

/* CPU us per page of the first write to each page of a fresh 4-MiB shared
 * memfd mapping (as a ring's first lap does), median of 3. */
static double run_pagefault(void) {
  const size_t sz = 4u << 20;
  double v[3];
  for (int k = 0; k < 3; k++) {
    gpd_region_t r;
    v[k] = -1;
    if (gpd_region_create(&r, 1, (uint32_t)(sz / GPD_SLOT_SIZE), 1, 1))
      return -1;
    struct rusage a, b;
    volatile uint8_t *d = gpd_region_ring_data(&r, 0);
    getrusage(RUSAGE_SELF, &a);
    for (size_t off = 0; off < sz; off += 4096)
      d[off] = 1;
    getrusage(RUSAGE_SELF, &b);
    v[k] = (ru_ns(&b) - ru_ns(&a)) / 1e3 / (double)(sz / 4096);
    gpd_region_close(&r);
  }
  double lo = v[0] < v[1] ? v[0] : v[1], hi = v[0] < v[1] ? v[1] : v[0];
  return v[2] < lo ? lo : v[2] > hi ? hi : v[2];
}

/* CPU us per page of a producer's first lap through a fresh 4-MiB ring
 * (gpd_producer_push populates the pages ahead: region.c), the consumer
 * simulated by advancing the tail; median of 3. */
static double run_first_lap(void) {
  const uint32_t slots = (4u << 20) / GPD_SLOT_SIZE;
  double v[3];
  for (int k = 0; k < 3; k++) {
    gpd_region_t r;
    gpd_producer_t p;
    if (gpd_region_create(&r, 1, slots, 1, 1) || gpd_producer_claim(&r, &p, 1) < 0)
      return -1;
    gpd_rec_invoke_t inv = mk_invoke(1);
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    for (uint64_t s = 0; s < slots; s++) {
      inv.corr = s + 1;
      gpd_producer_push(&p, &inv, sizeof inv);
      atomic_store_explicit(&r.ctl[0].tail, s + 1, memory_order_release);
    }
    getrusage(RUSAGE_SELF, &b);
    v[k] = (ru_ns(&b) - ru_ns(&a)) / 1e3 / (double)((size_t)slots * GPD_SLOT_SIZE / 4096);
    gpd_region_close(&r);
  }
  double lo = v[0] < v[1] ? v[0] : v[1], hi = v[0] < v[1] ? v[1] : v[0];
  return v[2] < lo ? lo : v[2] > hi ? hi : v[2];
}

/* memcpy of `rec_bytes`-byte records into a ring-sized buffer, one
 * process (the copy the producer makes, with no one reading). */
static double run_memcpy(size_t rec_bytes) {
  size_t slots = ring_slots;
  uint8_t *ring = aligned_alloc(64, slots * rec_bytes);
  uint8_t rec[64];
  gpd_rec_invoke_t v = mk_invoke(1);
  memset(rec, 0, sizeof rec);
  memset(ring, 0, slots * rec_bytes);
  uint64_t t0 = gpd_clock_ns();
  for (uint64_t s = 0; s < n_rec; s++) {
    v.corr = s;
    memcpy(rec, &v, sizeof v);
    if (rec_bytes == 64)
      memcpy(ring + (s & (slots - 1)) * 64, rec, 64);
    else
      memcpy(ring + (s & (slots - 1)) * 32, rec, 32);
    __asm__ __volatile__("" ::"r"(ring) : "memory");
  }
  double secs = (double)(gpd_clock_ns() - t0) / 1e9;
  free(ring);
  return secs;
}

static double run_pipe(uint64_t *got_out) {
  int fds[2];
  if (pipe(fds))
    return -1;
  uint64_t t0 = gpd_clock_ns();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    gpd_rec_invoke_t batch[4096 / sizeof(gpd_rec_invoke_t)];
    const int nb = (int)(sizeof batch / sizeof batch[0]);
    for (int i = 0; i < nb; i++)
      batch[i] = mk_invoke(1);
    for (uint64_t s = 0; s < n_rec; s += (uint64_t)nb) {
      for (int i = 0; i < nb; i++)
        batch[i].corr = s + (uint64_t)i;
      size_t off = 0, len = sizeof batch;
      while (off < len) {
        ssize_t w = write(fds[1], (char *)batch + off, len - off);
        if (w < 0 && errno != EINTR)
          _exit(2);
        if (w > 0)
          off += (size_t)w;
      }
    }
    _exit(0);
  }
  close(fds[1]);
  static char buf[1 << 16];
  uint64_t bytes = 0;
  for (;;) {
    ssize_t r = read(fds[0], buf, sizeof buf);
    if (r == 0)
      break;
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    bytes += (uint64_t)r;
  }
  waitpid(pid, NULL, 0);
  close(fds[0]);
  *got_out = bytes / sizeof(gpd_rec_invoke_t);
  return (double)(gpd_clock_ns() - t0) / 1e9;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-n") && i + 1 < argc)
      n_rec = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "-s") && i + 1 < argc)
      ring_slots = (uint32_t)strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--spin"))
      spin_only = 1;
    else if (!strcmp(argv[i], "--experiments"))
      experiments = 1;
    else if (!strcmp(argv[i], "--build") && i + 1 < argc)
      i++;
  }
  printf("records per run: %llu (32-B INVOKE, record format %u), ring: %u slots of %u B (%u KiB), %ld CPUs\n\n",
         (unsigned long long)n_rec, GPD_REC_VERSION, ring_slots, GPD_SLOT_SIZE, ring_slots / (1024 / GPD_SLOT_SIZE),
         sysconf(_SC_NPROCESSORS_ONLN));
  printf("| what | records | s | M records/s | drops | vs baseline |\n");
  printf("|---|---:|---:|---:|---:|---|\n");

  double t_memcpy = run_memcpy(32), t_memcpy64 = run_memcpy(64);
  double r_memcpy = (double)n_rec / t_memcpy / 1e6, r_memcpy64 = (double)n_rec / t_memcpy64 / 1e6;
  uint64_t pipe_n = 0;
  double t_pipe = run_pipe(&pipe_n);
  double r_pipe = (double)pipe_n / t_pipe / 1e6;
  printf("| baseline: memcpy 32-B records, same process | %llu | %.3f | %.1f | - | 1.00x |\n",
         (unsigned long long)n_rec, t_memcpy, r_memcpy);
  printf("| baseline: memcpy 64-B records, same process | %llu | %.3f | %.1f | - | 1.00x |\n",
         (unsigned long long)n_rec, t_memcpy64, r_memcpy64);
  printf("| baseline: pipe(2) of 32-B records, 4 KiB writes, 2 processes | %llu | %.3f | %.1f | - | 1.00x |\n",
         (unsigned long long)pipe_n, t_pipe, r_pipe);

  printf("| baseline: first write to each 4-KiB page of a fresh 4-MiB shared mapping | %u pages | - | %.2f CPU us/page | - | - |\n",
         (4u << 20) / 4096, run_pagefault());
  printf("| ring: producer's first lap through a fresh 4-MiB ring (pages populated ahead) | %u pages | - | %.2f CPU us/page | - | - |\n",
         (4u << 20) / 4096, run_first_lap());
  int rc = 0;
  enum { NMODES = 7 };
  static const struct {
    int lossless, spin, exp, wide, expt;
    const char *what;
  } modes[NMODES] = {
      {0, 0, EXP_NONE, 0, 0, "drop when full"},
      {1, 0, EXP_NONE, 0, 0, "lossless (retry)"},
      {1, 0, EXP_NONE, 1, 0, "baseline: lossless, 64-B records (2 slots: format 1's bytes per INVOKE)"},
      {1, 1, EXP_NONE, 0, 0, "lossless, spinning consumer"},
      {1, 0, EXP_RAW, 0, 1, "experiment: bench-local producer, head published per record"},
      {1, 0, EXP_BATCH, 0, 1, "experiment: head published per 16 records"},
      {1, 0, EXP_NOREAD, 0, 1, "experiment: consumer does not read the slots"},
  };
  /* 3 rounds, each running every mode once (modes alternate, so a change
   * of the machine's load falls on all of them); the median by rate is
   * shown (the VM is shared and noisy) */
  result_t res[NMODES][3];
  double rate[NMODES][3];
  memset(res, 0, sizeof res);
  memset(rate, 0, sizeof rate);
  for (int k = 0; k < 3; k++) {
    for (int m = 0; m < NMODES; m++) {
      if ((spin_only && !modes[m].spin) || (modes[m].expt && !experiments))
        continue;
      int err = run_ring(modes[m].lossless, modes[m].spin, modes[m].exp, modes[m].wide, &res[m][k]);
      if (err || res[m][k].bad) {
        fprintf(stderr, "ring run failed: %d, %llu out of order\n", err, (unsigned long long)res[m][k].bad);
        rc = 1;
      }
      rate[m][k] = (double)res[m][k].received / res[m][k].secs / 1e6;
    }
  }
  for (int m = 0; m < NMODES; m++) {
    if ((spin_only && !modes[m].spin) || (modes[m].expt && !experiments))
      continue;
    int lo = 0, hi = 0;
    for (int k = 1; k < 3; k++) {
      if (rate[m][k] < rate[m][lo])
        lo = k;
      if (rate[m][k] > rate[m][hi])
        hi = k;
    }
    int med = 3 - lo - hi;
    if (lo == hi)
      med = lo;
    const result_t *x = &res[m][med];
    double rm = modes[m].wide ? r_memcpy64 : r_memcpy;
    printf("| ring, cross-process, %s (median of 3; range %.1f-%.1f) | %llu | %.3f | %.1f | %llu%s | %.2fx pipe, "
           "%.2fx memcpy of the same records; CPU ns/record: producer %.1f, consumer %.1f |\n",
           modes[m].what, rate[m][lo], rate[m][hi], (unsigned long long)x->received, x->secs, rate[m][med],
           (unsigned long long)x->drops, modes[m].lossless ? " retries" : "", rate[m][med] / r_pipe,
           rate[m][med] / rm, x->prod_cpu_ns / (double)n_rec,
           x->cons_cpu_ns / (double)(x->received ? x->received : 1));
  }
  uint64_t in_n = 0;
  double t_in = run_ingest(&in_n);
  if (t_in <= 0) {
    fprintf(stderr, "ingest run failed\n");
    return 1;
  }
  double r_in = (double)in_n / t_in / 1e6;
  printf("| ingest: consume+validate+no-op (2 INVOKE : 1 ACTIVITY) | %llu | %.3f | %.1f | - | %.2fx memcpy |\n",
         (unsigned long long)in_n, t_in, r_in, r_in / r_memcpy);
  return rc;
}
