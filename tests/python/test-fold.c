/* test-fold.c - the views of a tree (cli/fold.c, gpd_fold_view;
 * docs/PYTHON.md "The Python view", "Operators") on hand-made trees with
 * exact values.
 *
 * The Python view of:
 *
 *   root
 *     frame _start                       CPUTIME 5 (own)
 *       python main (s.py:9)
 *         frame ffi_call                 CPUTIME 2 (own)
 *           <gpu kernel> > k             GKER 3
 *       frame PyEval
 *         python main (s.py:9)
 *           frame other
 *             <gpu kernel> > k           GKER 4
 *             <backward> > <gpu kernel> > k   GKER 6
 *     frame clone > frame start_thread > <gpu kernel> > k   GKER 1
 *
 * gives root (CPUTIME 5) > main (CPUTIME 2) > <gpu kernel> > k (7) and
 * main > <backward> > <gpu kernel> > k (6), and root > <gpu kernel> > k
 * (1): native frames folded, their own values on the nearest kept
 * ancestor, equal siblings merged, inclusive values summed again.
 *
 * The operator view of PyTorch's dispatcher frames (labels as recorded on
 * an H200 under torch 2.x, argument lists shortened):
 *
 *   root > _start > python fwd (m.py:3)
 *     THPVariable_linear                    CPUTIME 1 (own)
 *       at::_ops::linear::call > wrap_kernel_functor_unboxed_ > at::native::linear
 *         at::_ops::addmm::call (+0x10) > VariableType::addmm > at::_ops::addmm::redispatch
 *           > structured_addmm_out_cuda::impl > cublasLtMatmul > <gpu kernel> > k   GKER 3
 *         at::_ops::addmm::call (+0x20) > wrapper_CUDA_addmm
 *           > structured_addmm_out_cuda::impl > cublasLtMatmul > <gpu kernel> > k   GKER 4
 *
 * gives fwd (CPUTIME 1) > aten::linear > aten::addmm > impl > cublasLtMatmul
 * > <gpu kernel> > k (GKER 7): dispatcher frames and the operator's own
 * at::native::linear folded, the two call sites of addmm one operator
 * node; --python keeps fwd > aten::linear > aten::addmm > <gpu kernel> > k;
 * --native changes nothing; a tree without dispatcher frames is untouched.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/metric.h"

#include "check.h"

static uint64_t next_id = 100;

static uint64_t add_at(gpd_tree_t *t, uint64_t parent, int kind, const char *label, uint64_t offset, unsigned metric,
                       double v) {
  uint64_t id = next_id++;
  long i = gpd_tree_node_add(t, id, parent, kind, label, kind == GPD_NODE_FRAME ? "libtorch_cpu.so" : "", offset,
                             kind == GPD_NODE_KERNEL ? label : "");
  if (i >= 0 && v)
    gpd_tree_mvec_add(&t->nodes[i].excl, metric, v);
  return id;
}

static uint64_t add(gpd_tree_t *t, uint64_t parent, int kind, const char *label, unsigned metric, double v) {
  return add_at(t, parent, kind, label, 0, metric, v);
}

/* The child of node i labelled label, or -1. */
static long kid(const gpd_tree_t *t, long i, const char *label) {
  if (i < 0)
    return -1;
  for (uint32_t k = 0; k < t->nodes[i].nkids; k++)
    if (strcmp(t->nodes[t->nodes[i].kids[k]].label, label) == 0)
      return (long)t->nodes[i].kids[k];
  return -1;
}

static void python_view(void) {
  gpd_tree_t t;
  gpd_tree_init(&t);
  const unsigned K = GPD_M_GKER, C = GPD_M_CPUTIME;
  uint64_t root = add(&t, 0, GPD_NODE_ROOT, "<root>", 0, 0);
  uint64_t s = add(&t, root, GPD_NODE_FRAME, "_start", C, 5);
  uint64_t m1 = add(&t, s, GPD_NODE_PYTHON, "main (s.py:9)", 0, 0);
  uint64_t ffi = add(&t, m1, GPD_NODE_FRAME, "ffi_call", C, 2);
  add(&t, add(&t, ffi, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 3);
  uint64_t ev = add(&t, s, GPD_NODE_FRAME, "PyEval", 0, 0);
  uint64_t m2 = add(&t, ev, GPD_NODE_PYTHON, "main (s.py:9)", 0, 0);
  uint64_t o = add(&t, m2, GPD_NODE_FRAME, "other", 0, 0);
  add(&t, add(&t, o, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 4);
  uint64_t b = add(&t, o, GPD_NODE_PLACEHOLDER, "<backward>", 0, 0);
  add(&t, add(&t, b, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 6);
  uint64_t st = add(&t, add(&t, root, GPD_NODE_FRAME, "clone", 0, 0), GPD_NODE_FRAME, "start_thread", 0, 0);
  add(&t, add(&t, st, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 1);
  gpd_tproc_t *p = gpd_tree_proc_new(&t);
  p->pid = 42;
  CHECK(gpd_tree_finish(&t, K) == 0, "finish");
  CHECK(gpd_fold_view(&t, GPD_VIEW_NATIVE, K) == 0 && t.n == 18, "--native: %zu nodes, want 18", t.n);
  CHECK(gpd_fold_view(&t, 0, K) == 0 && t.n == 18, "no dispatcher frame: %zu nodes, want 18", t.n);
  CHECK(gpd_fold_view(&t, GPD_VIEW_PYTHON, K) == 0, "python view");

  size_t frames = 0;
  for (size_t i = 0; i < t.n; i++)
    frames += t.nodes[i].kind == GPD_NODE_FRAME;
  CHECK(frames == 0, "%zu native frames left", frames);
  /* root, main, its <gpu kernel> and k, <backward> with <gpu kernel> and
   * k, root's <gpu kernel> and k */
  CHECK(t.n == 9, "%zu nodes, want 9", t.n);
  long r = (long)t.root;
  CHECK(gpd_tree_mvec_get(&t.nodes[r].excl, C) == 5, "root CPUTIME excl %g, want 5", gpd_tree_mvec_get(&t.nodes[r].excl, C));
  CHECK(gpd_tree_mvec_get(&t.nodes[r].incl, K) == 14, "root GKER incl %g", gpd_tree_mvec_get(&t.nodes[r].incl, K));
  CHECK(gpd_tree_mvec_get(&t.nodes[r].incl, C) == 7, "root CPUTIME incl %g", gpd_tree_mvec_get(&t.nodes[r].incl, C));
  long mn = kid(&t, r, "main (s.py:9)");
  CHECK(mn >= 0 && t.nodes[r].nkids == 2, "root > main, root has %u kids", t.nodes[r].nkids);
  CHECK(mn >= 0 && gpd_tree_mvec_get(&t.nodes[mn].excl, C) == 2, "main CPUTIME excl (ffi_call's)");
  CHECK(mn >= 0 && gpd_tree_mvec_get(&t.nodes[mn].incl, K) == 13, "main GKER incl");
  long k1 = kid(&t, kid(&t, mn, "<gpu kernel>"), "k");
  CHECK(k1 >= 0 && gpd_tree_mvec_get(&t.nodes[k1].excl, K) == 7, "main > <gpu kernel> > k merged: 7");
  long k2 = kid(&t, kid(&t, kid(&t, mn, "<backward>"), "<gpu kernel>"), "k");
  CHECK(k2 >= 0 && gpd_tree_mvec_get(&t.nodes[k2].excl, K) == 6, "main > <backward> > <gpu kernel> > k: 6");
  long k3 = kid(&t, kid(&t, r, "<gpu kernel>"), "k");
  CHECK(k3 >= 0 && gpd_tree_mvec_get(&t.nodes[k3].excl, K) == 1, "root > <gpu kernel> > k: 1 (a thread without Python)");
  CHECK(t.nprocs == 1 && t.procs[0].pid == 42, "processes moved over");
  gpd_tree_free(&t);
}

#define OPS "(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar const&, c10::Scalar const&)"

/* The tree of the operator case above; *kept: nodes in the operator view. */
static void build_ops(gpd_tree_t *t) {
  const unsigned K = GPD_M_GKER, C = GPD_M_CPUTIME;
  gpd_tree_init(t);
  uint64_t root = add(t, 0, GPD_NODE_ROOT, "<root>", 0, 0);
  uint64_t fwd = add(t, add(t, root, GPD_NODE_FRAME, "_start", 0, 0), GPD_NODE_PYTHON, "fwd (m.py:3)", 0, 0);
  uint64_t thp = add(t, fwd, GPD_NODE_FRAME, "torch::autograd::THPVariable_linear(_object*, _object*, _object*)", C, 1);
  uint64_t lin = add(t, thp, GPD_NODE_FRAME, "at::_ops::linear::call(at::Tensor const&, at::Tensor const&)", 0, 0);
  uint64_t w = add(t, lin, GPD_NODE_FRAME,
                   "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTime",
                   0, 0);
  uint64_t nl = add(t, w, GPD_NODE_FRAME, "at::native::linear(at::Tensor const&, at::Tensor const&)", 0, 0);
  uint64_t a1 = add_at(t, nl, GPD_NODE_FRAME, "at::_ops::addmm::call" OPS, 0x10, 0, 0);
  uint64_t vt = add(t, a1, GPD_NODE_FRAME, "torch::autograd::VariableType::(anonymous namespace)::addmm(c10::DispatchKeySet)",
                    0, 0);
  uint64_t rd = add(t, vt, GPD_NODE_FRAME, "at::_ops::addmm::redispatch(c10::DispatchKeySet, at::Tensor const&)", 0, 0);
  uint64_t im = add(t, rd, GPD_NODE_FRAME, "at::native::structured_addmm_out_cuda::impl(at::Tensor const&)", 0, 0);
  uint64_t cb = add(t, im, GPD_NODE_FRAME, "cublasLtMatmul", 0, 0);
  add(t, add(t, cb, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 3);
  uint64_t a2 = add_at(t, nl, GPD_NODE_FRAME, "at::_ops::addmm::call" OPS, 0x20, 0, 0);
  uint64_t wr = add(t, a2, GPD_NODE_FRAME, "at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA_addmm(at::Tensor)",
                    0, 0);
  im = add(t, wr, GPD_NODE_FRAME, "at::native::structured_addmm_out_cuda::impl(at::Tensor const&)", 0, 0);
  cb = add(t, im, GPD_NODE_FRAME, "cublasLtMatmul", 0, 0);
  add(t, add(t, cb, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 4);
  gpd_tree_proc_new(t)->pid = 7;
  CHECK(gpd_tree_finish(t, K) == 0, "finish");
}

static void operator_view(void) {
  const unsigned K = GPD_M_GKER, C = GPD_M_CPUTIME;
  gpd_tree_t t;
  build_ops(&t);
  CHECK(t.n == 20, "built %zu nodes, want 20", t.n);
  CHECK(gpd_fold_view(&t, GPD_VIEW_NATIVE, K) == 0 && t.n == 20, "--native: %zu nodes, want 20", t.n);
  CHECK(gpd_fold_view(&t, 0, K) == 0, "operator view");
  /* root, _start, fwd, aten::linear, aten::addmm, impl, cublasLtMatmul, <gpu kernel>, k */
  CHECK(t.n == 9, "operator view: %zu nodes, want 9", t.n);
  long fwd = kid(&t, kid(&t, (long)t.root, "_start"), "fwd (m.py:3)");
  CHECK(fwd >= 0 && gpd_tree_mvec_get(&t.nodes[fwd].excl, C) == 1, "THPVariable_linear's CPUTIME on fwd");
  long lin = kid(&t, fwd, "aten::linear"), mm = kid(&t, lin, "aten::addmm");
  CHECK(lin >= 0 && t.nodes[lin].kind == GPD_NODE_OPERATOR && t.nodes[lin].nkids == 1, "fwd > aten::linear alone");
  CHECK(mm >= 0 && t.nodes[mm].kind == GPD_NODE_OPERATOR, "aten::linear > aten::addmm (one node, two call sites)");
  long im = kid(&t, mm, "at::native::structured_addmm_out_cuda::impl(at::Tensor const&)");
  long k = kid(&t, kid(&t, kid(&t, im, "cublasLtMatmul"), "<gpu kernel>"), "k");
  CHECK(im >= 0 && t.nodes[im].kind == GPD_NODE_FRAME && !strcmp(t.nodes[im].module, "libtorch_cpu.so"),
        "aten::addmm > impl, a native frame with its module");
  CHECK(k >= 0 && gpd_tree_mvec_get(&t.nodes[k].excl, K) == 7, "k: GKER 7 (3 + 4)");
  CHECK(gpd_tree_mvec_get(&t.nodes[t.root].incl, K) == 7 && gpd_tree_mvec_get(&t.nodes[t.root].incl, C) == 1, "totals kept");
  gpd_tree_free(&t);

  build_ops(&t);
  CHECK(gpd_fold_view(&t, GPD_VIEW_PYTHON, K) == 0, "python view of the operators");
  /* root, fwd, aten::linear, aten::addmm, <gpu kernel>, k */
  CHECK(t.n == 6, "python view: %zu nodes, want 6", t.n);
  k = kid(&t, kid(&t, kid(&t, kid(&t, kid(&t, (long)t.root, "fwd (m.py:3)"), "aten::linear"), "aten::addmm"),
                  "<gpu kernel>"), "k");
  CHECK(k >= 0 && gpd_tree_mvec_get(&t.nodes[k].excl, K) == 7, "fwd > aten::linear > aten::addmm > <gpu kernel> > k: 7");
  gpd_tree_free(&t);

  build_ops(&t);
  CHECK(gpd_fold_view(&t, GPD_VIEW_PYTHON | GPD_VIEW_NATIVE, K) == 0 && t.n == 4,
        "--python --native: root, fwd, <gpu kernel>, k (%zu nodes)", t.n);
  gpd_tree_free(&t);
}

/* torch.nn's plumbing:
 *
 *   root > _start > python step (t.py:5)
 *     > Module._wrapped_call_impl (/p/torch/nn/modules/module.py:1779) > Module._call_impl (...:1790)
 *       > Net.forward (t.py:20)
 *         > Module._wrapped_call_impl (...:1779)           CPUTIME 2 (own)
 *           > Module._call_impl (...:1790) > Linear.forward (/p/torch/nn/modules/linear.py:134)
 *             > ffi > <gpu kernel> > k                     GKER 5
 *           > Module._call_impl (...:1800) > Linear.forward (same)
 *             > ffi > <gpu kernel> > k                     GKER 2
 *         > Module._call_impl (mine.py:3) > <gpu kernel> > k   GKER 1  (not torch.nn's: kept)
 *
 * gives step > Net.forward (CPUTIME 2) > Linear.forward > ffi > <gpu
 * kernel> > k (7) and Net.forward > Module._call_impl (mine.py:3) > ...
 * (1); --native changes nothing; --python drops ffi as well. */
#define MOD "/p/torch/nn/modules/module.py:"
static void build_modules(gpd_tree_t *t) {
  const unsigned K = GPD_M_GKER, C = GPD_M_CPUTIME;
  gpd_tree_init(t);
  uint64_t root = add(t, 0, GPD_NODE_ROOT, "<root>", 0, 0);
  uint64_t step = add(t, add(t, root, GPD_NODE_FRAME, "_start", 0, 0), GPD_NODE_PYTHON, "step (t.py:5)", 0, 0);
  uint64_t w = add(t, step, GPD_NODE_PYTHON, "Module._wrapped_call_impl (" MOD "1779)", 0, 0);
  uint64_t net = add(t, add(t, w, GPD_NODE_PYTHON, "Module._call_impl (" MOD "1790)", 0, 0), GPD_NODE_PYTHON,
                     "Net.forward (t.py:20)", 0, 0);
  uint64_t w2 = add(t, net, GPD_NODE_PYTHON, "Module._wrapped_call_impl (" MOD "1779)", C, 2);
  static const char *const lines[] = {"Module._call_impl (" MOD "1790)", "Module._call_impl (" MOD "1800)"};
  static const double gk[] = {5, 2};
  for (int i = 0; i < 2; i++) {
    uint64_t lin = add(t, add(t, w2, GPD_NODE_PYTHON, lines[i], 0, 0), GPD_NODE_PYTHON,
                       "Linear.forward (/p/torch/nn/modules/linear.py:134)", 0, 0);
    add(t, add(t, add(t, lin, GPD_NODE_FRAME, "ffi", 0, 0), GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL,
        "k", K, gk[i]);
  }
  uint64_t mine = add(t, net, GPD_NODE_PYTHON, "Module._call_impl (mine.py:3)", 0, 0);
  add(t, add(t, mine, GPD_NODE_PLACEHOLDER, "<gpu kernel>", 0, 0), GPD_NODE_KERNEL, "k", K, 1);
  gpd_tree_proc_new(t)->pid = 9;
  CHECK(gpd_tree_finish(t, K) == 0, "finish");
}

static void module_view(void) {
  const unsigned K = GPD_M_GKER, C = GPD_M_CPUTIME;
  gpd_tree_t t;
  build_modules(&t);
  CHECK(t.n == 20, "built %zu nodes, want 20", t.n);
  CHECK(gpd_fold_view(&t, GPD_VIEW_NATIVE, K) == 0 && t.n == 20, "--native: %zu nodes, want 20", t.n);
  CHECK(gpd_fold_view(&t, 0, K) == 0, "module view");
  /* root, _start, step, Net.forward, Linear.forward, ffi, <gpu kernel>, k,
   * Module._call_impl (mine.py:3), <gpu kernel>, k */
  CHECK(t.n == 11, "module view: %zu nodes, want 11", t.n);
  long net = kid(&t, kid(&t, kid(&t, (long)t.root, "_start"), "step (t.py:5)"), "Net.forward (t.py:20)");
  CHECK(net >= 0 && gpd_tree_mvec_get(&t.nodes[net].excl, C) == 2, "step > Net.forward, the plumbing's CPUTIME on it");
  long lin = kid(&t, net, "Linear.forward (/p/torch/nn/modules/linear.py:134)");
  long k = kid(&t, kid(&t, kid(&t, lin, "ffi"), "<gpu kernel>"), "k");
  CHECK(k >= 0 && gpd_tree_mvec_get(&t.nodes[k].excl, K) == 7, "Net.forward > Linear.forward > ffi > k: GKER 7 (5 + 2)");
  k = kid(&t, kid(&t, kid(&t, net, "Module._call_impl (mine.py:3)"), "<gpu kernel>"), "k");
  CHECK(k >= 0 && gpd_tree_mvec_get(&t.nodes[k].excl, K) == 1, "a Module._call_impl of another file is kept");
  gpd_tree_free(&t);

  build_modules(&t);
  CHECK(gpd_fold_view(&t, GPD_VIEW_PYTHON, K) == 0, "python view of the modules");
  /* root, step, Net.forward, Linear.forward, <gpu kernel>, k, mine, <gpu kernel>, k */
  CHECK(t.n == 9, "python view: %zu nodes, want 9", t.n);
  gpd_tree_free(&t);
}

int main(void) {
  python_view();
  operator_view();
  module_view();
  printf("%s\n", fails ? "FAIL" : "PASS fold");
  return fails != 0;
}
