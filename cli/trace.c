/* trace.c - `gpuprof trace` (docs/TRACE.md, docs/CLI.md): a saved
 * profile's traces, or a live window asked of gpuprofd (the in-memory
 * trace: xtrace.c), written as a Perfetto protobuf trace or Chrome
 * trace-event JSON.
 */
#include "trace.h"
#include "trace-layout.h"
#include "trace-write.h"

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

static const char trace_usage[] =
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
    "  write the window's events as gpuprofd stored them.\n"
    "  --format  perfetto (default; also chosen by a .pftrace/.perfetto-trace name) or chrome\n"
    "            (also chosen by a .json or .json.gz name)\n"
    "  --launches  Chrome JSON: also each launch as a slice on its CPU thread with a flow to\n"
    "            its kernel (about 105 B more per launch, ~15 B gzip-compressed; a million\n"
    "            are too many for speedscope)\n";

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

/* Launches of x in [from, to] (ns) that have no GPU activity in x yet.
 * -ENOMEM when the index cannot be made. */
static long window_missing(const gpd_xtrace_t *x, uint64_t from, uint64_t to) {
  gpd_xcorrix_t ix;
  uint8_t *has = calloc(x->nla + 1, 1);
  if (has == NULL || gpd__xcorrix_build(&ix, x) < 0) {
    free(has);
    return -ENOMEM;
  }
  for (size_t i = 0; i < x->nev; i++) {
    long l = gpd__xcorrix_get(&ix, x, x->ev[i].profile, x->ev[i].corr);
    if (l >= 0)
      has[l] = 1;
  }
  long missing = 0;
  for (size_t i = 0; i < x->nla; i++)
    missing += x->la[i].ts >= from && x->la[i].ts <= to && !has[i];
  free(ix.slot);
  free(has);
  return missing;
}

/* Keep the window [from, to] of x: its launches, the activities of those
 * launches (whenever they ran), and activities of no known launch that
 * started in it.  0 or -ENOMEM. */
static int window_keep(gpd_xtrace_t *x, uint64_t from, uint64_t to) {
  gpd_xcorrix_t ix;
  if (gpd__xcorrix_build(&ix, x) < 0)
    return -ENOMEM;
  size_t w = 0;
  for (size_t i = 0; i < x->nev; i++) {
    long l = gpd__xcorrix_get(&ix, x, x->ev[i].profile, x->ev[i].corr);
    uint64_t t = l >= 0 ? x->la[l].ts : x->ev[i].start;
    if (t >= from && t <= to)
      x->ev[w++] = x->ev[i];
  }
  x->nev = w;
  free(ix.slot);
  w = 0;
  for (size_t i = 0; i < x->nla; i++)
    if (x->la[i].ts >= from && x->la[i].ts <= to)
      x->la[w++] = x->la[i];
  x->nla = w;
  return 0;
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

/* Everything gpuprofd stored in [from, to] into x (emptied first), in
 * pages of at most LIVE_PAGE_ROWS rows: a truncated page is asked again
 * as two halves of its time range (events and launches are selected by
 * their start, so the slices partition both exactly).  *flushed: the
 * tracing threads' commit time of the last reply.  0 or an exit code. */
static int fetch_pages(const char *sock, int pid, const char *job, uint64_t from, uint64_t to,
                       gpd_xtrace_t *x, uint64_t *flushed) {
  struct slice { uint64_t a, b; uint32_t max; } st[128];
  int n = 0, rc = 0, parts = 0;
  uint32_t page = page_rows();
  gpd_xtrace_free(x);
  gpd_xtrace_init(x);
  st[n++] = (struct slice){from, to, page};
  while (n > 0 && rc == 0) {
    uint64_t a = st[n - 1].a, b = st[n - 1].b;
    uint32_t max = st[--n].max;
    Gpuprof__Msg *rep = NULL;
    if ((rc = trace_call(sock, pid, job, a, b, max, &rep)) != 0)
      break;
    const Gpuprof__TraceReply *t = rep->trace;
    *flushed = t->flushed_ns;
    if (t->truncated && max != 0 && n + 2 <= 128) {
      if (b - a > LIVE_MIN_SLICE_NS) { /* two halves, the earlier asked next */
        uint64_t mid = a + (b - a) / 2;
        st[n++] = (struct slice){mid + 1, b, page};
        st[n++] = (struct slice){a, mid, page};
      } else {
        st[n++] = (struct slice){a, b, 0};
      }
      gpuprof__msg__free_unpacked(rep, NULL);
      continue;
    }
    int err = gpd__xtrace_add_reply(x, t, 0);
    gpuprof__msg__free_unpacked(rep, NULL);
    parts++;
    if (err < 0) {
      fprintf(stderr, "gpuprof: %s\n", gpd_strerror(err));
      rc = GPD_EXIT_FAIL;
    }
  }
  gpd__xtrace_sort(x);
  if (rc == 0 && parts > 1)
    fprintf(stderr, "gpuprof: %zu events and %zu launches read in %d parts of at most %u rows\n",
            x->nev, x->nla, parts, page);
  return rc;
}

/* Ask the daemon for everything from `from` on until its tracing threads
 * committed past `to` and every launch in [from, to] has its activities
 * (or LIVE_WAIT_NS passed, or the missing ones stopped arriving); then
 * keep the window (window_keep).  0 or an exit code (said on stderr). */
static int live_trace(const char *sock, int pid, const char *job, uint64_t from, uint64_t to,
                      gpd_xtrace_t *x) {
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
    if ((rc = trace_call(sock, pid, job, to, to, 1, &rep)) != 0)
      return rc;
    flushed = rep->trace->flushed_ns;
    gpuprof__msg__free_unpacked(rep, NULL);
    if (flushed >= to || gpd_clock_ns() > deadline)
      break;
    sleep_ns(100000000ull);
  }
  for (;;) {
    /* activities of the window's launches may start after it */
    if ((rc = fetch_pages(sock, pid, job, from0, gpd_clock_ns(), x, &flushed)) != 0)
      return rc;
    long m = window_missing(x, from, to);
    uint64_t now = gpd_clock_ns();
    if (m < 0) {
      fprintf(stderr, "gpuprof: %s\n", gpd_strerror((int)m));
      return GPD_EXIT_FAIL;
    }
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
  if (x->truncated)
    fprintf(stderr, "gpuprof: a millisecond of the window held more rows than gpuprofd answers at "
                    "once: its later rows are left out\n");
  if (missing > 0)
    fprintf(stderr, "gpuprof: %ld launch%s of the window had no GPU activity %.0f s after it "
                    "(written without)\n",
            missing, missing == 1 ? "" : "es", (double)(gpd_clock_ns() - to) / 1e9);
  if (window_keep(x, from, to) < 0) {
    fprintf(stderr, "gpuprof: %s\n", gpd_strerror(-ENOMEM));
    return GPD_EXIT_FAIL;
  }
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
static int live_window(const char *sock, int pid, const char *job, uint64_t dur, gpd_xtrace_t *x) {
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
  if ((rc = live_trace(sock, pid, job, from, to, x)) != 0)
    fprintf(stderr, "gpuprof: no trace written\n");
out:
  gpuprof__msg__free_unpacked(reply, NULL);
  return rc;
}

/* Write x to path through a private temporary file beside it, renamed
 * over path once complete (gpuprof/outfile.h): a failure leaves no
 * partial trace, and a link or non-regular file at path is refused.
 * chrome: 0 Perfetto, 1 Chrome JSON, 2 Chrome JSON with launches; gz:
 * gzip-compressed.
 * 0 or -errno with the message in err. */
static int write_trace(const char *path, const gpd_xtrace_t *x, int chrome, int gz, char *err, size_t errn) {
  gpd_outfile_t of;
  int r = gpd_outfile_open(&of, path, err, errn);
  if (r < 0) return r;
  FILE *f = gz ? gpd__xwrite_gzip(of.f) : of.f;
  if (f == NULL) {
    snprintf(err, errn, "cannot write %s: %s", path, gpd_strerror(-ENOMEM));
    gpd_outfile_abort(&of);
    return -ENOMEM;
  }
  r = chrome == 2 ? gpd_xtrace_write_chrome_launches(f, x)
      : chrome     ? gpd_xtrace_write_chrome(f, x)
                   : gpd_xtrace_write_perfetto(f, x);
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
  static const struct option opts[] = {
      {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'F'},
      {"pid", required_argument, NULL, 'p'},    {"job", required_argument, NULL, 'j'},
      {"from", required_argument, NULL, 'f'},   {"to", required_argument, NULL, 't'},
      {"duration", required_argument, NULL, 'd'}, {"socket", required_argument, NULL, 's'},
      {"launches", no_argument, NULL, 'L'},     {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *out = NULL, *fmt = NULL, *job = NULL, *sock = NULL;
  int pid = 0, c, launches = 0;
  int64_t from = -1, to = -1, dur = -1;
  long v;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+o:F:p:j:f:t:d:s:h", opts, NULL)) != -1) {
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
    case 'h': fputs(trace_usage, stdout); return GPD_EXIT_OK;
    default: return gpd_cli_usage(trace_usage, "unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
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
  gpd_xtrace_init(&x);
  char err[1024];
  int rc = GPD_EXIT_OK;
  uint64_t t0 = 0;
  if (live) {
    if ((rc = live_window(gpd_live_socket(sock), pid, job, (uint64_t)dur, &x)) != 0)
      goto out;
  } else {
    if (gpd_xtrace_load(&x, argv[optind], pid, err, sizeof err) < 0) {
      fprintf(stderr, "gpuprof: %s\n", err);
      rc = GPD_EXIT_FAIL;
      goto out;
    }
    t0 = gpd_xtrace_t0(&x);
    if (from >= 0 || to >= 0)
      gpd_xtrace_window(&x, from >= 0 ? t0 + (uint64_t)from : 0, to >= 0 ? t0 + (uint64_t)to : 0);
  }
  if (x.nev == 0 && x.nla == 0)
    fprintf(stderr, "gpuprof: no trace events %s; writing an empty trace\n",
            live ? "in the window (no GPU activity of the selection, or tracing is off in gpuprofd)"
                 : (from >= 0 || to >= 0) ? "in the window" : "in the profile");
  if (x.dropped || x.refused)
    fprintf(stderr, "gpuprof: the trace is incomplete: %llu events dropped (queue full), %llu "
                    "refused (per-profile bound or the owner's share of a full store)\n",
            (unsigned long long)x.dropped, (unsigned long long)x.refused);
  if (x.truncated)
    fprintf(stderr, "gpuprof: gpuprofd sent the first events of the window only (reply bound)\n");
  char werr[600];
  int r = write_trace(out, &x, chrome, ends_with(out, ".gz"), werr, sizeof werr);
  if (r < 0) {
    fprintf(stderr, "gpuprof: %s (nothing written)\n", werr);
    rc = GPD_EXIT_FAIL;
    goto out;
  }
  fprintf(stderr, "gpuprof: wrote %s (%s): %zu GPU events, %zu launches, %zu CPU samples\n", out,
          chrome ? "Chrome JSON" : "Perfetto", x.nev, x.nla, x.ncs);
out:
  gpd_xtrace_free(&x);
  return rc;
}
