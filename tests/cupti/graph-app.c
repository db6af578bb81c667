/* graph-app.c - a "CUDA program" on fake-cupti.c's driver for
 * test-cupti-graphs.sh and test-cupti-graphs-window.sh: layer_a() makes
 * two kernel nodes of a graph, layer_b() a memset node, build_c() a
 * kernel node; instantiate() copies the four (clones 0x1100..0x1400), and
 * replay() launches the executable graph REPLAYS times (argv[1], 50).
 *
 * argv[2] says how the nodes are made and when:
 *   (none)   layer_a and layer_b capture (fakecu_capture), build_c adds
 *            its node with the explicit API's callback alone, all at once
 *            (full tracing);
 *   capture  every node captured between cudaStreamBeginCapture and
 *            cudaStreamEndCapture,
 *   create   every node added with cudaGraphCreate and
 *            cudaGraphAddKernelNode / cudaGraphAddMemsetNode,
 * and for these two the program first waits (30 s at most each) for a
 * tracing window (the controller runs), then until tracing is detached
 * with CUPTI finalized (between two duty windows: it launches a kernel
 * while no window is open, whose EXIT runs the armed finalize),
 * builds and instantiates the graph there, then waits for a window and
 * replays inside it.  Exit 0; 3 when no detached, finalized phase came,
 * or a window opened while the graph was built; 4 when no window came or
 * it closed before the last replay. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

void fakecu_capture(uint64_t h, int type);
void fakecu_add_node(uint64_t h, int type);
void fakecu_clone(uint64_t h, uint64_t orig, int type);
void fakecu_graph_launch(const uint64_t *h, const int *types, int n);
void fakecu_launch(void);
int fakecu_finalized(void);
unsigned long fakecu_window(void);

enum { KERNEL = 0, MEMSET = 2 }; /* CU_GRAPH_NODE_TYPE_* */
enum { OLD = 0, CAPTURE, CREATE };
static int g_how;
static cudaGraph_t g_graph;

/* Node h of `type`, made the way argv[2] says (explicit: the old way's
 * explicit node). */
static __attribute__((noinline)) void make(uint64_t h, int type, int explicit) {
  if (g_how == CREATE && type == MEMSET) {
    struct cudaMemsetParams p;
    memset(&p, 0, sizeof p);
    p.dst = (void *)(uintptr_t)h;
    cudaGraphNode_t n;
    cudaGraphAddMemsetNode(&n, g_graph, NULL, 0, &p);
  } else if (g_how == CREATE) {
    struct cudaKernelNodeParams p;
    memset(&p, 0, sizeof p);
    p.func = (void *)(uintptr_t)h;
    cudaGraphNode_t n;
    cudaGraphAddKernelNode(&n, g_graph, NULL, 0, &p);
  } else if (explicit && g_how == OLD) {
    fakecu_add_node(h, type);
  } else {
    fakecu_capture(h, type);
  }
}

__attribute__((noinline)) void layer_a(void) {
  make(0x100, KERNEL, 0);
  make(0x200, KERNEL, 0);
}

__attribute__((noinline)) void layer_b(void) { make(0x300, MEMSET, 0); }

__attribute__((noinline)) void build_c(void) { make(0x400, KERNEL, 1); }

__attribute__((noinline)) void instantiate(void) {
  fakecu_clone(0x1100, 0x100, KERNEL);
  fakecu_clone(0x1200, 0x200, KERNEL);
  fakecu_clone(0x1300, 0x300, MEMSET);
  fakecu_clone(0x1400, 0x400, KERNEL);
}

__attribute__((noinline)) void replay(int n) {
  static const uint64_t exec[] = {0x1100, 0x1200, 0x1300, 0x1400};
  static const int types[] = {KERNEL, KERNEL, MEMSET, KERNEL};
  for (int i = 0; i < n; i++)
    fakecu_graph_launch(exec, types, 4);
}

/* Detached and finalized: no window open, and a launch's EXIT ran the
 * armed finalize. */
static int finalized(void) {
  if (fakecu_window())
    return 0;
  fakecu_launch();
  return fakecu_finalized();
}

static int window_open(void) { return fakecu_window() != 0; }

/* Poll cond every 1 ms for at most 30 s. */
static int wait_until(int (*cond)(void)) {
  for (int i = 0; i < 30000; i++) {
    if (cond())
      return 1;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return 0;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 50;
  g_how = argc < 3 ? OLD : !strcmp(argv[2], "capture") ? CAPTURE : CREATE;
  /* the first window (the controller runs), then the detached phase */
  if (g_how != OLD && (!wait_until(window_open) || !wait_until(finalized)))
    return 3;
  if (g_how == CAPTURE)
    cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal);
  else if (g_how == CREATE)
    cudaGraphCreate(&g_graph, 0);
  layer_a();
  layer_b();
  build_c();
  if (g_how == CAPTURE)
    cudaStreamEndCapture(NULL, &g_graph);
  instantiate();
  if (g_how == OLD) {
    replay(n);
    return 0;
  }
  if (fakecu_window())
    return 3; /* built inside a window: not the case under test */
  if (!wait_until(window_open))
    return 4;
  unsigned long w = fakecu_window();
  replay(n);
  return fakecu_window() == w ? 0 : 4;
}
