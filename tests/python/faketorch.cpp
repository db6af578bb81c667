// faketorch.cpp - a stand-in "libtorch_cpu.so" for backward under forward
// (docs/PYTHON.md "Backward under forward"; tests/python/bwdfwd.sh).
//
// It exports the libtorch functions the shim looks up, under their real
// (mangled) names and with PyTorch 2.x's ABI, and an autograd Node laid
// out as PyTorch 2.x lays it out (torch/csrc/autograd/function.h):
//   at::sequence_number::peek / get_and_increment   thread-local counter
//   at::RecordFunction::currentThreadId              1, 2, ... per thread
//   torch::autograd::get_current_node                std::shared_ptr<Node>
//   torch::autograd::Engine::thread_main             the engine thread
// A Python script (tests/python/bwdfwd.py, through ctypes) makes "forward
// operations" (ft_op: a Node whose sequence number comes from the counter,
// then OpenCL kernels launched on PoCL through handoff-lib.c's hl_direct)
// and runs "backward" (ft_backward: a std::thread in Engine::thread_main
// evaluates the nodes newest first, each under a NodeGuard that sets the
// current node, launching its backward kernels) while the Python caller
// waits in torch/autograd/graph.py's _engine_run_backward (a fake package
// next to this file).
//
// Variants (compile definitions):
//   FT_INTRUSIVE        the later 2.x layout (torch/csrc/autograd/node.h):
//                       Node : c10::intrusive_ptr_target (vtable pointer,
//                       combined strong/weak count), get_current_node
//                       returns an intrusive_ptr; the shim links it too
// and PyTorches the shim must not trust:
//   FT_NO_CURRENT_NODE  get_current_node is not exported under its name
//   FT_TID_MOVED        a field added before thread_id_
//   FT_HANDLE           Node with no reference count, returned as a bare
//                       one-pointer handle
// After a backward pass every node's count must be what it was before
// (the shim gave back the reference get_current_node took): ft_backward
// returns -EPROTO otherwise.
// Every extern "C" function returns 0 or an OpenCL / errno error.
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

extern "C" int hl_setup(void);
extern "C" int hl_direct(int n);

// What launches n "kernels": OpenCL on PoCL, or a bench's captures
// (ft_set_launch).
static int (*launch)(int n) = hl_direct;

namespace at {
namespace sequence_number {
namespace {
thread_local uint64_t sequence_nr_ = 0;
}
uint64_t peek() { return sequence_nr_; }
uint64_t get_and_increment() { return sequence_nr_++; }
}  // namespace sequence_number

struct RecordFunction {
  static uint64_t currentThreadId();
};
namespace {
uint64_t next_thread_id_ = 0;  // guarded by being called from one thread at a time here
thread_local uint64_t current_thread_id_ = 0;
}  // namespace
uint64_t RecordFunction::currentThreadId() {
  if (!current_thread_id_)
    current_thread_id_ = __atomic_add_fetch(&next_thread_id_, 1, __ATOMIC_RELAXED);
  return current_thread_id_;
}
}  // namespace at

#ifdef FT_INTRUSIVE
namespace c10 {
// vtable pointer, then the combined count: strong in bits 0..31, weak in
// 32..62 (a strong reference counts one weak while there is any)
struct intrusive_ptr_target {
  virtual ~intrusive_ptr_target() = default;
  mutable std::atomic<uint64_t> combined_refcount_{1ull << 32};
};
template <class T>
struct intrusive_ptr {
  T *p = nullptr;
  intrusive_ptr() = default;
  explicit intrusive_ptr(T *q) : p(q) {
    if (p)
      p->combined_refcount_.fetch_add(1);
  }
  intrusive_ptr(const intrusive_ptr &o) : intrusive_ptr(o.p) {}
  intrusive_ptr &operator=(const intrusive_ptr &o) {
    intrusive_ptr tmp(o);
    std::swap(p, tmp.p);
    return *this;
  }
  ~intrusive_ptr() {
    if (p)
      p->combined_refcount_.fetch_sub(1);
  }
};
}  // namespace c10
#endif

namespace torch {
namespace autograd {

#if defined(FT_INTRUSIVE)
struct Node : c10::intrusive_ptr_target {
#elif defined(FT_HANDLE)
struct Node {
#else
struct Node : std::enable_shared_from_this<Node> {
#endif
  explicit Node(uint64_t sequence_nr) : sequence_nr_(sequence_nr) {
    thread_id_ = at::RecordFunction::currentThreadId();
  }
  Node() : Node(at::sequence_number::get_and_increment()) {}
  virtual ~Node() = default;
  virtual int apply() { return launch(bwd_); }

  const uint64_t sequence_nr_;
  uint64_t topological_nr_ = 0;
  mutable bool has_parent_ = false;
#ifdef FT_TID_MOVED
  uint64_t flags_ = 0;
#endif
  uint64_t thread_id_ = 0;
  int bwd_ = 0;  // backward kernels
};

#if defined(FT_INTRUSIVE)
using NodePtr = c10::intrusive_ptr<Node>;
static NodePtr node_ptr(const std::shared_ptr<Node> &n) { return NodePtr(n.get()); }
static bool refs_back(const std::shared_ptr<Node> &n) { return n->combined_refcount_.load() == 1ull << 32; }
#elif defined(FT_HANDLE)
// a handle of one pointer, not trivially copyable: returned through a
// hidden pointer, but no count behind it
struct NodeRef {
  Node *p = nullptr;
  NodeRef() = default;
  NodeRef(const NodeRef &o) : p(o.p) {}
  NodeRef &operator=(const NodeRef &o) {
    p = o.p;
    return *this;
  }
  ~NodeRef() {}
};
using NodePtr = NodeRef;
static NodePtr node_ptr(const std::shared_ptr<Node> &n) {
  NodeRef r;
  r.p = n.get();
  return r;
}
static bool refs_back(const std::shared_ptr<Node> &) { return true; }
#else
using NodePtr = std::shared_ptr<Node>;
static NodePtr node_ptr(const std::shared_ptr<Node> &n) { return n; }
static bool refs_back(const std::shared_ptr<Node> &n) { return n.use_count() == 1; }  // the graph's own
#endif

static thread_local NodePtr current_evaluating_node;

#ifdef FT_NO_CURRENT_NODE
NodePtr get_current_node_renamed() { return current_evaluating_node; }
#else
NodePtr get_current_node() { return current_evaluating_node; }
#endif

struct NodeGuard {
  explicit NodeGuard(NodePtr node) : last_(current_evaluating_node) { current_evaluating_node = node; }
  ~NodeGuard() { current_evaluating_node = last_; }
  NodePtr last_;
};

struct GraphTask {
  std::vector<std::shared_ptr<Node>> nodes;  // in creation order
  int err = 0;
};

struct Engine {
  void thread_main(const std::shared_ptr<GraphTask> &graph_task);
};

// The engine's device thread: every node, newest first, under its guard,
// the task holding a reference too (as NodeTask::fn_ does).
__attribute__((noinline)) void Engine::thread_main(const std::shared_ptr<GraphTask> &graph_task) {
  for (auto it = graph_task->nodes.rbegin(); it != graph_task->nodes.rend() && !graph_task->err; ++it) {
    NodePtr fn = node_ptr(*it);
    NodeGuard guard(fn);
    graph_task->err = (*it)->apply();
  }
  __asm__ volatile("" ::: "memory");  // not a tail call: this frame stays in the launches' path
}

}  // namespace autograd
}  // namespace torch

using torch::autograd::Node;

static std::shared_ptr<torch::autograd::GraphTask> graph = std::make_shared<torch::autograd::GraphTask>();

extern "C" {

__attribute__((visibility("default"))) int ft_setup(void) { return hl_setup(); }

// A forward operation: with grad, a Node first (as the generated autograd
// kernels make grad_fn before they redispatch), then its fwd kernels.
__attribute__((visibility("default"))) int ft_op(int fwd, int bwd, int grad) {
  if (grad) {
    auto n = std::make_shared<Node>();
    n->bwd_ = bwd;
    graph->nodes.push_back(n);
  }
  return fwd > 0 ? launch(fwd) : 0;
}

// A node of no forward operation (AccumulateGrad: sequence number
// UINT64_MAX), evaluated like the others.
__attribute__((visibility("default"))) int ft_leaf(int bwd) {
  auto n = std::make_shared<Node>(UINT64_MAX);
  n->bwd_ = bwd;
  graph->nodes.push_back(n);
  return 0;
}

// The engine's device thread, started once and kept (as PyTorch keeps
// its device threads): runs each task handed over in ft_backward.
// (never destroyed: the thread still waits on them at exit)
static std::mutex &mu = *new std::mutex;
static std::condition_variable &cv = *new std::condition_variable;
static std::shared_ptr<torch::autograd::GraphTask> pending;
static bool finished;

static void engine_thread(void) {
  torch::autograd::Engine engine;
  std::unique_lock<std::mutex> lk(mu);
  for (;;) {
    cv.wait(lk, [] { return pending != nullptr; });
    auto task = pending;
    lk.unlock();
    engine.thread_main(task);
    lk.lock();
    pending = nullptr;
    finished = true;
    cv.notify_all();
  }
}

// Backward of every node made since the last call, on the engine thread
// while the caller waits.
__attribute__((visibility("default"))) int ft_backward(void) {
  static std::once_flag started;
  std::call_once(started, [] { std::thread(engine_thread).detach(); });
  auto task = graph;
  graph = std::make_shared<torch::autograd::GraphTask>();
  std::unique_lock<std::mutex> lk(mu);
  finished = false;
  pending = task;
  cv.notify_all();
  cv.wait(lk, [] { return finished; });
  for (auto &n : task->nodes)
    if (!task->err && !torch::autograd::refs_back(n))
      task->err = -EPROTO;
  return task->err;
}

// Kernel launches go to fn from now on (bench/bench-python.py: timed
// captures instead of OpenCL).
__attribute__((visibility("default"))) void ft_set_launch(int (*fn)(int n)) { launch = fn; }
}
