/* step.c - the steps of a long command (`gpuprof report`): a progress
 * line on stderr for a step that runs over 2 s when stderr is a
 * terminal, and each step's time with GPUPROF_TIMINGS=1 (the benches).
 *
 * The line is written from a SIGALRM handler (an interval timer started
 * by each step: first at 2 s, then every second) with write(2) only, so
 * the step's own code needs no hooks; SA_RESTART keeps the step's system
 * calls going.  CLI thread only; one step at a time.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static char step_name[96];
static volatile sig_atomic_t step_secs, step_shown;
static int step_tty = -1, step_timings;
static struct timespec step_t0;

static double since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* "\rgpuprof: NAME... N s" (async-signal-safe) */
static void on_alarm(int sig) {
  (void)sig;
  char buf[160];
  size_t n = 0;
  const char *a = "\rgpuprof: ";
  int s = ++step_secs + 1;
  char num[12];
  int k = 0;
  while (*a && n < sizeof buf)
    buf[n++] = *a++;
  for (const char *p = step_name; *p && n < sizeof buf - 24; p++)
    buf[n++] = *p;
  buf[n++] = '.', buf[n++] = '.', buf[n++] = '.', buf[n++] = ' ';
  do
    num[k++] = (char)('0' + s % 10);
  while ((s /= 10) && k < 11);
  while (k)
    buf[n++] = num[--k];
  buf[n++] = ' ', buf[n++] = 's';
  ssize_t w = write(STDERR_FILENO, buf, n);
  (void)w;
  step_shown = 1;
}

void gpd_cli_step_begin(const char *name) {
  if (step_tty < 0) {
    const char *t = getenv("GPUPROF_TIMINGS");
    step_tty = isatty(STDERR_FILENO);
    step_timings = t && t[0] == '1';
  }
  snprintf(step_name, sizeof step_name, "%s", name);
  step_secs = 0;
  step_shown = 0;
  clock_gettime(CLOCK_MONOTONIC, &step_t0);
  if (step_tty) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{1, 0}, {2, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
  }
}

void gpd_cli_step_end(void) {
  double s = since(&step_t0);
  if (step_tty) {
    struct itimerval it = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    signal(SIGALRM, SIG_DFL);
    if (step_shown)
      fprintf(stderr, "\rgpuprof: %s: %.1f s\033[K\n", step_name, s);
  }
  if (step_timings)
    fprintf(stderr, "gpuprof: timing %s %.3f s\n", step_name, s);
}
