/* bench-python - cost of Python frame capture per GPU call
 * (bench/bench-python.py drives it; docs/PYTHON.md, docs/PERFORMANCE.md).
 *
 * A shared library that a Python process loads through ctypes: the calls
 * below run with a Python stack of the driver's depth above them, exactly
 * like a GPU API call made from Python.  bench_python_setup() attaches a
 * region created here (a consumer thread drains it, as bench-capture);
 * bench_python_capture(batches, calls) returns the median over batches of
 * the ns per gpd_shim_capture() (steady state: the same stack each call).
 * bench_python_handoff(batches, calls) does the same on a native worker
 * thread inside bench_python_dispatch while the calling Python thread
 * waits: with GPUPROF_TEST_HANDOFF naming that function and the Python
 * caller, each capture carries the caller's Python frames (docs/PYTHON.md
 * "Work handed to a worker thread").  bench_python_launch is the
 * "kernel launch" of the stand-in libtorch_cpu.so (tests/python/
 * faketorch.cpp, ft_set_launch) for backward under forward: each launch
 * is one timed capture, on the Python thread (forward) or on the
 * stand-in's engine thread (backward); bench_python_launch_mean reads the
 * mean.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/region.h"
#include "shim.h"

int gpd_shim__attach_region(int fd);

static gpd_region_t R;
static volatile uint32_t sink_node;

/** 0 or -1 (no region).  No consumer: a warm capture of an unchanged path
 *  pushes nothing, and the first ones fit the 64 Ki-slot ring.  16 rings:
 *  one per thread that captures (the main thread, the handoff rows' 7
 *  workers, the stand-in's engine thread); a thread without a ring cannot
 *  announce its nodes and would take the slow path at every capture. */
int bench_python_setup(void) {
  if (gpd_region_create(&R, 16, 1u << 16, (int32_t)getpid(), 1) != 0 || gpd_shim__attach_region(dup(R.fd)) != 0)
    return -1;
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/** Median ns per capture over `batches` batches of `calls` captures; the
 *  leaf node of the last capture in *node. */
double bench_python_capture(int batches, int calls, unsigned *node) {
  double *v = calloc((size_t)batches, sizeof *v);
  if (!v)
    return -1;
  for (int b = 0; b < batches; b++) {
    uint64_t t0 = gpd_clock_ns();
    for (int i = 0; i < calls; i++)
      sink_node = gpd_shim_capture();
    v[b] = (double)(gpd_clock_ns() - t0) / calls;
  }
  qsort(v, (size_t)batches, sizeof *v, cmp);
  double m = v[batches / 2];
  free(v);
  *node = sink_node;
  return m;
}

typedef struct hjob_s {
  int batches, calls;
  double ns;
  unsigned node;
} hjob_t;

/** The dispatch function of the handoff bench (exported: the shim finds
 *  it in .dynsym when GPUPROF_TEST_HANDOFF names it). */
__attribute__((noinline, visibility("default"))) void *bench_python_dispatch(void *arg) {
  hjob_t *j = arg;
  j->ns = bench_python_capture(j->batches, j->calls, &j->node);
  return NULL;
}

static void *hworker(void *arg) { return bench_python_dispatch(arg); }

/** Median ns per capture on a worker thread (bench_python_dispatch) while
 *  the caller waits; -1 when the thread cannot start. */
double bench_python_handoff(int batches, int calls, unsigned *node) {
  hjob_t j = {batches, calls, -1, 0};
  pthread_t th;
  if (pthread_create(&th, NULL, hworker, &j) != 0)
    return -1;
  pthread_join(th, NULL);
  *node = j.node;
  return j.ns;
}

static uint64_t launch_ns, launch_n;

/** n timed captures (a launch of the stand-in libtorch; 0).  Called by
 *  one thread at a time: the Python thread, or the engine thread while
 *  the Python thread waits for it. */
int bench_python_launch(int n) {
  for (int i = 0; i < n; i++) {
    uint64_t t0 = gpd_clock_ns();
    sink_node = gpd_shim_capture();
    launch_ns += gpd_clock_ns() - t0;
    launch_n++;
  }
  return 0;
}

/** Mean ns per capture of bench_python_launch since the last call (-1:
 *  none), the last capture's node in *node; starts the next mean. */
double bench_python_launch_mean(unsigned *node) {
  double m = launch_n ? (double)launch_ns / (double)launch_n : -1;
  launch_ns = launch_n = 0;
  *node = sink_node;
  return m;
}
