/* graph-app.c - a "CUDA program" on fake-cupti.c's driver for
 * test-cupti-graphs.sh: layer_a() captures two kernel nodes into a graph,
 * layer_b() a memset node, build_c() adds a kernel node with the explicit
 * graph API; instantiate() copies the four (clones 0x1100..0x1400), and
 * replay() launches the executable graph REPLAYS times (argv[1], 50). */
#include <stdint.h>
#include <stdlib.h>

void fakecu_capture(uint64_t h, int type);
void fakecu_add_node(uint64_t h, int type);
void fakecu_clone(uint64_t h, uint64_t orig, int type);
void fakecu_graph_launch(const uint64_t *h, const int *types, int n);

enum { KERNEL = 0, MEMSET = 2 }; /* CU_GRAPH_NODE_TYPE_* */

__attribute__((noinline)) void layer_a(void) {
  fakecu_capture(0x100, KERNEL);
  fakecu_capture(0x200, KERNEL);
}

__attribute__((noinline)) void layer_b(void) { fakecu_capture(0x300, MEMSET); }

__attribute__((noinline)) void build_c(void) { fakecu_add_node(0x400, KERNEL); }

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

int main(int argc, char **argv) {
  layer_a();
  layer_b();
  build_c();
  instantiate();
  replay(argc > 1 ? atoi(argv[1]) : 50);
  return 0;
}
