/* bench-ingest.c - daemon ingest per monitor thread: records/s consumed
 * from a pre-filled region (gpd_profile_consume, the monitor's entry) and
 * attributed (profile.c).
 * Scenarios: INVOKE+ACTIVITY pairs in one ring (matched at once), and
 * ACTIVITY ring drained before the INVOKE ring (every activity waits in
 * the pending list, matched by gpd_profile_retry).  The "monitor path"
 * rows drive the daemon's own gpd_monitor_drain (private cursors,
 * gpd_profile_consume, back-pressure check) on a registered process, with
 * the rings released after each round as the writer does after its
 * commit, and time the writer's snapshot of the unmatched state
 * (gpd_profile_pending_delta: the rows that changed since the last flush)
 * separately, against rewriting every row (its first flush, and what
 * every flush did before).  Target (DESIGN.md):
 * >= 10 M records/s.  Prints a table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "gpuprof/region.h"

#define SLOTS (1u << 21)
/* slots of an INVOKE + ACTIVITY pair in one ring, and of an ACTIVITY alone */
#define PAIR_SLOTS (GPD_REC_NSLOTS(gpd_rec_invoke_t) + GPD_REC_NSLOTS(gpd_rec_activity_t))
#define ACT_SLOTS GPD_REC_NSLOTS(gpd_rec_activity_t)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of the calling thread (wall time on a loaded 2-core VM
 * counts other processes' time slices too). */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *only; /* argv[1]: run the scenarios whose name has it */
static int wanted(const char *name) { return only == NULL || strstr(name, only) != NULL; }

static void push(gpd_producer_t *p, const void *r, size_t n) {
  if (gpd_producer_push(p, r, n) != 0) {
    fprintf(stderr, "ring full\n");
    exit(1);
  }
}

static uint64_t corr_n;
/* "graph replays": activities run by CUDA graph nodes 1..g_graph, each
 * created at CCT node 1 + id % nodes, launched at 4 call sites
 * (daemon/graph.c places them below copies of the creation paths). */
static unsigned g_graph;

static void row(const char *name, unsigned nodes, uint64_t recs, double wall, double cpu, int exact) {
  printf("| %-34s | %6u | %10llu | %8.3f | %8.2f | %8.1f | %s |\n", name, nodes,
         (unsigned long long)recs, wall, (double)recs / wall / 1e6, cpu / (double)recs * 1e9,
         exact ? "exact" : "MISMATCH");
  fflush(stdout);
}

static void fill(gpd_producer_t *pi, gpd_producer_t *pa, unsigned pairs, unsigned nodes) {
  for (unsigned k = 0; k < pairs; k++) {
    gpd_rec_invoke_t v;
    memset(&v, 0, sizeof v);
    v.h.type = GPD_REC_INVOKE;
    v.h.version = GPD_REC_VERSION;
    v.h.nslots = GPD_REC_NSLOTS(v);
    v.api = GPD_API_OPENCL;
    v.op = GPD_OP_KERNEL;
    v.node = 1 + (uint32_t)(k % (g_graph ? 4 : nodes)); /* graphs: replayed at 4 call sites */
    v.corr = GPD_CORR(GPD_API_OPENCL, ++corr_n);
    push(pi, &v, sizeof v);
    gpd_rec_activity_t a;
    memset(&a, 0, sizeof a);
    a.h.type = GPD_REC_ACTIVITY;
    a.h.version = GPD_REC_VERSION;
    a.h.nslots = GPD_REC_NSLOTS(a);
    a.api = GPD_API_OPENCL;
    a.op = GPD_OP_KERNEL;
    a.corr = v.corr;
    a.start = k;
    a.end = k + 100;
    a.name = 1 + (uint32_t)(k % 4);
    a.graph_node = g_graph ? 1 + k % g_graph : 0;
    push(pa, &a, sizeof a);
  }
}

/* gpd_ring_consume through the monitor's entry (gpd_profile_consume:
 * ingest with the correlation lookups prefetched), from the shared tail. */
static int consume(gpd_region_t *r, uint32_t i, unsigned max, gpd_profile_t *prof) {
  uint64_t cur = atomic_load_explicit(&r->ctl[i].tail, memory_order_relaxed);
  int rc = gpd_profile_consume(prof, r, i, &cur, max);
  gpd_ring_release(r, i, cur);
  return rc;
}

/* Zero fixed record r (len bytes) and fill its header for `type`. */
static void rec_init(void *r, size_t len, unsigned type) {
  memset(r, 0, len);
  gpd_rec_hdr_t *h = r;
  h->type = (uint8_t)type;
  h->version = GPD_REC_VERSION;
  h->nslots = (uint8_t)(len / GPD_SLOT_SIZE);
}

static void announce(gpd_profile_t *p, unsigned nodes) {
  gpd_profile_add_module(p, 1, NULL, 0, 0, 0, "/bench/app", 10);
  for (uint32_t s = 1; s <= 4; s++) {
    char name[32];
    int n = snprintf(name, sizeof name, "_Z7kernel%uPf", s);
    gpd_profile_add_string(p, s, GPD_STR_KERNEL, name, (size_t)n);
  }
  for (uint32_t i = 1; i <= nodes; i++) {
    _Alignas(64) gpd_rec_node_t n;
    rec_init(&n, sizeof n, GPD_REC_NODE);
    n.id = i;
    n.parent = i > 1 ? (i - 1) / 2 : 0;
    n.module = 1;
    n.offset = 16 * i;
    gpd_profile_ingest(p, &n, sizeof n);
  }
  for (uint32_t g = 1; g <= g_graph; g++) {
    _Alignas(64) gpd_rec_graphnode_t r;
    rec_init(&r, sizeof r, GPD_REC_GRAPHNODE);
    r.id = g;
    r.node = 1 + g % nodes;
    gpd_profile_ingest(p, &r, sizeof r);
  }
}

static void run(const char *name, int split, unsigned nodes) {
  gpd_region_t r;
  if (gpd_region_create(&r, 2, SLOTS, 1, 1) < 0) {
    fprintf(stderr, "region\n");
    exit(1);
  }
  gpd_producer_t p0, p1;
  gpd_producer_claim(&r, &p0, 1);
  gpd_producer_claim(&r, &p1, 2);
  gpd_profile_t prof;
  gpd_profile_init(&prof, 1);
  announce(&prof, nodes);
  unsigned pairs = split ? SLOTS / ACT_SLOTS - 16 : SLOTS / PAIR_SLOTS - 16;
  double total_t = 0, total_c = 0;
  uint64_t total_r = 0;
  for (int rep = 0; rep < 5; rep++) {
    fill(&p0, split ? &p1 : &p0, pairs, nodes);
    double t0 = now_s(), c0 = cpu_s();
    uint64_t recs = 0;
    int n;
    if (split) { /* activities first: all pending, then matched */
      while ((n = consume(&r, 1, 1u << 20, &prof)) > 0)
        recs += (uint64_t)n;
      while ((n = consume(&r, 0, 4096, &prof)) > 0) {
        recs += (uint64_t)n;
        gpd_profile_retry(&prof);
      }
    } else {
      while ((n = consume(&r, 0, 4096, &prof)) > 0) {
        recs += (uint64_t)n;
        gpd_profile_retry(&prof);
      }
    }
    double t = now_s() - t0, c = cpu_s() - c0;
    if (rep > 0) { /* first round warms the tree */
      total_t += t;
      total_c += c;
      total_r += recs;
    }
  }
  double kcount = 0;
  for (uint32_t i = 0; i < prof.nnodes; i++)
    kcount += gpd_profile_node_metric(&prof, &prof.nodes[i], GPD_M_GKER_COUNT);
  row(name, nodes, total_r, total_t, total_c, kcount == 5.0 * pairs);
  gpd_profile_free(&prof);
  gpd_region_close(&r);
}

/* The daemon's path: gpd_monitor_drain on a process (cursor per ring). */
static void run_monitor(const char *name, unsigned nodes, unsigned inflight) {
  static gpd_daemon_t d;
  gpd_proc_t *p = calloc(1, sizeof *p);
  if (p == NULL || gpd_region_create(&p->region, 2, SLOTS, 1, 1) < 0) {
    fprintf(stderr, "region\n");
    exit(1);
  }
  memset(&d, 0, sizeof d);
  pthread_mutex_init(&d.lock, NULL);
  pthread_cond_init(&d.writer_cv, NULL);
  p->has_region = 1;
  p->state = GPD_PROC_RUNNING;
  if (gpd_registry_cursors(p) < 0 || gpd_profile_init(&p->prof, 1) < 0)
    exit(1);
  d.procs = p;
  d.nprocs = 1;
  gpd_producer_t p0, p1;
  gpd_producer_claim(&p->region, &p0, 1);
  gpd_producer_claim(&p->region, &p1, 2);
  announce(&p->prof, nodes);
  unsigned pairs = SLOTS / PAIR_SLOTS - 16 - inflight;
  double total_t = 0, total_c = 0, snap_t = 0, full_t = 0;
  uint64_t total_r = 0, snap_recs = 0, full_n = 0;
  for (int rep = 0; rep < 5; rep++) {
    fill(&p0, &p0, pairs, nodes);
    /* invocations whose activities are still running at every flush
     * (pushed once: they stay unmatched) */
    for (unsigned k = 0; rep == 0 && k < inflight; k++) {
      gpd_rec_invoke_t v;
      memset(&v, 0, sizeof v);
      v.h.type = GPD_REC_INVOKE;
      v.h.version = GPD_REC_VERSION;
      v.api = GPD_API_OPENCL;
      v.op = GPD_OP_KERNEL;
      v.node = 1;
      v.corr = GPD_CORR(GPD_API_OPENCL, (1ull << 40) + (uint64_t)rep * inflight + k);
      push(&p0, &v, sizeof v);
    }
    double t0 = now_s(), c0 = cpu_s();
    uint64_t recs = 0, n;
    while ((n = gpd_monitor_drain(&d, p, 4096)) > 0)
      recs += n;
    double t = now_s() - t0, c = cpu_s() - c0;
    /* the writer's part under the lock: what changed in the unmatched
     * state (round 0: the first flush writes every row) */
    double t1 = now_s();
    gpd_prec_t *pend = NULL;
    uint64_t *pdel = NULL;
    uint32_t npend = 0, npdel = 0;
    int full;
    gpd_profile_pending_delta(&p->prof, &pend, &npend, &pdel, &npdel, &full);
    double ts = now_s() - t1;
    free(pend);
    free(pdel);
    if (rep == 4) { /* baseline: every row, as each flush did before */
      gpd_prec_t *fpend = NULL;
      uint64_t *fdel = NULL;
      uint32_t nfpend = 0, nfdel = 0;
      p->prof.pend_full = 1;
      t1 = now_s();
      gpd_profile_pending_delta(&p->prof, &fpend, &nfpend, &fdel, &nfdel, &full);
      full_t = now_s() - t1;
      full_n = nfpend;
      free(fpend);
      free(fdel);
    }
    for (uint32_t i = 0; i < p->region.nrings; i++)
      gpd_ring_release(&p->region, i, p->cursor[i]);
    if (rep > 0) {
      total_t += t;
      total_c += c;
      total_r += recs;
      snap_t += ts;
      snap_recs += npend;
    }
  }
  double kcount = 0;
  for (uint32_t i = 0; i < p->prof.nnodes; i++)
    kcount += gpd_profile_node_metric(&p->prof, &p->prof.nodes[i], GPD_M_GKER_COUNT);
  row(name, nodes, total_r, total_t, total_c, kcount == 5.0 * pairs);
  printf("|   + %6u unmatched invokes: pending snapshot %8.1f us/flush (%llu rows changed); "
         "every row: %8.1f us (%llu rows)\n",
         inflight, snap_t / 4 * 1e6, (unsigned long long)snap_recs / 4, full_t * 1e6,
         (unsigned long long)full_n);
  gpd_registry_free_proc(p);
}

/* Monitor threads: nprocs processes with pre-filled rings drained by
 * gpd_monitor_pass with nthreads monitor threads (the calling thread and
 * nthreads - 1 helpers, gpd_monitor_helpers_start).  Wall rate, and CPU
 * time of the whole process (every monitor thread) per record; with
 * from_start, the threads claim the processes from the list's start (the
 * old order) instead of each its own share first, and how many process
 * passes ran on another thread than the pass before is printed. */
#define TSLOTS (1u << 19)
static void run_threads(unsigned nthreads, unsigned nprocs, int from_start) {
  static gpd_daemon_t d;
  memset(&d, 0, sizeof d);
  pthread_mutex_init(&d.lock, NULL);
  pthread_cond_init(&d.writer_cv, NULL);
  gpd_proc_t *ps[16];
  gpd_producer_t prod[16];
  for (unsigned k = 0; k < nprocs; k++) {
    gpd_proc_t *p = ps[k] = calloc(1, sizeof *p);
    if (p == NULL || gpd_region_create(&p->region, 1, TSLOTS, 1, 1) < 0 ||
        gpd_profile_init(&p->prof, k + 1) < 0) {
      fprintf(stderr, "region\n");
      exit(1);
    }
    p->has_region = 1;
    p->state = GPD_PROC_RUNNING;
    if (gpd_registry_cursors(p) < 0)
      exit(1);
    p->next = d.procs;
    d.procs = p;
    d.nprocs++;
    gpd_producer_claim(&p->region, &prod[k], 1);
    announce(&p->prof, 4096);
  }
  if (gpd_monitor_helpers_start(&d, nthreads) < 0)
    exit(1);
  gpd_monitor_claim_from_start(&d, from_start);
  unsigned pairs = TSLOTS / PAIR_SLOTS - 16;
  double total_t = 0, total_c = 0;
  uint64_t total_r = 0;
  for (int rep = 0; rep < 5; rep++) {
    for (unsigned k = 0; k < nprocs; k++)
      fill(&prod[k], &prod[k], pairs, 4096);
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    double t0 = now_s();
    uint64_t recs = 0, n;
    while ((n = gpd_monitor_pass(&d)) > 0)
      recs += n;
    double t = now_s() - t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    for (unsigned k = 0; k < nprocs; k++)
      gpd_ring_release(&ps[k]->region, 0, ps[k]->cursor[0]);
    if (rep > 0) {
      total_t += t;
      total_c += (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
      total_r += recs;
    }
  }
  uint64_t passes = 0, moved = 0;
  gpd_monitor_moves(&d, &passes, &moved);
  gpd_monitor_helpers_stop(&d);
  double kcount = 0;
  for (unsigned k = 0; k < nprocs; k++)
    for (uint32_t i = 0; i < ps[k]->prof.nnodes; i++)
      kcount += gpd_profile_node_metric(&ps[k]->prof, &ps[k]->prof.nodes[i], GPD_M_GKER_COUNT);
  char name[64];
  snprintf(name, sizeof name, "monitor threads: %u, %u processes%s", nthreads, nprocs,
           nthreads > 1 && from_start ? " (a)" : "");
  row(name, 4096, total_r, total_t, total_c, kcount == 5.0 * pairs * nprocs);
  if (nthreads > 1)
    printf("|   + process passes on another thread than the pass before: %llu of %llu\n",
           (unsigned long long)moved, (unsigned long long)passes);
  for (unsigned k = 0; k < nprocs; k++)
    gpd_registry_free_proc(ps[k]);
  pthread_mutex_destroy(&d.lock);
  pthread_cond_destroy(&d.writer_cv);
}

int main(int argc, char **argv) {
  only = argc > 1 ? argv[1] : NULL;
  printf("daemon ingest, one monitor thread (consume + attribute), 4 timed rounds; "
         "CPU ns/rec: the consuming thread's CPU time per record\n");
  printf("| %-34s | %6s | %10s | %8s | %8s | %8s | %s |\n", "scenario", "nodes", "records",
         "seconds", "M rec/s", "CPU ns", "check");
  printf("|%s|%s|%s|%s|%s|%s|%s|\n", "------------------------------------", "--------",
         "------------", "----------", "----------", "----------", "-------");
  if (wanted("pairs in one ring (match at once)")) {
    run("pairs in one ring (match at once)", 0, 64);
    run("pairs in one ring (match at once)", 0, 4096);
  }
  if (wanted("graph replays (pairs, one ring)")) { /* the same pairs, each run by a graph node */
    g_graph = 300;
    run("graph replays (pairs, one ring)", 0, 64);
    run("graph replays (pairs, one ring)", 0, 4096);
    g_graph = 0;
  }
  if (wanted("activities first (pending, retry)"))
    run("activities first (pending, retry)", 1, 64);
  if (wanted("monitor path (pairs)")) {
    run_monitor("monitor path (pairs)", 64, 0);
    run_monitor("monitor path (pairs)", 4096, 0);
    run_monitor("monitor path (pairs)", 64, 1000);
    run_monitor("monitor path (pairs)", 64, 100000);
  }
  if (wanted("monitor threads")) { /* alternating, so load changes hit both */
    double la[3] = {0};
    if (getloadavg(la, 3) > 0)
      printf("| load average %.2f before the monitor-thread rows (CPU ns: all threads) |\n", la[0]);
    for (int r = 0; r < 2; r++) {
      run_threads(1, 4, 0);
      run_threads(2, 4, 0);
      run_threads(2, 4, 1);
    }
    printf("| (a): every thread claims from the list's start, as before each one took its own share "
           "first |\n");
  }
  printf("target: >= 25 M records/s per monitor thread for pairs, >= 10 M for activities first "
         "(docs/PERFORMANCE.md, issue 13)\n");
  return 0;
}
