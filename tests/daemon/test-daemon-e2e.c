/* test-daemon-e2e.c - integration tests of bin/gpuprofd with the fake shim
 * test-daemon-client and the SQLite file it writes.
 *   integration  register, push, EOF -> exact rows in the database
 *   hostile      garbage ring + honest client, bad frames, silent client
 *   killed       client SIGKILLs itself after K pairs -> all K kept
 *   restart      daemon SIGKILLed while a client holds its region; a new
 *                daemon adopts the handed-back region; all pairs counted,
 *                invocations pending across the kill included (table pending)
 *   register64   64 processes register at once while the daemon lock is
 *                busy and the writer and tracing threads write: every Hello
 *                answered within the client's deadline, every profile exact;
 *                Top over them asked again unchanged and after a change
 *   graphreplay  a CUDA graph replayed 50 times: its kernels and memset stored
 *                below the replay site's <graph replay> under copies of the
 *                paths that created the nodes, exact counts, the copies'
 *                context rows (module, offset) like the originals'
 * Waits are bounded (a test timeout), never timing assertions. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/frame.h"
#include "gpuprof/hash.h"
#include "gpuprof/metric.h"
#include "gpuprof.pb-c.h"

#define KNAME "_Z9my_kernelPfi"
#define MODPATH "/nonexistent/test-app"

static char dir[64], sock[100], db[300], logf_[300], conf[300];
static int failures;

#define CHECK(c, ...)                                                        \
  do {                                                                       \
    if (!(c)) {                                                              \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);           \
      fprintf(stderr, __VA_ARGS__);                                          \
      fprintf(stderr, "\n");                                                 \
      failures++;                                                            \
    }                                                                        \
  } while (0)

static void msleep(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int try_connect(void) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
  if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
    close(s);
    return -1;
  }
  return s;
}

/* Every process a test starts is killed and reaped at exit, whatever path
 * the test took (a failed check, a timeout, exit(1) in a helper). */
static pid_t kids[80];
static int nkids;

static void kids_track(pid_t pid) {
  if (pid > 0 && nkids < (int)(sizeof kids / sizeof *kids))
    kids[nkids++] = pid;
}

static void kids_reap(void) {
  for (int i = 0; i < nkids; i++) {
    int st;
    if (waitpid(kids[i], &st, WNOHANG) == 0) {
      kill(kids[i], SIGKILL);
      waitpid(kids[i], &st, 0);
    }
  }
  nkids = 0;
}

static pid_t start_daemon(int exit_when_idle) {
  pid_t pid = fork();
  kids_track(pid);
  if (pid == 0) {
    int fd = open(logf_, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 2);
    setenv("GPUPROF_LOG", "info", 1);
    execl(GPD_TEST_DAEMON, "gpuprofd", "--socket", sock, "--db", db, "--config", conf,
          "--foreground", exit_when_idle ? "--exit-when-idle" : NULL, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 1000; i++) {
    int s = try_connect();
    if (s >= 0) {
      close(s);
      return pid;
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      fprintf(stderr, "daemon exited at start (status %d)\n", st);
      exit(1);
    }
    msleep(10);
  }
  fprintf(stderr, "daemon did not listen\n");
  kill(pid, SIGKILL);
  exit(1);
}

/* Wait for pid with a bound; returns the wait status or -1. */
static int wait_for(pid_t pid, int max_ms) {
  int st;
  for (int t = 0; t < max_ms; t += 10) {
    if (waitpid(pid, &st, WNOHANG) == pid)
      return st;
    msleep(10);
  }
  return -1;
}

/* Start the client; if out_fd/in_fd given, pipes to its stdout/stdin. */
static pid_t start_client(FILE **out, FILE **in, const char *mode, const char *a1, const char *a2,
                          const char *a3) {
  int po[2], pi[2];
  if (pipe(po) < 0 || pipe(pi) < 0)
    exit(1);
  pid_t pid = fork();
  kids_track(pid);
  if (pid == 0) {
    dup2(po[1], 1);
    dup2(pi[0], 0);
    close(po[0]);
    close(pi[1]);
    execl(GPD_TEST_CLIENT, "test-daemon-client", sock, mode, a1, a2, a3, (char *)NULL);
    _exit(127);
  }
  close(po[1]);
  close(pi[0]);
  *out = fdopen(po[0], "r");
  *in = fdopen(pi[1], "w");
  return pid;
}

static double q1(const char *fmt, ...) {
  char sql[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  sqlite3 *h;
  double v = -1;
  if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(h);
    return -2;
  }
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -3 : sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
  } else {
    fprintf(stderr, "sql error: %s: %s\n", sql, sqlite3_errmsg(h));
  }
  sqlite3_close(h);
  return v;
}

static char *qs(const char *sql) {
  sqlite3 *h;
  char *v = NULL;
  if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(h);
    return NULL;
  }
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
      v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return v;
}

/* Merkle ids of the client's tree. */
static uint64_t ctx_kernel(void) {
  uint64_t id = GPD_CTX_ROOT;
  for (int i = 1; i <= 3; i++)
    id = gpd_ctx_id(id, MODPATH, strlen(MODPATH), 0x100 * (uint64_t)i);
  id = gpd_ctx_id(id, "<gpu kernel>", 12, 0);
  return gpd_ctx_id(id, "kernel:" KNAME, strlen("kernel:" KNAME), 0);
}

#define KSQL "SELECT value FROM metric WHERE profile_id=%llu AND context_id=%lld AND metric_id=%d"

static double kmetric(uint64_t prof, int metric) {
  return q1(KSQL, (unsigned long long)prof, (long long)ctx_kernel(), metric);
}

static Gpuprof__Msg *request(int s, Gpuprof__Msg *m) {
  size_t n = gpuprof__msg__get_packed_size(m);
  uint8_t *buf = malloc(n + 1);
  gpuprof__msg__pack(m, buf);
  int e = gpd_frame_send(s, buf, (uint32_t)n, -1, 5000);
  free(buf);
  if (e < 0)
    return NULL;
  uint8_t *in = NULL;
  size_t inn = 0;
  int fd = -1;
  if (gpd_frame_recv(s, &in, &inn, &fd, 10000) < 0)
    return NULL;
  Gpuprof__Msg *r = gpuprof__msg__unpack(NULL, inn, in);
  free(in);
  return r;
}

static Gpuprof__Msg *ps(void) {
  int s = try_connect();
  if (s < 0)
    return NULL;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__PsRequest r = GPUPROF__PS_REQUEST__INIT;
  m.body_case = GPUPROF__MSG__BODY_PS_REQ;
  m.ps_req = &r;
  Gpuprof__Msg *rep = request(s, &m);
  close(s);
  return rep;
}

static int log_has(const char *needle) {
  FILE *f = fopen(logf_, "r");
  char line[2048];
  int found = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, needle))
      found = 1;
  if (f)
    fclose(f);
  return found;
}

static void setup(const char *name) {
  snprintf(dir, sizeof dir, "/tmp/gpd-test-%s-XXXXXX", name);
  if (!mkdtemp(dir))
    exit(1);
  chmod(dir, 0755); /* the non-admin query runs as nobody */
  snprintf(sock, sizeof sock, "%s/s.sock", dir);
  snprintf(db, sizeof db, "%s/p.gpdb", dir);
  snprintf(logf_, sizeof logf_, "%s/daemon.log", dir);
  snprintf(conf, sizeof conf, "%s/gpuprofd.conf", dir);
  FILE *f = fopen(conf, "w");
  fprintf(f, "[store]\nflush_interval_ms = 50\n[shm]\nrings_per_process = 4\nring_slots = 1024\n"
             "[monitor]\npoll_interval_us = 100\n");
  fclose(f);
}

static void dump_log(void) {
  if (failures) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "tail -n 40 %s >&2", logf_);
    if (system(cmd)) {
    }
  }
}

/* ------------------------------------------------------------------ tests */

static void t_integration(void) {
  setup("integ");
  pid_t d = start_daemon(1);
  FILE *out, *in;
  pid_t c = start_client(&out, &in, "honest", "1000", NULL, NULL);
  int st = wait_for(c, 60000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "client status %d", st);
  st = wait_for(d, 60000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon (exit-when-idle) status %d", st);
  uint64_t prof = (uint64_t)q1("SELECT id FROM profile");
  char *state = qs("SELECT state FROM profile");
  CHECK(state && strcmp(state, "exited") == 0, "state %s", state ? state : "(null)");
  free(state);
  CHECK(q1("SELECT count(*) FROM profile") == 1, "one profile");
  /* 1 module + 1 string + 3 nodes + 1 status + 1000 pairs + 1 copy pair */
  CHECK(q1("SELECT records FROM profile") == 2008, "records %g", q1("SELECT records FROM profile"));
  CHECK(q1("SELECT pid FROM profile") == (double)c, "pid from SO_PEERCRED, not Hello");
  CHECK(q1("SELECT uid FROM profile") == (double)getuid(), "uid");
  CHECK(kmetric(prof, GPD_M_GKER) == 100000.0, "GKER %g", kmetric(prof, GPD_M_GKER));
  CHECK(kmetric(prof, GPD_M_GKER_COUNT) == 1000.0, "GKER:COUNT %g", kmetric(prof, GPD_M_GKER_COUNT));
  CHECK(kmetric(prof, GPD_M_GKER_BLK) == 2000.0, "GKER:BLK sum");
  CHECK(q1("SELECT sum(value) FROM metric WHERE metric_id=%d", GPD_M_GKER) == 100000.0,
        "kernel time nowhere else");
  CHECK(q1("SELECT m.value FROM metric m JOIN context c ON c.id=m.context_id WHERE c.kind=2 AND"
           " c.label='<gpu copy>' AND m.metric_id=%d", GPD_M_GXCOPY_H2D) == 4096.0,
        "H2D bytes at <gpu copy>");
  CHECK(q1("SELECT sum(value) FROM metric WHERE metric_id=%d", GPD_M_GXCOPY_D2H) == -3.0,
        "no D2H rows");
  CHECK(q1("SELECT count(*) FROM metric WHERE value=0") == 0, "sparse: no zero rows");
  CHECK(q1("SELECT count(*) FROM cct_local") == 3, "cct_local rows");
  char *label = qs("SELECT label FROM context WHERE kind=3");
  char *raw = qs("SELECT raw_name FROM context WHERE kind=3");
  CHECK(label && strcmp(label, "my_kernel(float*, int)") == 0, "label %s", label ? label : "");
  CHECK(raw && strcmp(raw, KNAME) == 0, "raw %s", raw ? raw : "");
  free(label);
  free(raw);
  CHECK(q1("SELECT count(*) FROM backend WHERE api='cuda' AND enabled=0 AND code=999") == 1,
        "backend status row");
  char *argv = qs("SELECT argv FROM profile");
  CHECK(argv && strcmp(argv, "[\"test-daemon-client\",\"arg \\\"quoted\\\"\"]") == 0, "argv %s",
        argv ? argv : "");
  free(argv);
  CHECK(q1("SELECT count(*) FROM metric_desc") == GPD_M__COUNT, "metric_desc rows");
  fclose(out);
  fclose(in);
}

static void t_graph(void) {
  setup("graph");
  pid_t d = start_daemon(1);
  FILE *out, *in;
  pid_t c = start_client(&out, &in, "graph", "50", NULL, NULL);
  int st = wait_for(c, 60000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "client status %d", st);
  st = wait_for(d, 60000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon (exit-when-idle) status %d", st);
  /* 1 module + 1 string + 4 nodes + 6 graph nodes + 50 launches x (1 + 3) */
  CHECK(q1("SELECT records FROM profile") == 212, "records %g", q1("SELECT records FROM profile"));
  uint64_t f[4] = {GPD_CTX_ROOT};
  for (int i = 1; i <= 3; i++)
    f[i] = gpd_ctx_id(f[i - 1], MODPATH, strlen(MODPATH), 0x100 * (uint64_t)i);
  uint64_t site = gpd_ctx_id(f[1], MODPATH, strlen(MODPATH), 0x400);
  uint64_t cp[4];
  cp[0] = gpd_ctx_id(site, "<graph replay>", 14, 0);
  for (int i = 1; i <= 3; i++) { /* H(parent, "graph:" + the original's id, 0) */
    uint8_t k[14] = {'g', 'r', 'a', 'p', 'h', ':'};
    for (int b = 0; b < 8; b++)
      k[6 + b] = (uint8_t)(f[i] >> (8 * b));
    cp[i] = gpd_ctx_id(cp[i - 1], k, sizeof k, 0);
  }
  const char *kk = "kernel:" KNAME;
  uint64_t k2 = gpd_ctx_id(gpd_ctx_id(cp[2], "<gpu kernel>", 12, 0), kk, strlen(kk), 0);
  uint64_t k3 = gpd_ctx_id(gpd_ctx_id(cp[3], "<gpu kernel>", 12, 0), kk, strlen(kk), 0);
  uint64_t m3 = gpd_ctx_id(cp[3], "<gpu memset>", 12, 0);
  const char *V = "SELECT value FROM metric WHERE context_id=%lld AND metric_id=%d";
  CHECK(q1(V, (long long)k2, GPD_M_GKER_COUNT) == 50.0, "kernel of node 1 below its creation path: %g",
        q1(V, (long long)k2, GPD_M_GKER_COUNT));
  CHECK(q1(V, (long long)k3, GPD_M_GKER_COUNT) == 50.0, "kernel of node 2: %g", q1(V, (long long)k3, GPD_M_GKER_COUNT));
  CHECK(q1(V, (long long)k3, GPD_M_GKER) == 5000.0, "its time");
  CHECK(q1(V, (long long)m3, GPD_M_GMSET_COUNT) == 50.0, "memset of node 3: %g", q1(V, (long long)m3, GPD_M_GMSET_COUNT));
  CHECK(q1(V, (long long)m3, GPD_M_GMSET_DEV) == 204800.0, "its bytes");
  CHECK(q1("SELECT sum(value) FROM metric WHERE metric_id=%d", GPD_M_GKER_COUNT) == 100.0, "no kernel elsewhere");
  CHECK(q1("SELECT count(*) FROM context WHERE id=%lld AND kind=2 AND label='<graph replay>' AND parent=%lld",
           (long long)cp[0], (long long)site) == 1, "the <graph replay> row");
  CHECK(q1("SELECT count(*) FROM context WHERE id=%lld AND parent=%lld AND kind=1 AND offset=%d AND module=(SELECT "
           "module FROM context WHERE id=%lld)", (long long)cp[3], (long long)cp[2], 0x300, (long long)f[3]) == 1,
        "the copied frame keeps module and offset");
  fclose(out);
  fclose(in);
}

static void t_hostile(void) {
  setup("hostile");
  pid_t d = start_daemon(0);
  FILE *gout, *gin, *hout, *hin;
  pid_t g = start_client(&gout, &gin, "garbage", NULL, NULL, NULL);
  char line[128] = "";
  CHECK(fgets(line, sizeof line, gout) != NULL && strncmp(line, "READY", 5) == 0, "garbage ready");
  pid_t h = start_client(&hout, &hin, "honest", "500", NULL, NULL);
  int st = wait_for(h, 60000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "honest client %d", st);

  /* frame attacks, each on its own connection */
  int s = try_connect(); /* silent: never speaks */
  CHECK(s >= 0, "connect silent");
  int t = try_connect(); /* truncated: header for 100 bytes, 10 sent, EOF */
  uint8_t trunc[14] = {100, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  CHECK(write(t, trunc, sizeof trunc) == sizeof trunc, "write");
  close(t);
  int o = try_connect(); /* oversized length */
  uint8_t big[8] = {0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4};
  CHECK(write(o, big, sizeof big) == sizeof big, "write");
  uint8_t *in = NULL;
  size_t n = 0;
  int fd = -1;
  CHECK(gpd_frame_recv(o, &in, &n, &fd, 10000) == 0, "oversized: an Error reply");
  Gpuprof__Msg *r = in ? gpuprof__msg__unpack(NULL, n, in) : NULL;
  CHECK(r && r->body_case == GPUPROF__MSG__BODY_ERROR && r->error->code == GPD_EFRAMETOOBIG,
        "oversized -> Error FRAMETOOBIG");
  if (r)
    gpuprof__msg__free_unpacked(r, NULL);
  free(in);
  in = NULL;
  CHECK(gpd_frame_recv(o, &in, &n, &fd, 10000) == -ECONNRESET, "closed after the reply");
  close(o);
  int gb = try_connect(); /* garbage payload */
  uint8_t garb[12] = {8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  CHECK(write(gb, garb, sizeof garb) == sizeof garb, "write");
  CHECK(gpd_frame_recv(gb, &in, &n, &fd, 10000) == 0, "garbage: an Error reply");
  r = in ? gpuprof__msg__unpack(NULL, n, in) : NULL;
  CHECK(r && r->body_case == GPUPROF__MSG__BODY_ERROR && r->error->code == GPD_EBADFRAME,
        "garbage -> Error BADFRAME");
  if (r)
    gpuprof__msg__free_unpacked(r, NULL);
  free(in);
  in = NULL;
  close(gb);

  /* the daemon keeps serving while the silent client hangs on */
  uint64_t honest_prof = 0;
  for (int i = 0; i < 500; i++) {
    Gpuprof__Msg *p = ps();
    CHECK(p != NULL && p->body_case == GPUPROF__MSG__BODY_PS, "Ps answered");
    if (p == NULL)
      break;
    int done = 0, bad = 0;
    for (size_t k = 0; k < p->ps->n_procs; k++) {
      Gpuprof__Process *pr = p->ps->procs[k];
      if (pr->pid == h && !pr->running && pr->records == 1008) {
        done = 1;
        honest_prof = pr->profile_id;
      }
      if (pr->pid == g && pr->error[0] && pr->running)
        bad = 1;
    }
    gpuprof__msg__free_unpacked(p, NULL);
    if (done && bad)
      break;
    msleep(20);
  }
  CHECK(honest_prof != 0, "honest process ended with all 1008 records");
  /* live queries: Tree and Top from memory, access control */
  {
    int q = try_connect();
    Gpuprof__Msg m = GPUPROF__MSG__INIT;
    Gpuprof__TreeRequest tr = GPUPROF__TREE_REQUEST__INIT;
    tr.pid = h;
    m.body_case = GPUPROF__MSG__BODY_TREE_REQ;
    m.tree_req = &tr;
    Gpuprof__Msg *rep = request(q, &m);
    CHECK(rep && rep->body_case == GPUPROF__MSG__BODY_TREE, "Tree reply");
    double kern = -1, root = -1;
    for (size_t i = 0; rep && rep->body_case == GPUPROF__MSG__BODY_TREE && i < rep->tree->n_nodes; i++) {
      Gpuprof__Node *nd = rep->tree->nodes[i];
      for (size_t k = 0; k < nd->n_incl; k++)
        if (nd->incl[k]->id == GPD_M_GKER) {
          if (nd->id == ctx_kernel())
            kern = nd->incl[k]->value;
          if (nd->parent == 0)
            root = nd->incl[k]->value;
        }
    }
    CHECK(kern == 50000.0 && root == 50000.0, "Tree: kernel %g root %g", kern, root);
    if (rep)
      gpuprof__msg__free_unpacked(rep, NULL);
    Gpuprof__TopRequest top = GPUPROF__TOP_REQUEST__INIT;
    top.pid = h;
    m.body_case = GPUPROF__MSG__BODY_TOP_REQ;
    m.top_req = &top;
    rep = request(q, &m);
    CHECK(rep && rep->body_case == GPUPROF__MSG__BODY_TOP && rep->top->n_entries >= 1, "Top reply");
    if (rep && rep->body_case == GPUPROF__MSG__BODY_TOP && rep->top->n_entries >= 1) {
      Gpuprof__TopEntry *e = rep->top->entries[0];
      CHECK(strcmp(e->label, "my_kernel(float*, int)") == 0, "Top[0] %s", e->label);
      CHECK(e->n_path == 3, "heaviest path: 3 CPU frames, got %zu", e->n_path);
      double gk = 0;
      for (size_t k = 0; k < e->n_metrics; k++)
        if (e->metrics[k]->id == GPD_M_GPUOP)
          gk = e->metrics[k]->value;
      CHECK(gk == 50000.0, "Top GPUOP %g", gk);
    }
    if (rep)
      gpuprof__msg__free_unpacked(rep, NULL);
    close(q);
    /* another user asking for root's process */
    pid_t u = fork();
    if (u == 0) {
      if (setgid(65534) < 0 || setuid(65534) < 0)
        _exit(77);
      int q2 = try_connect();
      m.body_case = GPUPROF__MSG__BODY_TREE_REQ;
      m.tree_req = &tr;
      Gpuprof__Msg *r2 = request(q2, &m);
      char want[128];
      /* another uid's pid: the same answer as a pid nobody profiles */
      snprintf(want, sizeof want, "no profiled process %d", (int)h);
      int ok = r2 && r2->body_case == GPUPROF__MSG__BODY_ERROR &&
               r2->error->code == -ESRCH && strcmp(r2->error->message, want) == 0;
      _exit(ok ? 0 : 1);
    }
    int ust = 0;
    waitpid(u, &ust, 0);
    if (getuid() == 0)
      CHECK(WIFEXITED(ust) && WEXITSTATUS(ust) == 0, "non-admin denied with the exact message");
  }
  /* the silent client gets closed by the daemon (10 s idle rule) */
  CHECK(gpd_frame_recv(s, &in, &n, &fd, 30000) == -ECONNRESET, "silent client closed");
  close(s);
  CHECK(waitpid(d, &st, WNOHANG) == 0, "daemon alive");
  Gpuprof__Msg *p = ps();
  CHECK(p != NULL, "Ps answered after the attacks");
  if (p)
    gpuprof__msg__free_unpacked(p, NULL);
  fclose(gin); /* garbage client exits */
  st = wait_for(g, 10000);
  CHECK(st >= 0, "garbage client exited");
  kill(d, SIGTERM);
  st = wait_for(d, 30000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon SIGTERM exit %d", st);
  CHECK(kmetric(honest_prof, GPD_M_GKER_COUNT) == 500.0, "honest profile exact: %g",
        kmetric(honest_prof, GPD_M_GKER_COUNT));
  CHECK(kmetric(honest_prof, GPD_M_GKER) == 50000.0, "honest GKER");
  CHECK(q1("SELECT count(*) FROM profile WHERE pid=%d AND error LIKE '%%corrupt%%'", (int)g) == 1,
        "hostile profile marked with an error");
  CHECK(q1("SELECT count(*) FROM profile WHERE pid=%d AND error IS NOT NULL", (int)h) == 0,
        "honest profile has no error");
  CHECK(q1("SELECT value FROM metric m JOIN profile p ON p.id=m.profile_id WHERE p.pid=%d AND"
           " m.metric_id=%d AND context_id=%lld", (int)g, GPD_M_GKER_COUNT,
           (long long)ctx_kernel()) == 5.0,
        "hostile: records before the garbage kept");
  CHECK(log_has("corrupt"), "log names the corrupt ring");
  CHECK(log_has("truncated frame"), "log names the truncated frame");
  CHECK(log_has("frame rejected"), "log names the oversized frame");
  CHECK(log_has("bad frame"), "log names the garbage frame");
  CHECK(log_has("no complete frame"), "log names the silent client");
  fclose(gout);
  fclose(hout);
  fclose(hin);
}

static void t_killed(void) {
  setup("killed");
  pid_t d = start_daemon(1);
  FILE *out, *in;
  pid_t c = start_client(&out, &in, "kill", "777", NULL, NULL);
  int st = wait_for(c, 60000);
  CHECK(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "client killed itself %d", st);
  st = wait_for(d, 60000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon exit %d", st);
  uint64_t prof = (uint64_t)q1("SELECT id FROM profile");
  CHECK(kmetric(prof, GPD_M_GKER_COUNT) == 777.0, "all K kept: %g", kmetric(prof, GPD_M_GKER_COUNT));
  CHECK(kmetric(prof, GPD_M_GKER) == 77700.0, "GKER");
  CHECK(q1("SELECT records FROM profile") == 1 + 1 + 3 + 2 * 777, "records");
  fclose(out);
  fclose(in);
}

static void t_restart(void) {
  setup("restart");
  pid_t d = start_daemon(0);
  FILE *out, *in;
  pid_t c = start_client(&out, &in, "handback", "300", "200", "50");
  char line[128] = "";
  CHECK(fgets(line, sizeof line, out) && strncmp(line, "PHASE1", 6) == 0, "phase 1");
  uint64_t prof = strtoull(line + 7, NULL, 10);
  /* wait until the first 300 and the 50 invocations still waiting for
   * their activities are persisted, then kill the daemon */
  int ok = 0;
  for (int i = 0; i < 3000 && !ok; i++) {
    ok = kmetric(prof, GPD_M_GKER_COUNT) == 300.0 &&
         q1("SELECT count(*) FROM pending") == 50;
    if (!ok)
      msleep(10);
  }
  CHECK(ok, "first 300 flushed, 50 pending invocations stored");
  kill(d, SIGKILL);
  int st = wait_for(d, 10000);
  CHECK(st >= 0 && WIFSIGNALED(st), "daemon killed");
  d = start_daemon(1);
  CHECK(q1("SELECT count(*) FROM profile WHERE state='lost'") == 1, "profile marked lost");
  fprintf(in, "go\n");
  fflush(in);
  CHECK(fgets(line, sizeof line, out) && strncmp(line, "PHASE2", 6) == 0, "phase 2");
  CHECK(strtoull(line + 7, NULL, 10) == prof, "same profile id after hand-back");
  st = wait_for(c, 60000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "client exit %d", st);
  st = wait_for(d, 60000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon 2 exit %d", st);
  CHECK(q1("SELECT count(*) FROM profile") == 1, "one profile");
  CHECK(kmetric(prof, GPD_M_GKER_COUNT) == 550.0, "all 550 counted: %g",
        kmetric(prof, GPD_M_GKER_COUNT));
  CHECK(kmetric(prof, GPD_M_GKER) == 55000.0, "GKER");
  CHECK(q1("SELECT count(*) FROM pending") == 0, "no pending rows after the end");
  CHECK(q1("SELECT count(*) FROM context WHERE label='" "<unknown context>" "'") == 0,
        "node ids from before the restart resolved");
  char *state = qs("SELECT state FROM profile");
  CHECK(state && strcmp(state, "exited") == 0, "state");
  free(state);
  fclose(out);
  fclose(in);
}

/* Two monitor threads ([monitor] threads = 2): six processes record at
 * once, each pass splits them between the threads; every profile exact
 * (TSan runs this: the profiles are single-writer per pass). */
static void t_monitors(void) {
  enum { N = 6 };
  setup("monitors");
  FILE *f = fopen(conf, "a"); /* [monitor] is the file's last section */
  fprintf(f, "threads = 2\n");
  fclose(f);
  pid_t d = start_daemon(0); /* exit-when-idle could end before the last client came */
  FILE *out[N], *in[N];
  pid_t c[N];
  for (int i = 0; i < N; i++)
    c[i] = start_client(&out[i], &in[i], "honest", "2000", "hold", NULL);
  for (int i = 0; i < N; i++) { /* all registered, then all record at once */
    char line[128] = "";
    CHECK(fgets(line, sizeof line, out[i]) != NULL && strncmp(line, "READY", 5) == 0,
          "client %d registered", i);
  }
  for (int i = 0; i < N; i++) {
    fputs("go\n", in[i]);
    fflush(in[i]);
  }
  for (int i = 0; i < N; i++) {
    int st = wait_for(c[i], 120000);
    CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d status %d", i, st);
  }
  kill(d, SIGTERM);
  int st = wait_for(d, 120000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon SIGTERM exit %d", st);
  CHECK(q1("SELECT count(*) FROM profile") == N, "%d profiles", N);
  /* 1 module + 1 string + 3 nodes + 1 status + 2000 pairs + 1 copy pair */
  CHECK(q1("SELECT count(*) FROM profile WHERE records = 4008 AND state = 'exited'") == N,
        "every profile exited with 4008 records");
  for (int k = 0; k < N; k++) {
    uint64_t prof = (uint64_t)q1("SELECT id FROM profile ORDER BY id LIMIT 1 OFFSET %d", k);
    CHECK(kmetric(prof, GPD_M_GKER_COUNT) == 2000.0, "profile %llu GKER:COUNT %g",
          (unsigned long long)prof, kmetric(prof, GPD_M_GKER_COUNT));
  }
  CHECK(q1("SELECT sum(value) FROM metric WHERE metric_id=%d", GPD_M_GKER_COUNT) == N * 2000.0,
        "kernel launches nowhere else");
  CHECK(log_has("monitor: 2 threads"), "two monitor threads started");
  CHECK(log_has("helper threads drained") && !log_has("helper threads drained 0 "),
        "the helper drained processes");
  for (int i = 0; i < N; i++) {
    fclose(out[i]);
    fclose(in[i]);
  }
}

/* Top of every process (limit 10, sort metric `metric`): the value of
 * `want` in my_kernel's entry, -1 if none. */
static double top_kernel(unsigned metric, unsigned want) {
  int s = try_connect();
  if (s < 0)
    return -1;
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__TopRequest top = GPUPROF__TOP_REQUEST__INIT;
  top.metric = metric;
  m.body_case = GPUPROF__MSG__BODY_TOP_REQ;
  m.top_req = &top;
  Gpuprof__Msg *rep = request(s, &m);
  close(s);
  double v = -1;
  for (size_t i = 0; rep && rep->body_case == GPUPROF__MSG__BODY_TOP && i < rep->top->n_entries; i++)
    if (strcmp(rep->top->entries[i]->label, "my_kernel(float*, int)") == 0)
      for (size_t k = 0; k < rep->top->entries[i]->n_metrics; k++)
        if (rep->top->entries[i]->metrics[k]->id == want)
          v = rep->top->entries[i]->metrics[k]->value;
  if (rep)
    gpuprof__msg__free_unpacked(rep, NULL);
  return v;
}

/* 64 processes register at once (each client waits 10 s for its
 * HelloReply, the shim's deadline, and exits 2 without one) while two
 * others record 1000 pairs each (the writer and the two tracing threads
 * write) and, until all 66 are registered, the monitor keeps the daemon
 * lock 300 ms longer in each pass and starts the next at once
 * (GPUPROF_TEST_MONITOR_HOLD=300,66: as while 64 processes load 10 K
 * contexts each, when a pass that finds a full batch does not sleep and
 * takes the lock again at once; holds of 140-270 ms on the 2-core VM at
 * load 2).  Hellos are answered one after the other on the
 * loop thread: a Hello that waited for the lock (it used to, twice) lost
 * to the monitor taking it again, and the last of 64 missed its deadline. */
static void t_register64(void) {
  enum { BUSY = 2, N = 64 };
  setup("register64");
  setenv("GPUPROF_TEST_MONITOR_HOLD", "300,66", 1); /* BUSY + N */
  pid_t d = start_daemon(0);
  unsetenv("GPUPROF_TEST_MONITOR_HOLD");
  FILE *out[BUSY + N], *in[BUSY + N];
  pid_t c[BUSY + N];
  for (int i = 0; i < BUSY; i++)
    c[i] = start_client(&out[i], &in[i], "honest", "1000", NULL, NULL);
  for (int i = BUSY; i < BUSY + N; i++)
    c[i] = start_client(&out[i], &in[i], "honest", "100", NULL, NULL);
  for (int i = 0; i < BUSY + N; i++) {
    int st = wait_for(c[i], 120000);
    CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "client %d status %d (2: no HelloReply within its 10 s, or refused)", i, st);
  }
  /* Top over the profiles, asked twice unchanged (the second from the
   * kept sums), then after one of them (registered, held) recorded, and
   * with another sort metric: exact launch counts each time (100 ns per
   * activity: GPUOP = 100 x) */
  FILE *lo, *li;
  pid_t late = start_client(&lo, &li, "honest", "50", "hold", NULL);
  char line[128] = "";
  CHECK(fgets(line, sizeof line, lo) != NULL && strncmp(line, "READY", 5) == 0, "late client registered");
  double launches = BUSY * 1000.0 + N * 100.0;
  for (int t = 0; t < 600 && top_kernel(GPD_M_GPUOP, GPD_M_GKER_COUNT) != launches; t++)
    msleep(100); /* the last EOFs' drains */
  CHECK(top_kernel(GPD_M_GPUOP, GPD_M_GKER_COUNT) == launches, "Top: %g launches",
        top_kernel(GPD_M_GPUOP, GPD_M_GKER_COUNT));
  CHECK(top_kernel(GPD_M_GPUOP, GPD_M_GPUOP) == 100.0 * launches, "Top again: GPUOP %g",
        top_kernel(GPD_M_GPUOP, GPD_M_GPUOP));
  fputs("go\n", li);
  fflush(li);
  int lst = wait_for(late, 120000);
  CHECK(lst >= 0 && WIFEXITED(lst) && WEXITSTATUS(lst) == 0, "late client status %d", lst);
  for (int t = 0; t < 600 && top_kernel(GPD_M_GPUOP, GPD_M_GKER_COUNT) != launches + 50; t++)
    msleep(100);
  CHECK(top_kernel(GPD_M_GPUOP, GPD_M_GKER_COUNT) == launches + 50,
        "Top after the held process recorded: %g launches",
        top_kernel(GPD_M_GPUOP, GPD_M_GKER_COUNT));
  CHECK(top_kernel(GPD_M_GKER_COUNT, GPD_M_GKER_COUNT) == launches + 50,
        "Top sorted by GKER:COUNT: %g", top_kernel(GPD_M_GKER_COUNT, GPD_M_GKER_COUNT));
  fclose(lo);
  fclose(li);
  kill(d, SIGTERM);
  int st = wait_for(d, 120000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon SIGTERM exit %d", st);
  CHECK(q1("SELECT count(*) FROM profile") == BUSY + N + 1, "%d profiles: %g", BUSY + N + 1,
        q1("SELECT count(*) FROM profile"));
  CHECK(q1("SELECT count(DISTINCT id) FROM profile") == BUSY + N + 1, "profile ids unique");
  /* 1 module + 1 string + 3 nodes + 1 status + the pairs + 1 copy pair */
  CHECK(q1("SELECT count(*) FROM profile WHERE records = 2008 AND state = 'exited'") == BUSY,
        "the busy profiles exited with 2008 records");
  CHECK(q1("SELECT count(*) FROM profile WHERE records = 208 AND state = 'exited'") == N,
        "every registering profile exited with 208 records");
  CHECK(q1("SELECT sum(value) FROM metric WHERE metric_id=%d", GPD_M_GKER_COUNT) ==
            BUSY * 1000.0 + N * 100.0 + 50,
        "every launch counted once: %g",
        q1("SELECT sum(value) FROM metric WHERE metric_id=%d", GPD_M_GKER_COUNT));
  CHECK(q1("SELECT count(*) FROM trace_event") > 0, "the tracing threads wrote");
  for (int i = 0; i < BUSY + N; i++) {
    fclose(out[i]);
    fclose(in[i]);
  }
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  signal(SIGPIPE, SIG_IGN);
  atexit(kids_reap);
  if (strcmp(argv[1], "integration") == 0)
    t_integration();
  else if (strcmp(argv[1], "hostile") == 0)
    t_hostile();
  else if (strcmp(argv[1], "killed") == 0)
    t_killed();
  else if (strcmp(argv[1], "restart") == 0)
    t_restart();
  else if (strcmp(argv[1], "monitors") == 0)
    t_monitors();
  else if (strcmp(argv[1], "register64") == 0)
    t_register64();
  else if (strcmp(argv[1], "graphreplay") == 0)
    t_graph();
  else
    return 2;
  dump_log();
  fprintf(stderr, "%s: %s (%s)\n", argv[1], failures ? "FAILED" : "ok", dir);
  if (!failures) { /* keep the evidence only when something failed */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) {
    }
  }
  return failures ? 1 : 0;
}
