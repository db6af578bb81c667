/* record.c - `gpuprof record`: embedded mode.  No root and no installed
 * service: start a private gpuprofd on a socket in a mkdtemp folder,
 * run the command with the shim preloaded, stop the daemon (SIGTERM: it
 * drains the rings and persists), print a summary, and exit with the
 * command's status.
 *
 * The daemon's ring journal (docs/DAEMON.md "Frozen processes": a process
 * whose profile the writer copies keeps its rings drained through it) is
 * made by the daemon in <folder>/journal (--journal-dir; private 0700,
 * segments O_EXCL | O_NOFOLLOW) and removed here at the end.
 *
 * The daemon runs in its own process group so that a terminal ^C reaches
 * only the command; the command stays in our group (it gets the
 * terminal's signals directly), and SIGINT/SIGTERM sent to gpuprof by
 * kill(2) are forwarded to it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"
#include "trace.h"

#ifndef GPD_INSTALL_SBINDIR
#define GPD_INSTALL_SBINDIR "/usr/sbin"
#endif
#define GPD_INSTALL_SHIM "/usr/lib/gpuprofd/libgpuprof.so"

#define GPD_RECORD_START_MS 10000 /* daemon must accept within this */
#define GPD_RECORD_STOP_MS 60000  /* daemon must drain and exit within this */

static volatile sig_atomic_t child_pid;   /* 0 when none (or reaped) */
static volatile sig_atomic_t interrupted; /* a signal came before the child ran */

static void on_signal(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  pid_t c = child_pid;
  if (c > 0) {
    /* A terminal's ^C (si_code SI_KERNEL) already reached the child, which
     * shares our process group; forward only signals sent to us. */
    if (si->si_code != SI_KERNEL) kill(c, sig);
  } else {
    interrupted = sig;
  }
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Folder of the running gpuprof binary (no trailing slash). */
static int self_dir(char *out, size_t n) {
  ssize_t k = readlink("/proc/self/exe", out, n - 1);
  if (k <= 0) return -errno;
  out[k] = 0;
  char *s = strrchr(out, '/');
  if (s) *s = 0;
  return 0;
}

/* First of: $env (taken as given, no fallback), candidates in order.
 * mode: access(2) mode.  On failure `tried` lists what was looked at. */
static int locate(const char *env, const char *const *cands, size_t nc, int mode, char *out, size_t n, char *tried,
                  size_t tn) {
  const char *e = getenv(env);
  size_t len = 0;
  tried[0] = 0;
  if (e && e[0]) {
    if (access(e, mode) == 0) {
      if (!realpath(e, out)) snprintf(out, n, "%s", e);
      return 0;
    }
    snprintf(tried, tn, "$%s=%s: %s", env, e, strerror(errno));
    return -ENOENT;
  }
  for (size_t i = 0; i < nc; i++) {
    if (!cands[i]) continue;
    if (access(cands[i], mode) == 0) {
      if (!realpath(cands[i], out)) snprintf(out, n, "%s", cands[i]);
      return 0;
    }
    int w = snprintf(tried + len, tn - len, "%s%s", len ? ", " : "", cands[i]);
    if (w > 0 && (size_t)w < tn - len) len += (size_t)w;
  }
  return -ENOENT;
}

/* LD_PRELOAD value without any libgpuprof.so entry (so that a job-prolog
 * preload does not load a second shim, and the daemon loads none). */
static char *preload_without_shim(const char *cur) {
  char *out = calloc(1, strlen(cur ? cur : "") + 1), *copy = gpd_cli_strdup(cur), *save = NULL;
  if (!out) abort();
  for (char *tok = strtok_r(copy, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
    const char *b = strrchr(tok, '/');
    b = b ? b + 1 : tok;
    if (!strncmp(b, "libgpuprof.so", 13)) continue;
    if (out[0]) strcat(out, ":");
    strcat(out, tok);
  }
  free(copy);
  return out;
}

static void print_file(FILE *to, const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  char line[1024];
  int any = 0;
  if (!f) return;
  while (fgets(line, sizeof(line), f)) {
    fprintf(to, "%s%s", prefix, line);
    any = 1;
    if (line[strlen(line) - 1] != '\n') fputc('\n', to);
  }
  if (!any) fprintf(to, "%s(no output)\n", prefix);
  fclose(f);
}

static void status_text(char *buf, size_t n, int st) {
  if (WIFEXITED(st))
    snprintf(buf, n, "exit status %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st))
    snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else
    snprintf(buf, n, "status 0x%x", st);
}

static int sock_accepts(const char *path) {
  struct sockaddr_un sa;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;
  if (fd < 0) return 0;
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
  ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
  close(fd);
  return ok;
}

/* Remove the daemon's journal folder <tmp>/journal and the segments a
 * daemon that did not finish may have left in it (names *.jnl only; the
 * folder is opened O_NOFOLLOW inside our private mkdtemp folder).  A
 * message when the folder stays. */
static void journal_remove(const char *tmp) {
  char jd[PATH_MAX + 16];
  snprintf(jd, sizeof jd, "%s/journal", tmp);
  int fd = open(jd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return; /* none was made */
  DIR *dir = fdopendir(fd);
  if (dir == NULL) {
    close(fd);
    return;
  }
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n > 4 && !strcmp(e->d_name + n - 4, ".jnl"))
      unlinkat(dirfd(dir), e->d_name, 0);
  }
  closedir(dir);
  if (rmdir(jd) < 0)
    fprintf(stderr, "gpuprof: could not remove %s: %s\n", jd, strerror(errno));
}

/* An existing profile at db is moved aside to db.old (with its -wal and
 * -shm, as perf keeps perf.data.old), so that the daemon starts a new one
 * instead of adding this run to the old.  0, or -1 with a message. */
static int keep_old(const char *db) {
  static const char *const sfx[] = {"", "-wal", "-shm"};
  char from[PATH_MAX + 8], to[PATH_MAX + 16];
  struct stat sb;
  if (lstat(db, &sb) < 0) return 0; /* nothing there */
  if (S_ISDIR(sb.st_mode)) {
    fprintf(stderr, "gpuprof: %s is a directory\n", db);
    return -1;
  }
  for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
    snprintf(from, sizeof(from), "%s%s", db, sfx[i]);
    snprintf(to, sizeof(to), "%s.old%s", db, sfx[i]);
    if (rename(from, to) == 0) continue;
    if (errno == ENOENT && i > 0) { /* no log: drop a stale one of an older .old */
      unlink(to);
      continue;
    }
    fprintf(stderr, "gpuprof: cannot move the existing %s to %s: %s\n", from, to, strerror(errno));
    return -1;
  }
  fprintf(stderr, "gpuprof: the existing profile %s was moved to %s.old\n", db, db);
  return 0;
}

static gpd_cli_cmd_t record_cmd = {
    .head = "usage: gpuprof record [-o FILE] [--cpu-sampling HZ] [--keep-socket] -- CMD [ARGS...]\n"
            "  Run CMD under a private gpuprofd (no root, no service needed) and save\n"
            "  its profile to FILE (default ./gpuprof-<cmd>-<pid>.gpdb).\n",
    .opts = (const gpd_cli_opt_t[]){
        {"output", required_argument, 'o', "-o, --output FILE",
         "where to write the profile (an existing one is moved to FILE.old)"},
        {"cpu-sampling", required_argument, 'c', "--cpu-sampling HZ",
         "also sample each thread's CPU time HZ times per CPU second\n"
         "(CPUTIME and a CPU sample trace; sets GPUPROF_CPU_SAMPLING)"},
        {"keep-socket", no_argument, 'k', "--keep-socket", "keep the private folder (socket, daemon's log, journal/)"},
        {0}},
    .shorts = "ok",
    .col = 21,
    .tail = "  Env: GPUPROF_DAEMON, GPUPROF_SHIM override where gpuprofd and libgpuprof.so are found.\n"};

/* A calling context of the summary: a kernel node (its GKER) or the
 * placeholder of a copy or memset (its GPUOP): device time, not host
 * waits. */
typedef struct {
  size_t node;
  double ns, count;
} record_ctx_t;

static int record_ctx_cmp(const void *a, const void *b) {
  const record_ctx_t *x = a, *y = b;
  return x->ns != y->ns ? (x->ns > y->ns ? -1 : 1) : (x->node > y->node) - (x->node < y->node);
}

/* The 5 heaviest calling contexts of t by GPU time, one line each:
 * innermost first (the kernel's short name, or the operation, then its
 * CPU call path as `report`'s idleness rows spell it: gpd_xtrace_path,
 * gpd_cli_path_fit), cut to width characters. */
static void record_contexts(FILE *f, const gpd_tree_t *t, unsigned width) {
  /* the lead of a line: "gpuprof:   " (11) + time and " s " (13) + share and
   * a space (7) + count and "x  " (11): 42 characters */
  enum { LEAD = 42, TOP = 5 };
  record_ctx_t *c = calloc(t->n + 1, sizeof *c);
  size_t n = 0;
  double total = 0;
  if (c == NULL) return;
  for (size_t i = 0; i < t->n; i++) {
    const gpd_tnode_t *nd = &t->nodes[i];
    if (nd->kind == GPD_NODE_KERNEL)
      c[n] = (record_ctx_t){i, gpd_tree_mvec_get(&nd->incl, GPD_M_GKER), gpd_tree_mvec_get(&nd->incl, GPD_M_GKER_COUNT)};
    else if (nd->kind == GPD_NODE_PLACEHOLDER && (!strcmp(nd->label, gpd_op_placeholder(GPD_OP_COPY)) ||
                                                  !strcmp(nd->label, gpd_op_placeholder(GPD_OP_MEMSET))))
      c[n] = (record_ctx_t){i, gpd_tree_mvec_get(&nd->excl, GPD_M_GPUOP), gpd_render_op_count(&nd->excl)};
    else
      continue;
    if (c[n].ns > 0) total += c[n++].ns;
  }
  qsort(c, n, sizeof *c, record_ctx_cmp);
  if (n) fprintf(f, "gpuprof: heaviest calling contexts by GPU time (innermost first):\n");
  /* gpd_xtrace_path reads only the tree of its trace */
  gpd_xtrace_t x = {.tree = *t};
  for (size_t i = 0; i < n && i < TOP; i++) {
    const gpd_tnode_t *nd = &t->nodes[c[i].node];
    char path[8192], leaf[1024], full[4096], pv[16], line[8192];
    if (nd->kind == GPD_NODE_KERNEL) {
      gpd_render_node_name(full, sizeof full, nd);
      gpd_render_short_name(leaf, sizeof leaf, full);
    } else {
      snprintf(leaf, sizeof leaf, "%s", nd->label);
    }
    gpd_xtrace_path(&x, nd->id, 1, path, sizeof path);
    size_t len = strlen(path);
    snprintf(path + len, sizeof path - len, "%s%s", len ? " > " : "", leaf);
    gpd_cli_path_fit(path, width == 0 ? 0 : width > LEAD + 40 ? width - LEAD : 40);
    gpd_render_pct(pv, sizeof pv, c[i].ns, total);
    fprintf(f, "gpuprof:   %10.4g s %6s %8.0fx  %s\n", c[i].ns / 1e9, pv, c[i].count,
            gpd_text_line(line, sizeof line, path));
  }
  if (n > TOP) fprintf(f, "gpuprof:   (%zu more; gpuprof report shows all)\n", n - TOP);
  free(c);
}

int gpd_cmd_record(int argc, char **argv) {
  const char *record_usage = gpd_cli_help(&record_cmd);
  const char *out_opt = NULL, *cpu_hz = NULL;
  int keep = 0, c, rc, code = GPD_EXIT_NODAEMON;
  char bindir[PATH_MAX], daemon[PATH_MAX], shim[PATH_MAX], tried[4096], db[PATH_MAX], tmp[PATH_MAX];
  int exec_failed = 0;
  char sock[PATH_MAX + 32], logp[PATH_MAX + 32], cwd[PATH_MAX], cand1[PATH_MAX + 32], cand2[PATH_MAX + 32], st_txt[128];
  pid_t dpid = -1, cpid = -1;
  int dalive = 0, dstatus = 0, cstatus = 0, have_tmp = 0;
  struct sigaction sa, old_int, old_term, old_hup, old_quit;

  optind = 1;
  while ((c = gpd_cli_opt_next(argc, argv, &record_cmd, &rc)) > 0) {
    switch (c) {
    case 'o': out_opt = optarg; break;
    case 'k': keep = 1; break;
    case 'c':
      if (gpd_cli_parse_uint(optarg) <= 0 || gpd_cli_parse_uint(optarg) > 10000)
        return gpd_cli_usage(record_usage, "bad --cpu-sampling '%s' (1..10000 Hz)", optarg);
      cpu_hz = optarg;
      break;
    }
  }
  if (c < 0) return rc;
  if (optind >= argc) return gpd_cli_usage(record_usage, "no command given");
  char **cmd = &argv[optind];
  if (out_opt && !out_opt[0]) return gpd_cli_usage(record_usage, "empty -o FILE");

  /* where things are */
  if (self_dir(bindir, sizeof(bindir)) < 0) bindir[0] = 0;
  snprintf(cand1, sizeof(cand1), "%s/gpuprofd", bindir);
  const char *dc[] = {bindir[0] ? cand1 : NULL, GPD_INSTALL_SBINDIR "/gpuprofd"};
  if (locate("GPUPROF_DAEMON", dc, 2, X_OK, daemon, sizeof(daemon), tried, sizeof(tried)) < 0) {
    fprintf(stderr, "gpuprof: cannot find gpuprofd (tried %s); set GPUPROF_DAEMON to its path\n", tried);
    return GPD_EXIT_NODAEMON;
  }
  snprintf(cand2, sizeof(cand2), "%s/../lib/libgpuprof.so", bindir);
  const char *sc[] = {bindir[0] ? cand2 : NULL, GPD_INSTALL_SHIM};
  if (locate("GPUPROF_SHIM", sc, 2, R_OK, shim, sizeof(shim), tried, sizeof(tried)) < 0) {
    fprintf(stderr, "gpuprof: cannot find libgpuprof.so (tried %s); set GPUPROF_SHIM to its path\n", tried);
    return GPD_EXIT_NODAEMON;
  }
  if (!getcwd(cwd, sizeof(cwd))) {
    fprintf(stderr, "gpuprof: getcwd: %s\n", strerror(errno));
    return GPD_EXIT_FAIL;
  }
  {
    char def[NAME_MAX + 64];
    const char *base = strrchr(cmd[0], '/');
    base = base ? base + 1 : cmd[0];
    snprintf(def, sizeof(def), "gpuprof-%.200s-%d.gpdb", base[0] ? base : "cmd", (int)getpid());
    const char *o = out_opt ? out_opt : def;
    if (o[0] == '/')
      snprintf(db, sizeof(db), "%s", o);
    else if ((size_t)snprintf(db, sizeof(db), "%s/%s", cwd, o) >= sizeof(db)) {
      fprintf(stderr, "gpuprof: output path too long\n");
      return GPD_EXIT_FAIL;
    }
    /* a clear error now rather than a daemon failure later */
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", db);
    char *sl = strrchr(dir, '/');
    if (sl == dir) sl[1] = 0;
    else if (sl) *sl = 0;
    if (access(dir, W_OK | X_OK) < 0) {
      fprintf(stderr, "gpuprof: cannot write the profile to %s: %s\n", db, strerror(errno));
      return GPD_EXIT_FAIL;
    }
    if (keep_old(db) < 0) return GPD_EXIT_FAIL;
  }

  /* signals: forward to the child once it runs */
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  sigaction(SIGQUIT, &sa, &old_quit);

  /* private folder for the socket and the daemon's log */
  const char *td = getenv("TMPDIR");
  snprintf(tmp, sizeof(tmp), "%s/gpuprof-XXXXXX", td && td[0] ? td : "/tmp");
  if (!mkdtemp(tmp)) {
    fprintf(stderr, "gpuprof: cannot create a private folder %s: %s\n", tmp, strerror(errno));
    code = GPD_EXIT_FAIL;
    goto done;
  }
  have_tmp = 1;
  snprintf(sock, sizeof(sock), "%s/gpuprofd.sock", tmp);
  snprintf(logp, sizeof(logp), "%s/gpuprofd.log", tmp);
  if (strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    fprintf(stderr, "gpuprof: socket path %s is too long for a Unix socket; set TMPDIR to a shorter folder\n", sock);
    code = GPD_EXIT_FAIL;
    goto done;
  }

  /* start the daemon */
  if ((dpid = fork()) < 0) {
    fprintf(stderr, "gpuprof: fork: %s\n", strerror(errno));
    code = GPD_EXIT_FAIL;
    goto done;
  }
  if (dpid == 0) {
    int lfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    if (nfd >= 0) dup2(nfd, 0);
    if (lfd >= 0) {
      dup2(lfd, 1);
      dup2(lfd, 2);
    }
    char *pl = preload_without_shim(getenv("LD_PRELOAD"));
    if (pl[0])
      setenv("LD_PRELOAD", pl, 1);
    else
      unsetenv("LD_PRELOAD");
    unsetenv("GPUPROF_SOCKET");
    /* one run, on purpose: full collection whatever the node's policy
     * (the program's own GPUPROF_CUDA_TRACE still wins in its shim) */
    char *dargv[] = {daemon, "--foreground", "--socket", sock, "--db", db, "--exit-when-idle",
                     "--release-on-consume", "--collect", "full", "--journal-dir", tmp, NULL};
    execv(daemon, dargv);
    fprintf(stderr, "exec %s: %s\n", daemon, strerror(errno));
    _exit(127);
  }
  dalive = 1;
  long deadline = now_ms() + GPD_RECORD_START_MS;
  for (;;) {
    pid_t w = waitpid(dpid, &dstatus, WNOHANG);
    if (w == dpid) {
      dalive = 0;
      status_text(st_txt, sizeof(st_txt), dstatus);
      fprintf(stderr, "gpuprof: gpuprofd (%s) failed to start (%s); its output:\n", daemon, st_txt);
      print_file(stderr, logp, "  gpuprofd: ");
      goto done;
    }
    if (sock_accepts(sock)) break;
    if (interrupted) {
      fprintf(stderr, "gpuprof: interrupted while starting gpuprofd\n");
      code = 128 + interrupted;
      goto done;
    }
    if (now_ms() > deadline) {
      fprintf(stderr, "gpuprof: gpuprofd (%s) did not accept connections on %s within %d s; its output:\n", daemon,
              sock, GPD_RECORD_START_MS / 1000);
      print_file(stderr, logp, "  gpuprofd: ");
      goto done;
    }
    sleep_ms(10);
  }
  if (keep) fprintf(stderr, "gpuprof: private gpuprofd socket: %s\n", sock);

  /* run the command; an exec failure comes back through a CLOEXEC pipe */
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) < 0) {
    fprintf(stderr, "gpuprof: pipe: %s\n", strerror(errno));
    code = GPD_EXIT_FAIL;
    goto done;
  }
  if ((cpid = fork()) < 0) {
    fprintf(stderr, "gpuprof: fork: %s\n", strerror(errno));
    close(ep[0]);
    close(ep[1]);
    code = GPD_EXIT_FAIL;
    goto done;
  }
  if (cpid == 0) {
    close(ep[0]);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    char *rest = preload_without_shim(getenv("LD_PRELOAD"));
    size_t pn = strlen(shim) + strlen(rest) + 2;
    char *pl = malloc(pn);
    if (!pl) _exit(127);
    /* The shim goes after what is already preloaded: a sanitizer runtime
     * must stay first, and another tool's wrappers then call ours. */
    snprintf(pl, pn, "%s%s%s", rest, rest[0] ? ":" : "", shim);
    setenv("LD_PRELOAD", pl, 1);
    setenv("GPUPROF_SOCKET", sock, 1);
    setenv("GPUPROF_RECORD", "1", 1);
    if (cpu_hz)
      setenv("GPUPROF_CPU_SAMPLING", cpu_hz, 1);
    execvp(cmd[0], cmd);
    int e = errno;
    if (write(ep[1], &e, sizeof(e)) < 0) {
    }
    _exit(e == ENOENT ? 127 : 126);
  }
  child_pid = cpid;
  close(ep[1]);
  {
    int e = 0;
    ssize_t k;
    while ((k = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR) {
    }
    close(ep[0]);
    if (k == (ssize_t)sizeof(e)) {
      fprintf(stderr, "gpuprof: cannot run '%s': %s\n", cmd[0], strerror(e));
      exec_failed = 1;
    }
  }
  if (interrupted && child_pid > 0) kill(cpid, interrupted); /* came in before child_pid was set */
  /* Wait without reaping first, so that a forwarded signal never hits a
   * recycled pid; then stop forwarding and reap. */
  {
    siginfo_t si;
    while (waitid(P_PID, (id_t)cpid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    child_pid = 0;
    while (waitpid(cpid, &cstatus, 0) < 0 && errno == EINTR) {
    }
  }
  code = WIFEXITED(cstatus) ? WEXITSTATUS(cstatus) : WIFSIGNALED(cstatus) ? 128 + WTERMSIG(cstatus) : 1;

  /* stop the daemon: SIGTERM makes it drain the rings and persist */
  if (kill(dpid, SIGTERM) < 0 && errno != ESRCH)
    fprintf(stderr, "gpuprof: cannot signal gpuprofd: %s\n", strerror(errno));
  deadline = now_ms() + GPD_RECORD_STOP_MS;
  for (;;) {
    pid_t w = waitpid(dpid, &dstatus, WNOHANG);
    if (w == dpid || (w < 0 && errno != EINTR)) break;
    if (now_ms() > deadline) {
      fprintf(stderr, "gpuprof: gpuprofd did not finish within %d s; killing it (the profile may be incomplete)\n",
              GPD_RECORD_STOP_MS / 1000);
      kill(dpid, SIGKILL);
      while (waitpid(dpid, &dstatus, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    sleep_ms(10);
  }
  dalive = 0;
  if (!WIFEXITED(dstatus) || WEXITSTATUS(dstatus) != 0) {
    status_text(st_txt, sizeof(st_txt), dstatus);
    fprintf(stderr, "gpuprof: gpuprofd ended with %s; its output:\n", st_txt);
    print_file(stderr, logp, "  gpuprofd: ");
  }

  /* summary; none when the command never ran: the daemon's empty
   * profile (made by this record: an older one was moved aside) goes */
  if (exec_failed) {
    static const char *const sfx[] = {"", "-wal", "-shm"};
    char pth[PATH_MAX + 8];
    for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
      snprintf(pth, sizeof(pth), "%s%s", db, sfx[i]);
      unlink(pth);
    }
    fprintf(stderr, "gpuprof: no profile written (the command did not run)\n");
  } else {
    gpd_tree_t t;
    char err[1024];
    gpd_tree_init(&t);
    if (access(db, R_OK) < 0)
      fprintf(stderr, "gpuprof: no profile was written (%s: %s)\n", db, strerror(errno));
    else if (gpd_load_file(&t, db, 0, 1, err, sizeof(err)) < 0)
      fprintf(stderr, "gpuprof: %s\n", err);
    else if (gpd_tree_finish(&t, 0) == 0) {
      gpd_render_summary(stderr, &t, db);
      record_contexts(stderr, &t, gpd_cli_width());
    }
    gpd_tree_free(&t);
  }

done:
  if (dalive) {
    kill(dpid, SIGTERM);
    long dl = now_ms() + 5000;
    while (waitpid(dpid, &dstatus, WNOHANG) == 0 && now_ms() < dl) sleep_ms(10);
    if (waitpid(dpid, &dstatus, WNOHANG) == 0) {
      kill(dpid, SIGKILL);
      waitpid(dpid, &dstatus, 0);
    }
  }
  if (have_tmp) {
    if (keep) {
      fprintf(stderr, "gpuprof: kept %s (gpuprofd.sock, gpuprofd.log, journal/)\n", tmp);
    } else {
      journal_remove(tmp);
      unlink(sock);
      unlink(logp);
      if (rmdir(tmp) < 0 && errno != ENOENT)
        fprintf(stderr, "gpuprof: could not remove %s: %s\n", tmp, strerror(errno));
    }
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGHUP, &old_hup, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  return code;
}
