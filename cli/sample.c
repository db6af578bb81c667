/* sample.c - `gpuprof sample`: switch GPU PC sampling on in running
 * processes for a window (docs/CLI.md), through the daemon's generic
 * Control of running processes (proto/gpuprof.proto ControlRequest).
 *
 *   gpuprof sample --pid N | --job J [--duration 10s] [--period P]
 *                  [--counts] [--stop] [--no-wait]
 *
 * The shim ends the window by itself; without --no-wait the command
 * waits for that (`gpuprof ps` state, polled) and then says where the
 * samples are.  The request itself is gpd_live_control (live.c), which
 * `gpuprof trace` uses too.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "gpuprof/error.h"

enum { O_PID = 'p', O_JOB = 'j', O_DUR = 'd', O_PER = 'P', O_COUNTS = 'c', O_STOP = 'S',
       O_NOWAIT = 'N', O_KIND = 'K', O_SOCK = 's' };

static const gpd_cli_opt_t sample_opts[] = {
    {"pid", required_argument, O_PID, NULL, NULL},
    {"job", required_argument, O_JOB, NULL, NULL},
    {"duration", required_argument, O_DUR, "--duration D", "the window: 10s (default), 500ms, 2m, or seconds; at most 1 h"},
    {"period", required_argument, O_PER, "--period P", "one sample every 2^P cycles per SM (5..31; default: CUPTI's)"},
    {"counts", no_argument, O_COUNTS, "--counts",
     "also exact SASS execution counts (a CUDA process refuses:\n"
     "they do not combine with PC sampling; GPUPROF_SASS_COUNTS=1\n"
     "in a separate run of the program instead)"},
    {"stop", no_argument, O_STOP, "--stop", "stop a window now"},
    {"no-wait", no_argument, O_NOWAIT, "--no-wait", "return once the processes said yes (else wait for the end)"},
    {"kind", required_argument, O_KIND, "(--kind K", "another control kind, by number: for tests)"},
    {"socket", required_argument, O_SOCK, NULL, NULL},
    {0}};

static gpd_cli_cmd_t sample_cmd = {
    .head = "usage: gpuprof sample (--pid N | --job J) [--duration D] [--period P] [--counts]\n"
            "                      [--stop] [--no-wait]\n"
            "  Switch GPU PC sampling on in running processes for a window (CUDA: CUPTI PC\n"
            "  sampling on every CUDA context of the process), then off again.\n",
    .opts = sample_opts,
    .shorts = "",
    .col = 17,
    .tail = "Exit: 0 every process applied it, 1 any did not (each says why).\n"};

/* "10s", "500ms", "2m", "1h", "7" (seconds) -> ms; -1 when malformed. */
static long parse_duration_ms(const char *s) {
  char *end;
  if (!s || !*s)
    return -1;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0)
    return -1;
  double ms;
  if (!*end || !strcmp(end, "s"))
    ms = v * 1000;
  else if (!strcmp(end, "ms"))
    ms = v;
  else if (!strcmp(end, "m"))
    ms = v * 60000;
  else if (!strcmp(end, "h"))
    ms = v * 3600000;
  else
    return -1;
  return ms > 0x7fffffff ? -1 : (long)ms;
}

int gpd_cmd_sample(int argc, char **argv) {
  const char *sample_usage = gpd_cli_help(&sample_cmd);
  Gpuprof__Control ctl = GPUPROF__CONTROL__INIT;
  const char *job = NULL, *sockopt = NULL;
  long pid = 0, dur = 10000, v;
  int stop = 0, nowait = 0, c, rc;
  ctl.kind = GPUPROF__CONTROL_KIND__CONTROL_PC_SAMPLING;
  optind = 1;
  while ((c = gpd_cli_opt_next(argc, argv, &sample_cmd, &rc)) > 0) {
    switch (c) {
    case O_PID:
      if ((pid = gpd_cli_parse_uint(optarg)) <= 0)
        return gpd_cli_usage(sample_usage, "--pid needs a process id, not '%s'", optarg);
      break;
    case O_JOB:
      job = optarg;
      break;
    case O_DUR:
      if ((dur = parse_duration_ms(optarg)) <= 0)
        return gpd_cli_usage(sample_usage, "--duration: '%s' is not like 10s, 500ms, 2m", optarg);
      break;
    case O_PER:
      if ((v = gpd_cli_parse_uint(optarg)) < 5 || v > 31)
        return gpd_cli_usage(sample_usage, "--period must be 5..31, not '%s'", optarg);
      ctl.period = (uint32_t)v;
      break;
    case O_COUNTS:
      ctl.flags |= GPUPROF__CONTROL_FLAG__CONTROL_F_COUNTS;
      break;
    case O_STOP:
      stop = 1;
      break;
    case O_NOWAIT:
      nowait = 1;
      break;
    case O_KIND:
      if ((v = gpd_cli_parse_uint(optarg)) < 0)
        return gpd_cli_usage(sample_usage, "--kind needs a number");
      ctl.kind = (Gpuprof__ControlKind)v;
      break;
    case O_SOCK:
      sockopt = optarg;
      break;
    }
  }
  if (c < 0)
    return rc;
  if (optind < argc)
    return gpd_cli_usage(sample_usage, "unexpected argument '%s'", argv[optind]);
  if ((pid != 0) == (job != NULL))
    return gpd_cli_usage(sample_usage, "give one of --pid and --job");
  ctl.enable = !stop;
  ctl.duration_ms = stop ? 0 : (uint32_t)dur;
  const char *sock = gpd_live_socket(sockopt);
  char what[96];
  if (stop)
    snprintf(what, sizeof what, "control kind %u off", (unsigned)ctl.kind);
  else if (ctl.kind == GPUPROF__CONTROL_KIND__CONTROL_PC_SAMPLING)
    snprintf(what, sizeof what, "PC sampling on for %.3g s", dur / 1000.0);
  else
    snprintf(what, sizeof what, "control kind %u on for %.3g s", (unsigned)ctl.kind, dur / 1000.0);
  Gpuprof__Msg *reply = NULL;
  int code = gpd_live_control(sock, (int)pid, job, &ctl, what, stdout, &reply);
  if (reply == NULL)
    return code;
  int any = 0;
  for (size_t i = 0; i < reply->control_reply->n_results; i++)
    any |= reply->control_reply->results[i]->code == 0;
  if (!stop && !nowait && any) {
    /* the shim ends the window; wait for it (its ack), with a deadline */
    struct timespec t0, now, step = {0, 200000000L};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
      nanosleep(&step, NULL);
      int on = gpd_live_control_on(sock, reply, (unsigned)ctl.kind);
      if (on <= 0) {
        if (on == 0)
          printf("window ended; the samples are in the live tree and the saved profile "
                 "(gpuprof tree --pid N --gpu-detail, gpuprof report --gpu-detail)\n");
        break;
      }
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > dur + 10000) {
        fprintf(stderr, "gpuprof: the window did not end within %ld ms\n", dur + 10000);
        code = GPD_EXIT_FAIL;
        break;
      }
    }
  }
  gpuprof__msg__free_unpacked(reply, NULL);
  return code;
}
