/* bench-top.c - live query latency of a real gpuprofd (DESIGN.md target:
 * "live `gpuprof top`, 64 processes x 10 K contexts: <= 50 ms").
 *
 * Starts bin/gpuprofd (--daemon PATH, else next to this binary) on a
 * temporary socket and database, forks P fake processes (daemon-client-lib)
 * that register, announce one module, K kernel names and N CCT nodes (a
 * chain of 6 frames, then a binary tree: depth 6..19; call-site offsets
 * "100 functions x 100 call sites"), push `pairs` INVOKE+ACTIVITY pairs at
 * every node (kernel names spread over the K), then stay connected
 * (running).  Once every process's `records` in Ps equals what it pushed
 * and the daemon's CPU time stopped moving (writer done), it times the
 * queries exactly as the CLI sends them (new connection, length-prefixed
 * protobuf, gpd_frame_send/recv, reply unpacked): Top (limit 10, default
 * metric), Tree of all processes (node merge), Tree --pid of one process,
 * Ps, and Tree of all / Top again with every process changed before each
 * repetition (each client pushes one more pair, Ps shows it arrived; the
 * last view's sums cannot be reused as they are).  Replies are unpacked into an arena as
 * the CLI does (cli/arena.h); one more Tree row unpacks with protobuf-c's
 * malloc per object, as the CLI did before.  Each `reps` times; median and max in ms, reply size, and a check
 * that Top's GKER:COUNT sum equals the launches pushed.  Prints the
 * daemon's VmRSS / RssAnon after loading.  Scenarios: 1 x N (baseline)
 * and P x N.
 *
 * Last, `gpuprof tree` and `gpuprof top` run as CLI processes (--cli
 * PATH, else beside the daemon), their own CPU from wait4.
 *
 * Tree requests are made as the CLI makes them (packed metrics, no
 * inclusive values for a whole tree); one row asks the old way (a Metric
 * message per value, inclusive values too).  --base DIR runs the
 * P-process scenario again with DIR/gpuprofd and DIR/gpuprof (an older
 * build: the baseline in the same run; a daemon that predates the packed
 * form answers every tree request the old way).
 *
 *   bench-top [--daemon PATH] [--cli PATH] [--base DIR] [--procs 64] [--nodes 10000]
 *             [--kernels 50] [--pairs 1] [--reps 20]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuprof/frame.h"
#include "gpuprof/metric.h"
#include "gpuprof.pb-c.h"

#include "arena.h"
#include "daemon-client-lib.h"

#define MODPATH "/nonexistent/bench-top-app"
#define CHAIN 6u

static unsigned opt_nodes = 10000, opt_kernels = 50, opt_pairs = 1, opt_reps = 20;
static unsigned opt_procs = 64;
static char daemon_path[PATH_MAX], cli_path[PATH_MAX], base_dir[PATH_MAX - 16];

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ------------------------------------------------------------ a client */

/* Shim node id i (1..N): 1..CHAIN a chain below the root, then a binary
 * tree below node CHAIN. */
static uint32_t node_parent(uint32_t i) {
  if (i <= CHAIN)
    return i - 1;
  uint32_t j = i - CHAIN; /* 1-based heap index */
  return j == 1 ? CHAIN : (j / 2) + CHAIN;
}

static uint64_t records_per_proc(void) {
  return 1 + (uint64_t)opt_kernels + opt_nodes + 2ull * opt_pairs * opt_nodes;
}

static uint64_t launches_per_proc(void) { return (uint64_t)opt_pairs * opt_nodes; }

/* One more INVOKE+ACTIVITY pair at node `i` (1..N) at time *t. */
static void push_pair(gpd_dclient_t *c, uint32_t i, uint64_t *t) {
  uint64_t corr = gpd_dclient_corr(c);
  gpd_rec_invoke_t v;
  gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, i, corr);
  v.ts = *t;
  gpd_dclient_push(&c->ring[0], &v, sizeof v);
  gpd_rec_activity_t a;
  gpd_dclient_activity_init(&a, GPD_OP_KERNEL, corr);
  a.start = *t;
  a.end = *t + 1000 + 100 * (i % 13);
  *t = a.end + 10;
  a.name = 1 + (uint32_t)((i * 7u) % opt_kernels);
  a.stream = 1;
  a.blocks = 64;
  a.block_threads = 256;
  gpd_dclient_push(&c->ring[1], &a, sizeof a);
}

/* Child: register, push everything, tell the parent, stay connected until
 * the parent closes `hold` (its own pipe); each byte read from it pushes
 * one more pair (the "every process changed" rows). */
static void client_main(const char *sock, int ready, int hold) {
  const char *hm = getenv("BENCH_TOP_HELLO_MS");
  gpd_dclient_hello_ms = hm ? atoi(hm) : 120000;
  gpd_dclient_t c;
  memset(&c, 0, sizeof c);
  double h0 = now_ms();
  gpd_dclient_register(&c, sock);
  double h1 = now_ms() - h0;
  if (h1 > 1000)
    fprintf(stderr, "bench-top: pid %d: HelloReply after %.0f ms\n", (int)getpid(), h1);
  gpd_dclient_module(&c, 0, 1, MODPATH);
  for (unsigned k = 1; k <= opt_kernels; k++) {
    char name[64];
    snprintf(name, sizeof name, "_Z9kernel_%02uPfi", k % 100);
    if (k >= 100)
      snprintf(name, sizeof name, "_Z10kernel_%03uPfi", k % 1000);
    gpd_dclient_string(&c, 1, k, GPD_STR_KERNEL, name);
  }
  for (uint32_t i = 1; i <= opt_nodes; i++) {
    uint32_t f = i % 100, cs = (i / 100) % 100;
    gpd_dclient_node(&c, i, node_parent(i), 1, 0x1000 + 0x1000ull * f + 0x10ull * cs);
  }
  uint64_t t = 0;
  for (unsigned r = 0; r < opt_pairs; r++)
    for (uint32_t i = 1; i <= opt_nodes; i++)
      push_pair(&c, i, &t);
  char b = 'r';
  if (write(ready, &b, 1) != 1)
    _exit(2);
  close(ready);
  uint32_t next = 1;
  while (read(hold, &b, 1) > 0) {
    push_pair(&c, next, &t);
    next = next % opt_nodes + 1;
  }
  _exit(0);
}

/* --------------------------------------------------------- queries */

/* The unpack of the query being timed: into an arena as the CLI's tree and
 * top (cli/arena.h), or protobuf-c's malloc per object (g_malloc_unpack). */
static int g_malloc_unpack;
static gpd_arena_t *g_arena;
static size_t g_arena_bytes;

static void reply_free(Gpuprof__Msg *r) {
  if (g_arena) {
    gpd_arena_free(g_arena);
    g_arena = NULL;
  } else {
    gpuprof__msg__free_unpacked(r, NULL);
  }
}

/* One query as the CLI makes it: connect, send, receive, unpack.  Returns
 * the reply (free it with reply_free) and *ms, *bytes; NULL on a
 * transport error. */
static Gpuprof__Msg *query(const char *sock, const Gpuprof__Msg *req, double *ms, size_t *bytes) {
  size_t n = gpuprof__msg__get_packed_size(req);
  uint8_t *buf = malloc(n + 1);
  if (buf == NULL)
    return NULL;
  gpuprof__msg__pack(req, buf);
  double t0 = now_ms();
  int s = gpd_dclient_connect(sock);
  Gpuprof__Msg *r = NULL;
  uint8_t *in = NULL;
  size_t inn = 0;
  int fd = -1;
  if (gpd_frame_send(s, buf, (uint32_t)n, -1, 60000) == 0 &&
      gpd_frame_recv_max(s, &in, &inn, &fd, 60000, GPD_REPLY_MAX) == 0) {
    if (g_malloc_unpack) {
      r = gpuprof__msg__unpack(NULL, inn, in);
    } else {
      r = gpd_arena_unpack_msg(inn, in, &g_arena);
      g_arena_bytes = gpd_arena_size(g_arena);
    }
  }
  *ms = now_ms() - t0;
  *bytes = inn;
  close(s);
  if (fd >= 0)
    close(fd);
  free(in);
  free(buf);
  return r;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Ps: count processes whose records reached `want`. */
static unsigned ps_done(const char *sock, uint64_t want, unsigned *nprocs) {
  Gpuprof__Msg req = GPUPROF__MSG__INIT;
  Gpuprof__PsRequest ps = GPUPROF__PS_REQUEST__INIT;
  req.body_case = GPUPROF__MSG__BODY_PS_REQ;
  req.ps_req = &ps;
  double ms;
  size_t bytes;
  Gpuprof__Msg *r = query(sock, &req, &ms, &bytes);
  unsigned done = 0;
  *nprocs = 0;
  if (r && r->body_case == GPUPROF__MSG__BODY_PS) {
    *nprocs = (unsigned)r->ps->n_procs;
    for (size_t i = 0; i < r->ps->n_procs; i++)
      if (r->ps->procs[i]->running && r->ps->procs[i]->records == want)
        done++;
  }
  reply_free(r);
  return done;
}

/* CPU ms (user + system) of /proc/<pid>[/task/<tid>]/stat. */
static double cpu_ms_of(const char *path) {
  char buf[1024];
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
    return -1;
  return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* CPU ms of the daemon's threads in creation order (main, monitor,
 * writer: main.c starts the monitor before the writer); returns how many. */
static int thread_cpu(pid_t pid, double *ms, int max) {
  char path[96];
  int tids[16], n = 0;
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL && n < 16)
    if (e->d_name[0] != '.')
      tids[n++] = atoi(e->d_name);
  if (d)
    closedir(d);
  qsort(tids, (size_t)n, sizeof *tids, cmp_int);
  for (int i = 0; i < n && i < max; i++) {
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, tids[i]);
    ms[i] = cpu_ms_of(path);
  }
  return n < max ? n : max;
}

/* CPU ms so far of the threads of pid that answer queries: all but the
 * monitor and writer (the second and third thread: main.c starts them
 * first) and the device sampler (named gpd-devices), whose background
 * work (the writer's flush of the changed processes) is not the query's.
 * From the schedulers' ns counters in /proc/<pid>/task/<tid>/schedstat:
 * exact, unlike the stat ticks. */
static double proc_cpu_ms(pid_t pid) {
  char path[96], comm[32];
  int tids[256], n = 0;
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL && n < 256)
    if (e->d_name[0] != '.')
      tids[n++] = atoi(e->d_name);
  if (d)
    closedir(d);
  qsort(tids, (size_t)n, sizeof *tids, cmp_int);
  double ms = 0;
  for (int i = 0; i < n; i++) {
    if (i == 1 || i == 2)
      continue;
    snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, tids[i]);
    FILE *f = fopen(path, "r");
    int dev = f && fgets(comm, sizeof comm, f) && strncmp(comm, "gpd-devices", 11) == 0;
    if (f)
      fclose(f);
    if (dev)
      continue;
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)pid, tids[i]);
    f = fopen(path, "r");
    unsigned long long ns = 0;
    if (f && fscanf(f, "%llu", &ns) == 1)
      ms += (double)ns * 1e-6;
    if (f)
      fclose(f);
  }
  return ms;
}

static double self_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static long status_kb(pid_t pid, const char *key) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  size_t kl = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, kl) == 0 && line[kl] == ':')
      v = atol(line + kl + 1);
  if (f)
    fclose(f);
  return v;
}

typedef struct qres_s {
  const char *name;
  double med, max, first;
  double dcpu, ccpu; /* mean CPU ms per query (not the cold one): daemon, client */
  size_t bytes;
  size_t items;
  size_t abytes; /* the unpack's arena (tree, all) */
  const char *err;
} qres_t;

#define NQ 11
static char errbuf[NQ][160];

/* The running clients' pipes (one each): a byte makes the client push one
 * more pair, so that every profile changed before the next query. */
static int *g_hold;
static unsigned g_nprocs, g_pokes;
static uint64_t g_want;

/* Every client pushes one more pair; returns once Ps counts them all
 * (deadline 60 s; -1 if not reached). */
static int poke_all(const char *sock) {
  char b = 'p';
  for (unsigned i = 0; i < g_nprocs; i++)
    if (write(g_hold[i], &b, 1) != 1)
      return -1;
  g_pokes++;
  uint64_t want = g_want + 2ull * g_pokes;
  double t0 = now_ms();
  unsigned seen;
  while (ps_done(sock, want, &seen) != g_nprocs) {
    if (now_ms() - t0 > 60000)
      return -1;
    usleep(1000);
  }
  return 0;
}

/* Sum of GKER:COUNT over every Top entry (limit 1000 >= kernels). */
static double top_kernel_count(const char *sock) {
  Gpuprof__Msg req = GPUPROF__MSG__INIT;
  Gpuprof__TopRequest top = GPUPROF__TOP_REQUEST__INIT;
  top.limit = 1000;
  req.body_case = GPUPROF__MSG__BODY_TOP_REQ;
  req.top_req = &top;
  double ms, sum = 0;
  size_t bytes;
  Gpuprof__Msg *r = query(sock, &req, &ms, &bytes);
  /* BENCH_TOP_DUMP=FILE: the whole reply as text, to compare daemons */
  const char *dump = getenv("BENCH_TOP_DUMP");
  FILE *df = dump ? fopen(dump, "a") : NULL;
  if (r && r->body_case == GPUPROF__MSG__BODY_TOP)
    for (size_t e = 0; e < r->top->n_entries; e++) {
      const Gpuprof__TopEntry *te = r->top->entries[e];
      if (df) {
        fprintf(df, "%d %s", te->kind, te->label);
        for (unsigned id = 0; id < GPD_M__COUNT; id++)
          for (size_t k = 0; k < te->n_metrics; k++)
            if (te->metrics[k]->id == id)
              fprintf(df, " %u=%.0f", id, te->metrics[k]->value);
        fprintf(df, " path");
        for (size_t k = 0; k < te->n_path; k++)
          fprintf(df, " %" PRIx64 ":%s:%s", te->path[k]->id, te->path[k]->label,
                  te->path[k]->module);
        fprintf(df, "\n");
      }
      for (size_t k = 0; k < te->n_metrics; k++)
        if (te->metrics[k]->id == GPD_M_GKER_COUNT)
          sum += te->metrics[k]->value;
    }
  if (df)
    fclose(df);
  reply_free(r);
  return sum;
}

static pid_t g_dpid;

/* `gpuprof tree` / `gpuprof top` as a user runs them: a fresh CLI process
 * each time (its heap is new: every page of the unpacked reply and of the
 * rendered tree is faulted in), output to /dev/null.  c-CPU is the
 * process's user + system time (wait4), receive + unpack + render. */
static void time_cli(const char *sock, qres_t *q, const char *cmd) {
  q->name = strcmp(cmd, "tree") == 0 ? "gpuprof tree (CLI process)" : "gpuprof top (CLI process)";
  q->err = NULL;
  if (cli_path[0] == 0 || access(cli_path, X_OK) != 0) {
    q->err = "no gpuprof CLI (--cli PATH)";
    return;
  }
  double *t = calloc(opt_reps + 1, sizeof *t);
  for (unsigned i = 0; i <= opt_reps; i++) {
    double d0 = proc_cpu_ms(g_dpid), t0 = now_ms();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      int nul = open("/dev/null", O_WRONLY);
      if (nul >= 0)
        dup2(nul, 1);
      execl(cli_path, "gpuprof", cmd, "--socket", sock, (char *)NULL);
      _exit(127);
    }
    struct rusage ru;
    int st = 0;
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      q->err = "the CLI failed";
      break;
    }
    double ms = now_ms() - t0, d1 = proc_cpu_ms(g_dpid);
    double c = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
    if (i == 0) {
      q->first = ms;
    } else {
      t[i - 1] = ms;
      q->dcpu += (d1 - d0) / opt_reps;
      q->ccpu += c / opt_reps;
    }
  }
  qsort(t, opt_reps, sizeof *t, cmp_double);
  q->med = opt_reps % 2 ? t[opt_reps / 2] : (t[opt_reps / 2 - 1] + t[opt_reps / 2]) / 2;
  q->max = t[opt_reps - 1];
  free(t);
}

static void time_query(const char *sock, qres_t *q, int which, int32_t pid) {
  Gpuprof__Msg req = GPUPROF__MSG__INIT;
  Gpuprof__TopRequest top = GPUPROF__TOP_REQUEST__INIT;
  Gpuprof__TreeRequest tree = GPUPROF__TREE_REQUEST__INIT;
  Gpuprof__PsRequest ps = GPUPROF__PS_REQUEST__INIT;
  switch (which) {
  case 0:
    top.limit = 10;
    req.body_case = GPUPROF__MSG__BODY_TOP_REQ;
    req.top_req = &top;
    q->name = "top (limit 10, GPUOP)";
    break;
  case 1:
    req.body_case = GPUPROF__MSG__BODY_TREE_REQ;
    req.tree_req = &tree;
    q->name = "tree, all processes";
    break;
  case 8:
    req.body_case = GPUPROF__MSG__BODY_TREE_REQ;
    req.tree_req = &tree;
    q->name = "tree, each changed, 1-msg";
    break;
  case 2:
    tree.max_depth = 12;
    req.body_case = GPUPROF__MSG__BODY_TREE_REQ;
    req.tree_req = &tree;
    q->name = "tree, all, max_depth 12";
    break;
  case 3:
    tree.pid = pid;
    req.body_case = GPUPROF__MSG__BODY_TREE_REQ;
    req.tree_req = &tree;
    q->name = "tree --pid (one process)";
    break;
  case 5:
    req.body_case = GPUPROF__MSG__BODY_TREE_REQ;
    req.tree_req = &tree;
    q->name = "tree, all, each changed";
    break;
  case 7:
    req.body_case = GPUPROF__MSG__BODY_TREE_REQ;
    req.tree_req = &tree;
    q->name = "tree, all, malloc unpack";
    break;
  case 6:
    top.limit = 10;
    req.body_case = GPUPROF__MSG__BODY_TOP_REQ;
    req.top_req = &top;
    q->name = "top, each changed";
    break;
  default:
    req.body_case = GPUPROF__MSG__BODY_PS_REQ;
    req.ps_req = &ps;
    q->name = "ps";
    break;
  }
  /* tree requests as the CLI sends them (cli/live.c live_tree): metrics
   * packed, and no inclusive values for a whole tree (the CLI sums them);
   * row 8 as before (a Metric message per value, inclusive ones too) */
  if (req.body_case == GPUPROF__MSG__BODY_TREE_REQ && which != 8) {
    tree.packed_metrics = 1;
    tree.no_incl = tree.max_depth == 0;
  }
  double *t = calloc(opt_reps + 1, sizeof *t);
  q->err = NULL;
  for (unsigned i = 0; i <= opt_reps; i++) {
    double ms;
    size_t bytes;
    if ((which == 5 || which == 6 || which == 8) && poke_all(sock) < 0) {
      q->err = "the clients' new records did not arrive";
      break;
    }
    g_malloc_unpack = which == 7;
    double d0 = proc_cpu_ms(g_dpid), c0 = self_cpu_ms();
    Gpuprof__Msg *r = query(sock, &req, &ms, &bytes);
    double c1 = self_cpu_ms(), d1 = proc_cpu_ms(g_dpid);
    if (i > 0) {
      q->dcpu += (d1 - d0) / opt_reps;
      q->ccpu += (c1 - c0) / opt_reps;
    }
    if (r == NULL) {
      q->err = "no reply";
    } else if (r->body_case == GPUPROF__MSG__BODY_ERROR) {
      snprintf(errbuf[which], sizeof errbuf[which], "Error %d: %s", r->error->code,
               r->error->message);
      q->err = errbuf[which];
    } else {
      q->bytes = bytes;
      if (which == 1)
        q->abytes = g_arena_bytes;
      if (r->body_case == GPUPROF__MSG__BODY_TOP) {
        q->items = r->top->n_entries;
      } else if (r->body_case == GPUPROF__MSG__BODY_TREE) {
        q->items = r->tree->n_nodes;
      } else if (r->body_case == GPUPROF__MSG__BODY_PS) {
        q->items = r->ps->n_procs;
      }
    }
    reply_free(r);
    g_malloc_unpack = 0;
    if (i == 0)
      q->first = ms; /* cold: symbolization cache, allocator */
    else
      t[i - 1] = ms;
  }
  qsort(t, opt_reps, sizeof *t, cmp_double);
  q->med = opt_reps % 2 ? t[opt_reps / 2] : (t[opt_reps / 2 - 1] + t[opt_reps / 2]) / 2;
  q->max = t[opt_reps - 1];
  free(t);
}

/* ------------------------------------------------------------ scenario */

/* End of a scenario, after its daemon is gone: EOF on every client's hold
 * pipe (they exit), reap them, remove the scenario's folder. */
static void release_clients(pid_t *kids, unsigned nprocs, const char *dir) {
  for (unsigned i = 0; i < nprocs; i++)
    close(g_hold[i]);
  for (unsigned i = 0; i < nprocs; i++)
    waitpid(kids[i], NULL, 0);
  free(kids);
  free(g_hold);
  g_hold = NULL;
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "bench-top: could not remove %s\n", dir);
}

static int scenario(unsigned nprocs) {
  char dir[] = "/tmp/bench-top.XXXXXX";
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return -1;
  }
  char sock[PATH_MAX], db[PATH_MAX], conf[PATH_MAX], logp[PATH_MAX];
  snprintf(sock, sizeof sock, "%s/d.sock", dir);
  snprintf(db, sizeof db, "%s/d.gpdb", dir);
  snprintf(conf, sizeof conf, "%s/d.conf", dir);
  snprintf(logp, sizeof logp, "%s/daemon.log", dir);
  if (getenv("BENCH_TOP_LOG")) /* the daemon's log kept there */
    snprintf(logp, sizeof logp, "%s", getenv("BENCH_TOP_LOG"));
  /* The daemon's config: BENCH_TOP_CONF, by default no tracing threads
   * (bench-trace measures those).  With them, on the 2-core VM at load
   * 10-12, some of the 64 clients got no HelloReply within their 10 s and
   * the daemon logged its tracing threads' writes failing on "database is
   * locked"; without them all 64 registered (2026-11-24, twice each). */
  FILE *cf = fopen(conf, "w");
  if (cf) {
    const char *text = getenv("BENCH_TOP_CONF");
    fprintf(cf, "%s\n", text ? text : "[trace]\nthreads = 0");
    fclose(cf);
  }
  fflush(NULL); /* a forked child that exits must not print the parent's buffer again */
  pid_t dpid = fork();
  g_dpid = dpid;
  if (dpid == 0) {
    int lf = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (lf >= 0) {
      dup2(lf, 1);
      dup2(lf, 2);
    }
    execl(daemon_path, daemon_path, "--socket", sock, "--config", conf, "--state-dir", dir,
          "--db", db, "--foreground", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 1000 && access(sock, F_OK) != 0; i++)
    usleep(10000);
  if (access(sock, F_OK) != 0) {
    fprintf(stderr, "bench-top: daemon %s did not start (log %s)\n", daemon_path, logp);
    kill(dpid, SIGKILL);
    return -1;
  }

  double t0 = now_ms();
  int ready[2];
  if (pipe(ready) < 0)
    return -1;
  pid_t *kids = calloc(nprocs, sizeof *kids);
  int (*hold)[2] = calloc(nprocs, sizeof *hold);
  for (unsigned i = 0; i < nprocs; i++)
    if (pipe(hold[i]) < 0)
      return -1;
  unsigned got = 0;
  char b;
  const char *ao = getenv("BENCH_TOP_AT_ONCE");
  unsigned at_once = ao ? (unsigned)atoi(ao) : 8;
  for (unsigned i = 0; i < nprocs; i++) {
    /* at most 8 registering at once: 64 Hellos at once on a loaded 2-core
     * machine took the daemon past the clients' 10 s Hello deadline (each
     * registration creates and pre-faults its rings) */
    if (i >= at_once && read(ready[0], &b, 1) == 1)
      got++;
    kids[i] = fork();
    if (kids[i] == 0) {
      close(ready[0]);
      for (unsigned k = 0; k < nprocs; k++) { /* EOF on its pipe = stop */
        close(hold[k][1]);
        if (k != i)
          close(hold[k][0]);
      }
      client_main(sock, ready[1], hold[i][0]);
    }
  }
  close(ready[1]);
  g_hold = calloc(nprocs, sizeof *g_hold);
  for (unsigned i = 0; i < nprocs; i++) {
    close(hold[i][0]);
    g_hold[i] = hold[i][1];
  }
  free(hold);
  g_nprocs = nprocs;
  g_pokes = 0;
  while (got < nprocs && read(ready[0], &b, 1) == 1)
    got++;
  close(ready[0]);
  if (got < nprocs) { /* every client died: e.g. a daemon of another format refused them */
    fprintf(stderr, "bench-top: %u of %u clients did not register with %s (see above): scenario skipped\n",
            nprocs - got, nprocs, daemon_path);
    kill(dpid, SIGKILL);
    waitpid(dpid, NULL, 0);
    release_clients(kids, nprocs, dir);
    return -1;
  }
  double t_pushed = now_ms();
  uint64_t want = records_per_proc();
  g_want = want;
  unsigned done = 0, seen = 0;
  for (int i = 0; i < 6000; i++) { /* <= 10 min */
    done = ps_done(sock, want, &seen);
    if (done == nprocs)
      break;
    usleep(100000);
  }
  double t_consumed = now_ms();
  /* wait until the writer thread is done (< 20 ms CPU in 1 s; it flushes
   * every flush_interval_ms = 1 s) and note the idle monitor's CPU */
  double c0[3] = {0}, c1[3] = {0}, mon_idle = 0;
  thread_cpu(dpid, c0, 3);
  for (int i = 0; i < 300; i++) {
    usleep(1000000);
    if (thread_cpu(dpid, c1, 3) < 3)
      break;
    int quiet = c1[2] - c0[2] < 20;
    mon_idle = c1[1] - c0[1];
    memcpy(c0, c1, sizeof c0);
    if (quiet)
      break;
  }
  double t_quiet = now_ms();
  long rss = status_kb(dpid, "VmRSS"), anon = status_kb(dpid, "RssAnon");

  printf("\n%u process%s x %u contexts announced (+%u placeholders +%u kernel nodes each), "
         "%" PRIu64 " records/process\n",
         nprocs, nprocs == 1 ? "" : "es", opt_nodes, opt_nodes, opt_nodes, want);
  printf("  pushed in %.0f ms, consumed after %.0f ms, writer done after %.0f ms; "
         "%u/%u processes complete\n",
         t_pushed - t0, t_consumed - t0, t_quiet - t0, done, nprocs);
  printf("  daemon VmRSS %.1f MiB (RssAnon %.1f MiB) after loading; idle monitor thread "
         "%.0f%% of a core\n", rss / 1024.0, anon / 1024.0, mon_idle / 10.0);

  qres_t q[NQ];
  memset(q, 0, sizeof q);
  for (int w = 0; w < NQ - 2; w++)
    time_query(sock, &q[w], w, kids[0]);
  time_cli(sock, &q[NQ - 2], "tree");
  time_cli(sock, &q[NQ - 1], "top");
  double gker = top_kernel_count(sock);
  /* CPU ms: mean per query of the daemon's query threads (main and the
   * pool: proc_cpu_ms) and of this client (receive and unpack); unlike
   * the wall times they do not grow with other load */
  printf("  %-26s %9s %9s %9s %9s %9s %11s %8s\n", "query", "median ms", "max ms", "cold ms",
         "d-CPU ms", "c-CPU ms", "reply bytes", "items");
  for (int w = 0; w < NQ; w++) {
    if (q[w].err)
      printf("  %-26s %9.2f %9.2f %9.2f  %s\n", q[w].name, q[w].med, q[w].max, q[w].first,
             q[w].err);
    else
      printf("  %-26s %9.2f %9.2f %9.2f %9.2f %9.2f %11zu %8zu\n", q[w].name, q[w].med,
             q[w].max, q[w].first, q[w].dcpu, q[w].ccpu, q[w].bytes, q[w].items);
  }
  printf("  tree, all: the reply unpacked into a %.1f MiB arena (%.2f x its %zu bytes); "
         "c-CPU is the client's receive + unpack + free\n",
         q[1].abytes / 1048576.0, q[1].bytes ? (double)q[1].abytes / (double)q[1].bytes : 0,
         q[1].bytes);
  uint64_t want_l = (launches_per_proc() + g_pokes) * nprocs;
  printf("  check: top (limit 1000) GKER:COUNT sum %.0f, launches pushed %" PRIu64 " %s\n", gker, want_l,
         (uint64_t)gker == want_l ? "(ok)" : "(MISMATCH)");
  printf("  daemon VmRSS %.1f MiB after the queries\n", status_kb(dpid, "VmRSS") / 1024.0);
  fflush(stdout);

  /* teardown: stop the daemon (running processes stored as lost), then
   * release the clients */
  kill(dpid, SIGTERM);
  int st = 0;
  for (int i = 0; i < 1200 && waitpid(dpid, &st, WNOHANG) == 0; i++)
    usleep(100000);
  if (kill(dpid, 0) == 0) {
    kill(dpid, SIGKILL);
    waitpid(dpid, &st, 0);
  }
  release_clients(kids, nprocs, dir);
  return done == nprocs && (uint64_t)gker == want_l ? 0 : 1;
}

int main(int argc, char **argv) {
  daemon_path[0] = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--daemon") == 0 && v) {
      snprintf(daemon_path, sizeof daemon_path, "%s", v);
      i++;
    } else if (strcmp(a, "--base") == 0 && v) {
      snprintf(base_dir, sizeof base_dir, "%s", v);
      i++;
    } else if (strcmp(a, "--cli") == 0 && v) {
      snprintf(cli_path, sizeof cli_path, "%s", v);
      i++;
    } else if (strcmp(a, "--procs") == 0 && v) {
      opt_procs = (unsigned)atoi(v), i++;
    } else if (strcmp(a, "--nodes") == 0 && v) {
      opt_nodes = (unsigned)atoi(v), i++;
    } else if (strcmp(a, "--kernels") == 0 && v) {
      opt_kernels = (unsigned)atoi(v), i++;
    } else if (strcmp(a, "--pairs") == 0 && v) {
      opt_pairs = (unsigned)atoi(v), i++;
    } else if (strcmp(a, "--reps") == 0 && v) {
      opt_reps = (unsigned)atoi(v), i++;
    } else {
      fprintf(stderr, "usage: %s [--daemon PATH] [--cli PATH] [--base DIR] [--procs N] [--nodes N] "
                      "[--kernels K] [--pairs P] [--reps R]\n", argv[0]);
      return 2;
    }
  }
  if (opt_nodes <= CHAIN || opt_kernels == 0 || opt_kernels > 999 || opt_reps == 0 ||
      opt_procs == 0)
    return 2;
  if (daemon_path[0] == 0) {
    char self[PATH_MAX - 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      return 2;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
      *slash = 0;
    snprintf(daemon_path, sizeof daemon_path, "%s/gpuprofd", self);
  }
  if (cli_path[0] == 0) { /* the CLI beside the daemon */
    snprintf(cli_path, sizeof cli_path, "%s", daemon_path);
    char *slash = strrchr(cli_path, '/');
    if (slash && (size_t)(slash - cli_path) + 9 < sizeof cli_path)
      strcpy(slash + 1, "gpuprof");
  }
  if (access(daemon_path, X_OK) != 0) {
    fprintf(stderr, "bench-top: no daemon at %s (use --daemon PATH)\n", daemon_path);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  printf("bench-top: live queries of %s over its socket (new connection each, as the CLI);\n"
         "%u repetitions after one cold run; %u kernel names, %u launch(es) per context\n",
         daemon_path, opt_reps, opt_kernels, opt_pairs);
  int rc = scenario(1);
  if (opt_procs > 1)
    rc |= scenario(opt_procs);
  if (base_dir[0]) { /* the baseline: the same P-process scenario, another build */
    snprintf(daemon_path, sizeof daemon_path, "%s/gpuprofd", base_dir);
    snprintf(cli_path, sizeof cli_path, "%s/gpuprof", base_dir);
    printf("\nbaseline: %s (daemon and CLI), same scenario\n", base_dir);
    rc |= scenario(opt_procs);
  }
  return rc;
}
