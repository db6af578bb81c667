/* ctl-app.c - a profiled process with a recording back end for Control
 * messages (the shim's test hook gpd_shim__control_backend), so the
 * daemon -> shim control channel is tested without a GPU.
 *
 *   ctl-app OUT MODE     (run with LD_PRELOAD=libgpuprof.so)
 *
 * The back end serves kind 1 (PC sampling): each call appends one line to
 * OUT ("on id=I kind=K dur=D period=P flags=F" / "off id=I kind=K") and
 * answers 0 with 3 targets.  Other kinds: -ENOTSUP.  MODE:
 *   run         live until killed
 *   exit-on     _exit(0) 300 ms after the first "on" (a process that
 *               ends in the middle of its window)
 *   die-in-ctl  _exit(0) inside the hook (ends before it answers)
 * Kind 3 (a new collection policy) appends "policy mode=M window=W
 * period=P budget=B" and answers 0.  With CTL_COST="ELAPSED_NS,WINDOW_NS,
 * WINDOWS,LAUNCHES,LAUNCHES_IN,SWITCH_NS" the back end reports itself as
 * the CUDA back end under the daemon's policy with those counters (the
 * governor's input), its mode the latest policy's.
 * Prints "ready" on stdout once the hook is installed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends.h"

static FILE *out;
static const char *mode = "run";
static atomic_int on_seen;

static char pol_mode[48];

static int test_control(const gpd_control_t *c, uint32_t *targets, char *msg, size_t n) {
  if (c->kind == GPD_CONTROL_POLICY && c->policy) {
    const gpd_shim_policy_t *p = c->policy;
    fprintf(out, "policy mode=%s window=%u period=%u budget=%u\n", p->mode, p->window_ms, p->period_ms,
            p->budget_bp);
    fflush(out);
    if (!strcmp(p->mode, "duty"))
      snprintf(pol_mode, sizeof pol_mode, "duty:%u/%u.%03u", p->window_ms, p->period_ms / 1000,
               p->period_ms % 1000);
    else
      snprintf(pol_mode, sizeof pol_mode, "%s", p->mode);
    *targets = 1;
    return 0;
  }
  if (c->kind != GPD_CONTROL_PC_SAMPLING)
    return -ENOTSUP;
  if (!strcmp(mode, "die-in-ctl"))
    _exit(0);
  if (c->enable)
    fprintf(out, "on id=%llu kind=%u dur=%u period=%u flags=%u\n", (unsigned long long)c->id,
            c->kind, c->duration_ms, c->period, c->flags);
  else
    fprintf(out, "off id=%llu kind=%u\n", (unsigned long long)c->id, c->kind);
  fflush(out);
  if (c->enable)
    atomic_store(&on_seen, 1);
  *targets = 3;
  snprintf(msg, n, "test back end");
  return 0;
}

static unsigned long long cost[6];
static int have_cost;

static int test_collect(gpd_shim_collect_t *o) {
  if (!have_cost)
    return 0;
  snprintf(o->source, sizeof o->source, "daemon");
  snprintf(o->mode, sizeof o->mode, "%s", pol_mode[0] ? pol_mode : "duty:10/3.000");
  o->can_detach = 1;
  o->elapsed_ns = cost[0];
  o->window_ns = cost[1];
  o->windows = cost[2];
  o->launches = cost[3];
  o->launches_in = cost[4];
  o->switch_ns = cost[5];
  return 1;
}

static const gpd_backend_t test_backend = {
    .name = "test", .api = 2 /* GPD_API_CUDA */, .control = test_control, .collect = test_collect};

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ctl-app OUT MODE\n");
    return 2;
  }
  out = fopen(argv[1], "a");
  mode = argv[2];
  if (!out)
    return 1;
  const gpd_backend_t *volatile *hook = dlsym(RTLD_DEFAULT, "gpd_shim__control_backend");
  if (!hook) {
    fprintf(stderr, "ctl-app: the shim is not preloaded\n");
    return 1;
  }
  const char *cc = getenv("CTL_COST");
  have_cost = cc && sscanf(cc, "%llu,%llu,%llu,%llu,%llu,%llu", &cost[0], &cost[1], &cost[2], &cost[3], &cost[4],
                           &cost[5]) == 6;
  *hook = &test_backend;
  printf("ready\n");
  fflush(stdout);
  for (int i = 0; i < 6000; i++) { /* at most 10 min */
    struct timespec ts = {0, 100000000L};
    nanosleep(&ts, NULL);
    if (atomic_load(&on_seen) && !strcmp(mode, "exit-on")) {
      struct timespec t3 = {0, 300000000L};
      nanosleep(&t3, NULL);
      _exit(0);
    }
  }
  return 0;
}
