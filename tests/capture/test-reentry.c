/* test-reentry - signals and longjmp against the capture path, made
 * deterministic with the shim's capture hook (called in the middle of a
 * capture, while the thread's memo is being updated):
 *   1. a signal handler that captures while the thread is mid-capture:
 *      the interrupted capture returns its own path, the memo is not
 *      mixed (later captures of that path and a sibling are right), the
 *      nested capture is counted and writes nothing;
 *   2. a handler that longjmps out of a capture: capture is not switched
 *      off for the thread, from the same frame depth or a deeper one. */
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>

#include "drain.h"
#include "shim.h"

#define NOINLINE __attribute__((noinline))
#define KEEP __asm__ volatile("" ::: "memory")

extern void (*volatile gpd_shim__capture_hook)(void);
void gpd_shim__capture_nested(unsigned long *seen, unsigned long *declined);

static dr_t D;
static volatile int n_rounds = 3, b_first = 1; /* volatile: loops stay loops (one call site) */
static sigjmp_buf jb;
static volatile uint32_t handler_node = 0xffffffffu;
static volatile int handler_runs;

NOINLINE uint32_t leaf_a(void) { uint32_t id = gpd_shim_capture(); KEEP; return id; }
NOINLINE uint32_t leaf_b(void) { uint32_t id = gpd_shim_capture(); KEEP; return id; }
NOINLINE uint32_t mid(int b) { uint32_t id = b ? leaf_b() : leaf_a(); KEEP; return id; }
NOINLINE uint32_t top(int b) { uint32_t id = mid(b); KEEP; return id; }
NOINLINE uint32_t deeper3(int b) { uint32_t id = top(b); KEEP; return id; }
NOINLINE uint32_t deeper2(int b) { uint32_t id = deeper3(b); KEEP; return id; }
NOINLINE uint32_t deeper1(int b) { uint32_t id = deeper2(b); KEEP; return id; }
NOINLINE uint32_t handler_leaf(void) { uint32_t id = gpd_shim_capture(); KEEP; return id; }

static void on_usr1(int sig) {
  (void)sig;
  handler_runs++;
  handler_node = handler_leaf();
}
static void on_usr2(int sig) {
  (void)sig;
  handler_runs++;
  siglongjmp(jb, 1);
}
static void hook_raise_usr1(void) {
  gpd_shim__capture_hook = NULL; /* once */
  raise(SIGUSR1);
}
static void hook_raise_usr2(void) {
  gpd_shim__capture_hook = NULL;
  raise(SIGUSR2);
}

static const char *fn_of(uint32_t id, uint32_t *parent) {
  const gpd_rec_node_t *n = dr_node(&D, id);
  if (!n)
    DR_FAIL("node %u never announced", id);
  *parent = n->parent;
  const gpd_rec_module_t *m = dr_module(&D, n->module, NULL);
  Dl_info info;
  if (!dladdr((void *)(uintptr_t)(n->offset + (m ? m->base : 0)), &info) || !info.dli_sname)
    return "?";
  return info.dli_sname;
}

/* The path of id, leaf first, must start with want[0..n). */
static void check_path(uint32_t id, const char *const *want, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    uint32_t p;
    const char *f = fn_of(id, &p);
    DR_CHECK(strcmp(f, want[i]) == 0, "%s: frame %d is %s, want %s", what, i, f, want[i]);
    id = p;
  }
}

static void nested_counts(unsigned long *seen, unsigned long *declined) {
  gpd_shim__capture_nested(seen, declined);
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_handler = on_usr2;
  sigaction(SIGUSR2, &sa, NULL);
  dr_attach(&D, 8, 4096);
  const char *const path_a[] = {"leaf_a", "mid", "top", "main"};
  const char *const path_b[] = {"leaf_b", "mid", "top", "main"};
  unsigned long seen0, dec0, seen1, dec1;

  /* 1. A handler captures in the middle of a capture.  One call site in
   * main for every round; each round first captures the sibling path, so
   * the memo differs near the leaf and is being rewritten at the hook
   * (round 1: the stack's second sighting, a slow-path capture; round 2
   * replays). */
  uint32_t x[2][3];
  for (int r = 0; r < n_rounds; r++)
    for (int b = b_first; b >= 0; b--) {
      if (r == 1 && b == 0) {
        nested_counts(&seen0, &dec0);
        gpd_shim__capture_hook = hook_raise_usr1;
      }
      x[b][r] = top(b); /* one call site for both paths */
      if (r == 1 && b == 0) {
        DR_CHECK(handler_runs == 1, "the hook did not raise the signal (%d)", handler_runs);
        nested_counts(&seen1, &dec1);
      }
    }
  uint32_t *xa = x[0], *xb = x[1];
  DR_CHECK(seen1 == seen0 + 1, "nested captures seen %lu, want %lu", seen1, seen0 + 1);
  /* Its path (through the interrupted capture and the signal frame) was
   * never interned: the nested capture declines rather than write. */
  DR_CHECK(handler_node == 0, "nested capture returned %u", (unsigned)handler_node);
  DR_CHECK(dec1 == dec0 + 1, "nested captures declined %lu", dec1 - dec0);
  dr_drain(&D);
  for (int r = 0; r < 3; r++) {
    DR_CHECK(xa[r] && xa[r] == xa[0], "round %d: path a node %u vs %u", r, xa[r], xa[0]);
    DR_CHECK(xb[r] && xb[r] == xb[0], "round %d: path b node %u vs %u", r, xb[r], xb[0]);
  }
  check_path(xa[0], path_a, 4, "interrupted capture");
  check_path(xb[0], path_b, 4, "sibling path");
  uint32_t pa, pb;
  fn_of(xa[0], &pa);
  fn_of(xb[0], &pb);
  DR_CHECK(pa != pb, "leaf call sites share a parent node");
  fn_of(pa, &pa);
  fn_of(pb, &pb);
  DR_CHECK(pa == pb, "top's node must be shared (%u vs %u)", pa, pb);
  long nodes_before = D.nnodes_all;

  /* 2. A handler longjmps out of a capture: later captures, from the same
   * depth and deeper, are neither switched off nor taken for nested. */
  handler_runs = 0;
  if (sigsetjmp(jb, 1) == 0) {
    gpd_shim__capture_hook = hook_raise_usr2;
    (void)top(0);
    DR_FAIL("the handler did not longjmp");
  }
  DR_CHECK(handler_runs == 1, "longjmp handler runs %d", handler_runs);
  nested_counts(&seen0, &dec0);
  uint32_t deep = deeper1(1); /* deeper first: the cookie tells */
  uint32_t again = top(0);
  nested_counts(&seen1, &dec1);
  DR_CHECK(seen1 == seen0, "a capture after the longjmp was taken for a nested one");
  dr_drain(&D);
  DR_CHECK(again && deep, "captures after longjmp: %u %u", again, deep);
  check_path(again, path_a, 4, "capture after longjmp");
  const char *const path_deep[] = {"leaf_b", "mid", "top", "deeper3", "deeper2", "deeper1", "main"};
  check_path(deep, path_deep, 7, "deeper capture after longjmp");
  DR_CHECK(D.nnodes_all > nodes_before, "nothing announced after the longjmp");

  /* Abandoned from a deep frame, then captured from a shallower one. */
  if (sigsetjmp(jb, 1) == 0) {
    gpd_shim__capture_hook = hook_raise_usr2;
    (void)deeper1(0);
    DR_FAIL("the handler did not longjmp");
  }
  nested_counts(&seen0, &dec0);
  uint32_t shallow = top(1);
  nested_counts(&seen1, &dec1);
  DR_CHECK(seen1 == seen0, "shallower capture taken for a nested one");
  dr_drain(&D);
  check_path(shallow, path_b, 4, "shallower capture after longjmp");
  DR_CHECK(D.bad == 0, "%d bad records", D.bad);
  printf("test-reentry: ok\n");
  return 0;
}
