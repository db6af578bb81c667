/* fold.c - views of a calling-context tree that fold frames away
 * (docs/PYTHON.md "The Python view", "Operators"):
 *   - the operator view (`report`, `tree`, `export` by default; --native
 *     turns it off): PyTorch's dispatcher frames are folded and each
 *     operator entry `at::_ops::NAME::call` becomes an operator node
 *     `aten::NAME`, as Kineto and Nsight Systems name operators;
 *   - in both, torch.nn's call plumbing (`Module._wrapped_call_impl`,
 *     `Module._call_impl` of torch/nn/modules/module.py, two Python frames
 *     per module level) is folded, so that each module's own
 *     `CLASS.forward` frame follows its parent module's: the module
 *     names as frames (--native keeps them);
 *   - the Python view (--python): only Python frames, operators,
 *     placeholders (`<backward>`, `<graph replay>`, NVTX ranges,
 *     `<gpu kernel>`) and the GPU part below them, as py-spy shows Python
 *     code; every other native frame is folded away.
 * One walk does both: a folded node's children hang below its nearest kept
 * ancestor, its exclusive values go to that ancestor, and kept nodes equal
 * in kind, label, module, offset and raw name below one parent merge.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/hash.h"

/* Id of a kept node below new parent pid: equal (kind, label, module,
 * offset, raw name) below one parent are one node. */
static uint64_t fold_id(uint64_t pid, int kind, const char *label, const gpd_tnode_t *n) {
  uint64_t h = gpd_hash64(&pid, sizeof pid, (uint64_t)kind);
  h = gpd_hash64(label, strlen(label), h);
  if (kind != GPD_NODE_OPERATOR) { /* one operator node, whatever its call sites */
    h = gpd_hash64(n->module, strlen(n->module), h);
    h = gpd_hash64(n->raw_name, strlen(n->raw_name), h ^ n->offset);
  }
  return h ? h : 1;
}

static int mvec_add_all(gpd_mvec_t *to, const gpd_mvec_t *from) {
  for (uint32_t j = 0; j < from->n; j++)
    if (gpd_tree_mvec_add(to, from->v[j].id, from->v[j].v) < 0) return -ENOMEM;
  return 0;
}

static int starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* Frames of PyTorch's dispatcher and its generated glue between an
 * operator's entry and its implementation (c10 dispatch, boxing wrappers,
 * the autograd and ADInplaceOrView kernels, redispatch entries, the
 * registration wrappers of a backend, the Python binding). */
static int dispatcher_frame(const char *fn) {
  static const char *const pfx[] = {
      "c10::impl::",          "c10::Dispatcher::",         "c10::KernelFunction::",
      "c10::BoxedKernel::",   "c10::OperatorHandle::",     "c10::TypedOperatorHandle<",
      "torch::autograd::VariableType::", "torch::ADInplaceOrView::", "torch::autograd::THPVariable_",
      "torch::autograd::(anonymous namespace)::THPVariable_"};
  for (size_t i = 0; i < sizeof pfx / sizeof pfx[0]; i++)
    if (starts(fn, pfx[i])) return 1;
  if (starts(fn, "at::_ops::") && strstr(fn, "::redispatch")) return 1;
  /* at::(anonymous namespace)::[(anonymous namespace)::]wrapper_CUDA_mm(...) */
  if (starts(fn, "at::(anonymous namespace)::")) {
    const char *w = strstr(fn, "::wrapper_"), *args = fn;
    while ((args = strchr(args, '(')) && starts(args, "(anonymous namespace)"))
      args++;
    return w && (!args || w < args);
  }
  return 0;
}

/* The operator NAME of `at::_ops::NAME::call(...)` into op ("aten::NAME");
 * 1 when fn is an operator's entry, else 0. */
static int operator_frame(const char *fn, char *op, size_t cap) {
  if (!starts(fn, "at::_ops::")) return 0;
  const char *name = fn + strlen("at::_ops::"), *end = strstr(name, "::");
  if (!end || end == name || !starts(end, "::call") || (end[6] && end[6] != '(')) return 0;
  snprintf(op, cap, "aten::%.*s", (int)(end - name), name);
  return 1;
}

/* at::native::NAME(...) directly below aten::NAME: the operator's own
 * implementation, nothing the operator node does not say already. */
static int own_native(const char *fn, const char *parent_label) {
  if (!starts(fn, "at::native::") || !starts(parent_label, "aten::")) return 0;
  const char *name = fn + strlen("at::native::"), *op = parent_label + strlen("aten::");
  size_t n = strlen(op);
  return strncmp(name, op, n) == 0 && name[n] == '(';
}

/* torch.nn's plumbing between a module call `m(x)` and `CLASS.forward`:
 * Python frames `Module._wrapped_call_impl (.../torch/nn/modules/module.py:N)`
 * and `Module._call_impl (...)` (PyTorch 2.x; 1.x had only the latter). */
static int module_plumbing(const gpd_tnode_t *n) {
  if (n->kind != GPD_NODE_PYTHON) return 0;
  const char *l = n->label;
  if (!starts(l, "Module._call_impl (") && !starts(l, "Module._wrapped_call_impl (")) return 0;
  const char *f = strstr(l, " (");
  return f && strstr(f, "torch/nn/modules/module.py:") != NULL;
}

/* What the view does with node n below kept node par: -1 fold it away,
 * 0 keep it as it is, 1 keep it as operator node `op`. */
static int classify(const gpd_tnode_t *n, const gpd_tnode_t *par, unsigned view, char *op, size_t cap) {
  if (!(view & GPD_VIEW_NATIVE) && module_plumbing(n)) return -1;
  if (n->kind != GPD_NODE_FRAME) return 0;
  const char *fn = n->label;
  if (!(view & GPD_VIEW_NATIVE) && operator_frame(fn, op, cap)) return 1;
  if (view & GPD_VIEW_PYTHON) return -1;
  if (view & GPD_VIEW_NATIVE) return 0;
  return dispatcher_frame(fn) || own_native(fn, par->label) ? -1 : 0;
}

/* 1 when the operator view changes something in t (a frame of PyTorch's
 * dispatcher or torch.nn's plumbing is in it): trees of other programs
 * are left as they are. */
static int has_dispatcher(const gpd_tree_t *t) {
  char op[256];
  for (size_t i = 0; i < t->n; i++)
    if ((t->nodes[i].kind == GPD_NODE_FRAME &&
         (dispatcher_frame(t->nodes[i].label) || operator_frame(t->nodes[i].label, op, sizeof op))) ||
        module_plumbing(&t->nodes[i]))
      return 1;
  return 0;
}

static int copy_frames(gpd_tree_t *nt, long to, const gpd_tnode_t *n) {
  if (nt->nodes[to].nframes) return 0; /* merged: the first one's frames */
  for (uint32_t k = 0; k < n->nframes; k++) {
    const gpd_tframe_t *f = &n->frames[k];
    if (gpd_tree_frame_add(nt, (size_t)to, f->function, f->file, f->line, f->inlined) < 0) return -ENOMEM;
  }
  return 0;
}

int gpd_fold_view(gpd_tree_t *t, unsigned view, unsigned sort_metric) {
  if (t->root == SIZE_MAX) return 0;
  if (!(view & GPD_VIEW_PYTHON) && ((view & GPD_VIEW_NATIVE) || !has_dispatcher(t))) return 0;
  gpd_tree_t nt;
  gpd_tree_init(&nt);
  int err = 0;
  char op[256];
  /* pre-order: (old node, index of its nearest kept ancestor in nt) */
  size_t *st = malloc(2 * (t->n + 1) * sizeof *st), ns = 0;
  if (!st) return -ENOMEM;
  const gpd_tnode_t *r = &t->nodes[t->root];
  long nr = gpd_tree_node_add(&nt, r->id, 0, r->kind, r->label, r->module, r->offset, r->raw_name);
  if (nr < 0 || (err = mvec_add_all(&nt.nodes[nr].excl, &r->excl)) < 0) {
    err = -ENOMEM;
    goto done;
  }
  for (uint32_t k = 0; k < r->nkids; k++) {
    st[ns++] = r->kids[k];
    st[ns++] = (size_t)nr;
  }
  while (ns) {
    size_t at = st[--ns], i = st[--ns];
    const gpd_tnode_t *n = &t->nodes[i];
    long to = (long)at;
    int c = classify(n, &nt.nodes[at], view, op, sizeof op);
    if (c >= 0) {
      uint64_t pid = nt.nodes[at].id;
      int kind = c ? GPD_NODE_OPERATOR : n->kind;
      const char *label = c ? op : n->label;
      to = gpd_tree_node_add(&nt, fold_id(pid, kind, label, n), pid, kind, label, c ? "" : n->module,
                             c ? 0 : n->offset, c ? "" : n->raw_name);
      if (to < 0) {
        err = (int)to;
        goto done;
      }
      if (!c && (err = copy_frames(&nt, to, n)) < 0) goto done;
    }
    /* a folded node's own values go to its nearest kept ancestor */
    if ((err = mvec_add_all(&nt.nodes[to].excl, &n->excl)) < 0) goto done;
    for (uint32_t k = 0; k < n->nkids; k++) {
      st[ns++] = n->kids[k];
      st[ns++] = (size_t)to;
    }
  }
  /* what describes the tree moves over */
  nt.procs = t->procs;
  nt.nprocs = t->nprocs;
  nt.gpubins = t->gpubins;
  nt.ngpubins = t->ngpubins;
  nt.nhidden = t->nhidden;
  t->procs = NULL;
  t->nprocs = 0;
  t->gpubins = NULL;
  t->ngpubins = 0;
  if ((err = gpd_tree_finish(&nt, sort_metric)) < 0) goto done;
  gpd_tree_free(t);
  *t = nt;
  gpd_tree_init(&nt);
done:
  free(st);
  gpd_tree_free(&nt);
  return err;
}
