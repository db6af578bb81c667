/* trace.c - `gpuprof trace` (docs/TRACE.md, docs/CLI.md): a saved
 * profile's traces, or a live window asked of gpuprofd (the in-memory
 * trace: xtrace.c), written as a Perfetto protobuf trace or Chrome
 * trace-event JSON.
 */
#include "trace.h"
#include "xlayout.h"
#include "xwrite.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/error.h"
#include "gpuprof/outfile.h"
#include "gpuprof/record.h"
#include "store-read.h"

static gpd_cli_cmd_t trace_cmd = {
    .head =
        "usage: gpuprof trace -o OUT [--format perfetto|chrome] [--launches] [--pid N] [--from T] [--to T] FILE.gpdb\n"
        "       gpuprof trace -o OUT [--format perfetto|chrome] [--launches] (--pid N | --job J) --duration D\n"
        "  Write the GPU timeline (a track per GPU stream and per CPU thread, a flow from each\n"
        "  launch to its kernel, call paths as interned call stacks, GPU idle intervals with\n"
        "  their blame) as a Perfetto trace (ui.perfetto.dev) or compact Chrome trace-event\n"
        "  JSON (each kernel's stack is its launch's call path; launches only with --launches);\n"
        "  gzip-compressed when OUT ends in .gz (both viewers and speedscope read it so).\n"
        "  Offline: T is a time after the trace's first event (s, ms, us or ns; default s).\n"
        "  Live: switch tracing on in process N or job J for the next D (e.g. 10s; at most 1 h;\n"
        "  CUDA processes running detached or duty-cycled attach CUPTI for the window), then\n"
        "  write the window's events as gpuprofd stored them.\n",
    .opts = (const gpd_cli_opt_t[]){
        {"output", required_argument, 'o', NULL, NULL},
        {"format", required_argument, 'F', "--format",
         "perfetto (default; also chosen by a .pftrace/.perfetto-trace name) or chrome\n"
         "(also chosen by a .json or .json.gz name)"},
        {"launches", no_argument, 'L', "--launches",
         "Chrome JSON: also each launch as a slice on its CPU thread with a flow to\n"
         "its kernel (about 105 B more per launch, ~15 B gzip-compressed; a million\n"
         "are too many for speedscope)"},
        {"pid", required_argument, 'p', NULL, NULL},
        {"job", required_argument, 'j', NULL, NULL},
        {"from", required_argument, 'f', NULL, NULL},
        {"to", required_argument, 't', NULL, NULL},
        {"duration", required_argument, 'd', NULL, NULL},
        {"socket", required_argument, 's', NULL, NULL},
        {0}},
    .shorts = "oFpjftds",
    .col = 12};

/* Longest live window: the daemon's bound on a control window
 * (daemon/control.h GPD_CONTROL_MAX_MS). */
#define GPD_TRACE_MAX_WINDOW_NS 3600000000000ull

/* "1.5", "1.5s", "200ms", "10us", "5ns" -> ns; -1 on error */
static int64_t parse_time(const char *s) {
  char *e;
  errno = 0;
  double v = strtod(s, &e);
  if (e == s || errno || v < 0)
    return -1;
  double mul = 1e9;
  if (!strcmp(e, "ms"))
    mul = 1e6;
  else if (!strcmp(e, "us"))
    mul = 1e3;
  else if (!strcmp(e, "ns"))
    mul = 1;
  else if (*e && strcmp(e, "s"))
    return -1;
  return (int64_t)(v * mul);
}

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

/* How long a live window's activities may take to arrive after its end
 * (a CUDA process flushes CUPTI's buffers at the window's end; OpenCL
 * and Level Zero report a kernel when it completes). */
#define LIVE_WAIT_NS 10000000000ull
/* Missing activities that stay missing this long (after the tracing
 * threads committed past the window) are taken as never coming (a
 * launch whose API call failed has none). */
#define LIVE_STABLE_NS 2000000000ull

/* How far before a live window its launches are asked for. */
#define LIVE_BEFORE_NS 1000000000ull

/* Rows per live trace reply: a window is fetched in time slices of at
 * most this many events + launches, so that neither gpuprofd nor a reply
 * holds a whole busy window (a 60 s window of 20 000 kernels/s is 2.4 M
 * rows).  GPUPROF_TRACE_PAGE_ROWS sets it lower (tests use a few rows). */
#define LIVE_PAGE_ROWS 250000u
/* The shortest slice a truncated page is split into (ns); a slice that
 * short and still truncated is asked once more with gpuprofd's own bound
 * (0: a million rows). */
#define LIVE_MIN_SLICE_NS 1000000ull

static uint32_t page_rows(void) {
  const char *e = getenv("GPUPROF_TRACE_PAGE_ROWS");
  long v = e ? gpd_cli_parse_uint(e) : 0;
  return v > 0 && v < (long)LIVE_PAGE_ROWS ? (uint32_t)v : LIVE_PAGE_ROWS;
}

/* One Trace request for [from, to] with at most `max` rows.  0 (reply in
 * *rep) or an exit code (said on stderr). */
static int trace_call(const char *sock, int pid, const char *job, uint64_t from, uint64_t to,
                      uint32_t max, Gpuprof__Msg **rep) {
  Gpuprof__TraceRequest tr = GPUPROF__TRACE_REQUEST__INIT;
  Gpuprof__Msg req = GPUPROF__MSG__INIT;
  tr.pid = pid;
  tr.job_id = (char *)(job ? job : "");
  tr.from_ns = from;
  tr.to_ns = to;
  tr.max_events = max;
  req.body_case = GPUPROF__MSG__BODY_TRACE_REQ;
  req.trace_req = &tr;
  int r = gpd_live_call(sock, &req, rep);
  if (r)
    return r;
  if ((*rep)->body_case != GPUPROF__MSG__BODY_TRACE) {
    fprintf(stderr, "gpuprof: gpuprofd answered with an unexpected message (case %d)\n",
            (int)(*rep)->body_case);
    gpuprof__msg__free_unpacked(*rep, NULL);
    *rep = NULL;
    return GPD_EXIT_FAIL;
  }
  return 0;
}

/* A time slice [a, b] (ns) asked with at most max rows (0: gpuprofd's
 * own bound). */
typedef struct lslice_s {
  uint64_t a, b;
  uint32_t max;
} lslice_t;

/* The rows gpuprofd stored in [from, upto] as pages (xlayout.h) of
 * at most page_rows() rows: a truncated page is asked again as two halves
 * of its time range (events and launches are selected by their start, so
 * the slices partition both exactly), the earlier half first, so that
 * the pages come in time order.  The first pass after lpages_reset finds
 * the slices; a later pass (the write after the scan) asks for the same
 * ones again.  One page is held at a time. */
typedef struct lpages_s {
  gpd_xpages_t src;
  const char *sock, *job;
  int pid;
  uint32_t page;       /* rows per page */
  uint64_t from, upto; /* what the pass covers */
  lslice_t st[128];    /* first pass: slices still to ask, the earliest last */
  int n, started, replay;
  lslice_t *done;      /* the slices answered by the first pass, in order */
  size_t ndone, capdone, iplay;
  gpd_xtrace_t pg;     /* the page */
  gpd_xtrace_t meta;   /* the first pass's latest tree (the live tree only
                          grows), dropped / refused / truncated */
  uint64_t flushed;    /* the tracing threads' commit time of the last reply */
  int parts, rc;       /* pages of the first pass; exit code of a failed request */
} lpages_t;

static int lp_next(gpd_xpages_t *src, gpd_xtrace_t **page, uint64_t *hi) {
  lpages_t *p = (lpages_t *)src;
  for (;;) {
    lslice_t sl;
    if (p->replay ? p->iplay == p->ndone : p->n == 0)
      return 0;
    sl = p->replay ? p->done[p->iplay++] : p->st[--p->n];
    Gpuprof__Msg *rep = NULL;
    if ((p->rc = trace_call(p->sock, p->pid, p->job, sl.a, sl.b, sl.max, &rep)) != 0)
      return -EIO;
    const Gpuprof__TraceReply *t = rep->trace;
    p->flushed = t->flushed_ns;
    if (t->truncated && sl.max != 0 && (p->replay || p->n + 2 <= 128)) {
      gpuprof__msg__free_unpacked(rep, NULL);
      if (p->replay) /* more rows than the first pass found: scan again */
        return -EAGAIN;
      if (sl.b - sl.a > LIVE_MIN_SLICE_NS) { /* two halves, the earlier asked next */
        uint64_t mid = sl.a + (sl.b - sl.a) / 2;
        p->st[p->n++] = (lslice_t){mid + 1, sl.b, p->page};
        p->st[p->n++] = (lslice_t){sl.a, mid, p->page};
      } else {
        p->st[p->n++] = (lslice_t){sl.a, sl.b, 0};
      }
      continue;
    }
    p->pg.nev = p->pg.nla = p->pg.ncs = 0;
    p->pg.truncated = 0;
    int err = gpd__xtrace_add_reply(&p->pg, t, 1);
    gpuprof__msg__free_unpacked(rep, NULL);
    if (err == 0 && !p->replay)
      err = gpd_xtrace_grow((void **)&p->done, p->ndone, &p->capdone, sizeof *p->done);
    if (err < 0)
      return err;
    if (!p->replay) {
      gpd_tree_t tree = p->meta.tree;
      p->meta.tree = p->pg.tree;
      p->pg.tree = tree;
      p->meta.dropped = p->pg.dropped;
      p->meta.refused = p->pg.refused;
      p->meta.truncated |= p->pg.truncated;
      p->done[p->ndone++] = sl;
      p->parts++;
    }
    *page = &p->pg;
    *hi = sl.b;
    return 1;
  }
}

static int lp_rewind(gpd_xpages_t *src) {
  lpages_t *p = (lpages_t *)src;
  if (p->started) {
    p->replay = 1;
    p->iplay = 0;
  }
  p->started = 1;
  return 0;
}

/* A first pass over [from, upto] next. */
static void lp_reset(lpages_t *p, uint64_t from, uint64_t upto) {
  p->from = from;
  p->upto = upto;
  p->st[0] = (lslice_t){from, upto, p->page};
  p->n = 1;
  p->started = p->replay = 0;
  p->ndone = p->iplay = 0;
  p->parts = 0;
  p->meta.truncated = 0;
}

static void lp_init(lpages_t *p, const char *sock, int pid, const char *job) {
  memset(p, 0, sizeof *p);
  p->src = (gpd_xpages_t){lp_next, lp_rewind};
  p->sock = sock;
  p->pid = pid;
  p->job = job;
  p->page = page_rows();
  gpd_xtrace_init(&p->pg);
  gpd_xtrace_init(&p->meta);
}

static void lp_free(lpages_t *p) {
  gpd_xtrace_free(&p->pg);
  gpd_xtrace_free(&p->meta);
  free(p->done);
}

/* Scan (gpd__xlayout_scan) what gpuprofd stored in [from0, upto], l set
 * up for the window [from, to].  0 or an exit code (said on stderr). */
static int live_scan(lpages_t *p, gpd_xlayout_t *l, uint64_t from0, uint64_t upto, uint64_t from,
                     uint64_t to) {
  lp_reset(p, from0, upto);
  gpd__xlayout_free(l);
  gpd__xlayout_open(l, &p->meta, from, to);
  int err = gpd__xlayout_scan(l, &p->src);
  if (err < 0 && p->rc)
    return p->rc;
  if (err < 0) {
    fprintf(stderr, "gpuprof: %s\n", gpd_strerror(err));
    return GPD_EXIT_FAIL;
  }
  if (p->parts > 1)
    fprintf(stderr, "gpuprof: %zu events and %zu launches read in %d parts of at most %u rows\n",
            l->nev, l->nla, p->parts, p->page);
  return 0;
}

/* Ask the daemon for everything from `from` on until its tracing threads
 * committed past `to` and every launch in [from, to] has its activities
 * (or LIVE_WAIT_NS passed, or the missing ones stopped arriving), each
 * time as a scan of l (the window [from, to] kept: its launches, the
 * activities of those launches whenever they ran, and activities of no
 * known launch that started in it); l and p are then ready to write.  0
 * or an exit code (said on stderr). */
static int live_trace(lpages_t *p, gpd_xlayout_t *l, uint64_t from, uint64_t to) {
  /* from a little earlier: the launches just before the window are known,
   * so that their activities that start in it are left out */
  uint64_t from0 = from > LIVE_BEFORE_NS ? from - LIVE_BEFORE_NS : 0;
  uint64_t deadline = gpd_clock_ns() + LIVE_WAIT_NS, changed = 0, flushed = 0;
  long missing = -1;
  int rc;
  /* first until the tracing threads committed past the window: one-row
   * requests, so that the wait costs neither side a whole window */
  for (;;) {
    Gpuprof__Msg *rep = NULL;
    if ((rc = trace_call(p->sock, p->pid, p->job, to, to, 1, &rep)) != 0)
      return rc;
    flushed = rep->trace->flushed_ns;
    gpuprof__msg__free_unpacked(rep, NULL);
    if (flushed >= to || gpd_clock_ns() > deadline)
      break;
    sleep_ns(100000000ull);
  }
  for (;;) {
    /* activities of the window's launches may start after it */
    if ((rc = live_scan(p, l, from0, gpd_clock_ns(), from, to)) != 0)
      return rc;
    long m = l->missing;
    uint64_t now = gpd_clock_ns();
    flushed = p->flushed;
    if (m != missing || flushed < to) {
      missing = m;
      changed = now;
    }
    if (flushed >= to && (m == 0 || now - changed >= LIVE_STABLE_NS))
      break;
    if (now > deadline) {
      if (flushed < to)
        fprintf(stderr, "gpuprof: gpuprofd's tracing threads had written only up to %.3f s before "
                        "the window's end; the trace may miss its last events\n",
                (double)(to - flushed) / 1e9);
      break;
    }
    sleep_ns(500000000ull);
  }
  if (p->meta.truncated)
    fprintf(stderr, "gpuprof: a millisecond of the window held more rows than gpuprofd answers at "
                    "once: its later rows are left out\n");
  if (missing > 0)
    fprintf(stderr, "gpuprof: %ld launch%s of the window had no GPU activity %.0f s after it "
                    "(written without)\n",
            missing, missing == 1 ? "" : "es", (double)(gpd_clock_ns() - to) / 1e9);
  return 0;
}

/* A live window (docs/TRACE.md, "Live windows"): the TRACE control to the
 * selected processes first (a CUDA process running detached or
 * duty-cycled attaches CUPTI for the window; OpenCL and Level Zero, always
 * traced, answer with a no-op ack: for them the window is only the time
 * filter), then a wait for the window's end that keeps asking gpuprofd
 * (`ps`, every 250 ms: a daemon gone mid-window is an error at once, not
 * after the window), then the window's events.  A process that did not
 * switch tracing on is said on stderr and traced with what it traces
 * anyway.  0 or an exit code (said on stderr; then nothing is written). */
static int live_window(lpages_t *p, gpd_xlayout_t *l, uint64_t dur) {
  const char *sock = p->sock, *job = p->job;
  int pid = p->pid;
  Gpuprof__Control ctl = GPUPROF__CONTROL__INIT;
  Gpuprof__Msg *reply = NULL;
  char what[64], who[96];
  ctl.kind = GPUPROF__CONTROL_KIND__CONTROL_TRACE;
  ctl.enable = 1;
  ctl.duration_ms = (uint32_t)((dur + 999999u) / 1000000u);
  snprintf(what, sizeof what, "tracing on for %.3g s", (double)dur / 1e9);
  if (pid)
    snprintf(who, sizeof who, "process %d", pid);
  else
    snprintf(who, sizeof who, "job %s", job);
  uint64_t from = gpd_clock_ns(), to = from + dur;
  int rc = gpd_live_control(sock, pid, job, &ctl, what, stderr, &reply);
  if (reply == NULL)
    return rc ? rc : GPD_EXIT_FAIL; /* refused (access, no such process) or no daemon: said */
  if (rc)
    fprintf(stderr, "gpuprof: a process that did not switch tracing on is traced with what it "
                    "traces anyway (OpenCL, Level Zero, CUDA in full mode: everything)\n");
  fprintf(stderr, "gpuprof: tracing %s for %.3g s\n", who, (double)dur / 1e9);
  uint64_t deadline = to + 10000000000ull;
  for (;;) {
    int on = gpd_live_control_on(sock, reply, ctl.kind);
    uint64_t now = gpd_clock_ns();
    if (on < 0) {
      fprintf(stderr, "gpuprof: gpuprofd stopped answering %.3f s into the %.3f s window (stopped "
                      "or restarted?); no trace written\n",
              (double)(now - from) / 1e9, (double)dur / 1e9);
      rc = GPD_EXIT_FAIL;
      goto out;
    }
    if (now >= to && on == 0)
      break; /* every window has ended (the shims said so) */
    if (now >= deadline) {
      fprintf(stderr, "gpuprof: a process had not ended its window 10 s after the window's end; "
                      "writing what gpuprofd stored\n");
      break;
    }
    sleep_ns(now < to && to - now < 250000000ull ? to - now : 250000000ull);
  }
  if ((rc = live_trace(p, l, from, to)) != 0)
    fprintf(stderr, "gpuprof: no trace written\n");
out:
  gpuprof__msg__free_unpacked(reply, NULL);
  return rc;
}

/* Write the pages of src laid out by l (scanned) to path through a
 * private temporary file beside it, renamed over path once complete
 * (gpuprof/outfile.h): a failure leaves no partial trace, and a link or
 * non-regular file at path is refused.  chrome: 0 Perfetto, 1 Chrome
 * JSON, 2 Chrome JSON with launches; gz: gzip-compressed.
 * 0 or -errno with the message in err (-EAGAIN: the rows changed since
 * the scan). */
static int write_trace(const char *path, gpd_xlayout_t *l, gpd_xpages_t *src, int chrome, int gz,
                       char *err, size_t errn) {
  gpd_outfile_t of;
  int r = gpd_outfile_open(&of, path, err, errn);
  if (r < 0) return r;
  FILE *f = gz ? gpd__xwrite_gzip(of.f) : of.f;
  if (f == NULL) {
    snprintf(err, errn, "cannot write %s: %s", path, gpd_strerror(-ENOMEM));
    gpd_outfile_abort(&of);
    return -ENOMEM;
  }
  r = chrome ? gpd__xwrite_chrome_pages(f, l, src, chrome == 2) : gpd__xwrite_perfetto_pages(f, l, src);
  if (gz && fclose(f) == EOF && r == 0)
    r = -EIO;
  if (r < 0) {
    snprintf(err, errn, "cannot write %s: %s", path, gpd_strerror(r));
    gpd_outfile_abort(&of);
    return r;
  }
  return gpd_outfile_commit(&of, err, errn);
}

static int ends_with(const char *s, const char *sfx) {
  size_t a = strlen(s), b = strlen(sfx);
  return a >= b && !strcmp(s + a - b, sfx);
}

int gpd_cmd_trace(int argc, char **argv) {
  const char *trace_usage = gpd_cli_help(&trace_cmd);
  const char *out = NULL, *fmt = NULL, *job = NULL, *sock = NULL;
  int pid = 0, c, rc, launches = 0;
  int64_t from = -1, to = -1, dur = -1;
  long v;
  optind = 1;
  while ((c = gpd_cli_opt_next(argc, argv, &trace_cmd, &rc)) > 0) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'F': fmt = optarg; break;
    case 'p':
      if ((v = gpd_cli_parse_uint(optarg)) <= 0)
        return gpd_cli_usage(trace_usage, "bad --pid '%s'", optarg);
      pid = (int)v;
      break;
    case 'j': job = optarg; break;
    case 'f':
      if ((from = parse_time(optarg)) < 0)
        return gpd_cli_usage(trace_usage, "bad --from '%s'", optarg);
      break;
    case 't':
      if ((to = parse_time(optarg)) < 0)
        return gpd_cli_usage(trace_usage, "bad --to '%s'", optarg);
      break;
    case 'd':
      if ((dur = parse_time(optarg)) <= 0)
        return gpd_cli_usage(trace_usage, "bad --duration '%s'", optarg);
      break;
    case 's': sock = optarg; break;
    case 'L': launches = 1; break;
    }
  }
  if (c < 0) return rc;
  if (out == NULL)
    return gpd_cli_usage(trace_usage, "-o OUT is needed");
  int chrome = 0;
  if (fmt && !strcmp(fmt, "chrome"))
    chrome = 1;
  else if (fmt && strcmp(fmt, "perfetto"))
    return gpd_cli_usage(trace_usage, "unknown --format '%s' (perfetto or chrome)", fmt);
  else if (!fmt && (ends_with(out, ".json") || ends_with(out, ".json.gz")))
    chrome = 1;
  if (launches && !chrome)
    return gpd_cli_usage(trace_usage, "--launches is for --format chrome (Perfetto traces always have them)");
  chrome += chrome && launches;
  int live = optind >= argc;
  if (live && dur < 0)
    return gpd_cli_usage(trace_usage, "give a FILE.gpdb, or --duration D for a live trace");
  if (!live && dur >= 0)
    return gpd_cli_usage(trace_usage, "--duration is for a live trace (no FILE)");
  if (live && pid == 0 && job == NULL)
    return gpd_cli_usage(trace_usage, "a live trace needs --pid N or --job J");
  if (from >= 0 && to >= 0 && to < from)
    return gpd_cli_usage(trace_usage, "--to is before --from");
  if (optind + 1 < argc)
    return gpd_cli_usage(trace_usage, "one profile file at a time");
  if (dur > (int64_t)GPD_TRACE_MAX_WINDOW_NS)
    return gpd_cli_usage(trace_usage, "--duration: at most 1 h");

  gpd_xtrace_t x;
  gpd_xlayout_t l;
  gpd_xpages_one_t one;
  lpages_t lp;
  gpd_xpages_t *src = &one.src;
  const gpd_xtrace_t *meta = &x; /* tree, dropped, refused, truncated */
  gpd_xtrace_init(&x);
  gpd__xlayout_open(&l, &x, 0, 0);
  lp_init(&lp, gpd_live_socket(sock), pid, job);
  char err[1024];
  rc = GPD_EXIT_OK;
  uint64_t t0 = 0;
  if (live) {
    if ((rc = live_window(&lp, &l, (uint64_t)dur)) != 0)
      goto out;
    src = &lp.src;
    meta = &lp.meta;
  } else {
    if (gpd_xtrace_load(&x, argv[optind], pid, err, sizeof err) < 0) {
      fprintf(stderr, "gpuprof: %s\n", err);
      rc = GPD_EXIT_FAIL;
      goto out;
    }
    t0 = gpd_xtrace_t0(&x);
    if (from >= 0 || to >= 0)
      gpd_xtrace_window(&x, from >= 0 ? t0 + (uint64_t)from : 0, to >= 0 ? t0 + (uint64_t)to : 0);
    int e = gpd__xlayout_whole(&l, &one, &x);
    if (e < 0) {
      fprintf(stderr, "gpuprof: %s\n", gpd_strerror(e));
      rc = GPD_EXIT_FAIL;
      goto out;
    }
  }
  if (l.nev == 0 && l.nla == 0)
    fprintf(stderr, "gpuprof: no trace events %s; writing an empty trace\n",
            live ? "in the window (no GPU activity of the selection, or tracing is off in gpuprofd)"
                 : (from >= 0 || to >= 0) ? "in the window" : "in the profile");
  if (meta->dropped || meta->refused)
    fprintf(stderr, "gpuprof: the trace is incomplete: %llu events dropped (queue full), %llu "
                    "refused (per-profile bound or the owner's share of a full store)\n",
            (unsigned long long)meta->dropped, (unsigned long long)meta->refused);
  if (meta->truncated)
    fprintf(stderr, "gpuprof: gpuprofd sent the first events of the window only (reply bound)\n");
  char werr[600];
  int r;
  /* rows that arrived between the scan and the write (late activities)
   * may need a track the scan did not see: scan again */
  for (int k = 0; (r = write_trace(out, &l, src, chrome, ends_with(out, ".gz"), werr, sizeof werr)) == -EAGAIN &&
                  live && k < 3; k++)
    if ((rc = live_scan(&lp, &l, lp.from, lp.upto, l.from, l.to)) != 0)
      goto out;
  if (r < 0) {
    fprintf(stderr, "gpuprof: %s (nothing written)\n", werr);
    rc = GPD_EXIT_FAIL;
    goto out;
  }
  if (live && lp.parts > 1)
    fprintf(stderr, "gpuprof: written page by page: at most %zu rows held at once, %zu launches and "
                    "open slices carried between pages\n",
            l.max_rows, l.max_pending);
  fprintf(stderr, "gpuprof: wrote %s (%s): %zu GPU events, %zu launches, %zu CPU samples\n", out,
          chrome ? "Chrome JSON" : "Perfetto", l.nev, l.nla, l.ncs);
out:
  gpd__xlayout_free(&l);
  lp_free(&lp);
  gpd_xtrace_free(&x);
  return rc;
}
