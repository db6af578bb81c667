/* duty-client - a fake shim (tests/daemon/daemon-client-lib.h) that
 * reports what a CUDA process run with GPUPROF_CUDA_TRACE=duty:10/0.1
 * would: 10 windows of 10 ms every 100 ms, the kernels launched in each
 * (call site A: 3 1 2 2 3 1 2 2 3 1 launches of kern_a, 1000 ns each;
 * call site B: one kern_b of 5000 ns per window), a TRACEWIN record
 * after each window and a final one at the run's end (t0 + 1 s), so
 * f = 0.1 exactly.  Usage: duty-client SOCKET [launches]: with
 * "launches" the TRACEWIN records also carry the kernel launches the back
 * end counted (20 inside each window of 250 per 100 ms: 200 of 2500, so
 * the launch fraction 0.08).  Exit 0, or 2 on failure (the library says
 * why).  tests/trace/duty.sh checks the report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon-client-lib.h"
#include "gpuprof/clock.h"

#define MS 1000000ull

static const int per_window_a[10] = {3, 1, 2, 2, 3, 1, 2, 2, 3, 1};

static void kernel(gpd_dclient_t *c, uint32_t node, uint32_t name, uint32_t stream, uint64_t start,
                   uint64_t ns) {
  uint64_t corr = gpd_dclient_corr(c);
  gpd_rec_invoke_t v;
  gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, node, corr);
  v.ts = start - 500;
  gpd_dclient_push(&c->ring[0], &v, sizeof v);
  gpd_rec_activity_t a;
  gpd_dclient_activity_init(&a, GPD_OP_KERNEL, corr);
  a.start = start;
  a.end = start + ns;
  a.name = name;
  a.stream = stream;
  gpd_dclient_push(&c->ring[1], &a, sizeof a);
}

static void tracewin(gpd_dclient_t *c, int final, uint64_t t0, uint64_t start, uint64_t end,
                     uint32_t windows, uint64_t window_ns, uint64_t launches, uint64_t launches_in) {
  gpd_rec_tracewin_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_TRACEWIN;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.h.flags = final ? GPD_TRACEWIN_F_FINAL : 0;
  r.api = GPD_API_CUDA;
  r.duty = 1;
  r.windows = windows;
  r.t0 = t0;
  r.start = start;
  r.end = end;
  r.window_ns = window_ns;
  r.launches = launches;
  r.launches_in = launches_in;
  gpd_dclient_push(&c->ring[0], &r, sizeof r);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "launches"))) {
    fprintf(stderr, "usage: duty-client SOCKET [launches]\n");
    return 2;
  }
  int counted = argc == 3;
  gpd_dclient_t c;
  memset(&c, 0, sizeof c);
  gpd_dclient_register(&c, argv[1]);
  gpd_dclient_module(&c, 0, 1, "/usr/bin/duty-app");
  gpd_dclient_string(&c, 1, 1, GPD_STR_KERNEL, "kern_a");
  gpd_dclient_string(&c, 1, 2, GPD_STR_KERNEL, "kern_b");
  gpd_dclient_node(&c, 1, 0, 1, 0x100); /* call site A */
  gpd_dclient_node(&c, 2, 0, 1, 0x200); /* call site B */
  uint64_t t0 = gpd_clock_ns();
  for (uint32_t i = 0; i < 10; i++) {
    uint64_t ws = t0 + i * 100 * MS, we = ws + 10 * MS;
    for (int k = 0; k < per_window_a[i]; k++)
      kernel(&c, 1, 1, 1, ws + 1000 + (uint64_t)k * 2000, 1000);
    kernel(&c, 2, 2, 2, ws + 8 * MS, 5000);
    tracewin(&c, 0, t0, ws, we, i + 1, (i + 1) * 10 * MS, counted ? 250ull * i + 20 : 0, counted ? 20ull * (i + 1) : 0);
  }
  tracewin(&c, 1, t0, t0 + 1000 * MS, t0 + 1000 * MS, 10, 100 * MS, counted ? 2500 : 0, counted ? 200 : 0);
  printf("duty-client %d sent\n", (int)getpid());
  fflush(stdout);
  return 0;
}
