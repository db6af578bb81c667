/* pyframes-backward.c - backward under forward (docs/PYTHON.md "Backward
 * under forward"): a kernel that PyTorch's autograd engine launches for a
 * backward node goes under the Python frames of the forward operation
 * that created the node, below `<backward>`, as Kineto links backward
 * operators to forward ones (autograd sequence numbers).
 *
 * Forward: every autograd Node takes its sequence number from a
 * thread-local counter when it is constructed
 * (at::sequence_number::get_and_increment) and remembers its thread's
 * RecordFunction id (at::RecordFunction::currentThreadId).  The generated
 * autograd kernels construct the node before they redispatch to the
 * kernel that launches, so at a launch from Python, a counter that moved
 * since the thread's last launch means that the newest node (counter - 1)
 * belongs to the operation now launching.  gpd_pyframes_fwd_record keeps
 * (thread id, sequence number) -> the launch's Python frames: the frames
 * as a path in a small table of Python paths (interned like the calling-
 * context tree, with a parent link per entry), the pair in a direct-
 * mapped table of FWD_SEQS entries (newest wins).
 *
 * Backward: on an engine thread (its path passes through
 * Engine::thread_main, pyframes-handoff.c), the node being evaluated is
 * torch::autograd::get_current_node() (the engine's NodeGuard sets it
 * around each node's evaluation); its sequence number and thread id are
 * read from the Node at the offsets of PyTorch 2.x, after a layout check,
 * and looked up.
 *
 * The three functions are found in libtorch_cpu.so's own .dynsym when the
 * module table first sees it (no dlopen/dlsym); any missing: one log line
 * and backward kernels stay under the caller of backward() (the handoff).
 * x86-64 only (the hidden return pointer of get_current_node is rdi).
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "gpuprof/error.h"
#include "gpuprof/intern.h"
#include "gpuprof/log.h"
#include "internal.h"
#include "pyframes.h"
#include "pyframes-internal.h"

/* libtorch's functions (Itanium C++ ABI names) */
#define FWD_SYM_PEEK "_ZN2at15sequence_number4peekEv"
#define FWD_SYM_TID "_ZN2at14RecordFunction15currentThreadIdEv"
#define FWD_SYM_NODE "_ZN5torch8autograd16get_current_nodeEv"

/* torch::autograd::Node of PyTorch 2.x, in one of two layouts (x86-64,
 * libstdc++), bytes from the Node:
 * shared: torch/csrc/autograd/function.h, Node : std::enable_shared_from_
 *   this<Node>, held by std::shared_ptr (get_current_node returns the
 *   Node and its control block): vtable pointer; the weak_ptr to itself
 *   (the Node, the control block); then sequence_nr_, topological_nr_,
 *   has_parent_, thread_id_.
 * intrusive: torch/csrc/autograd/node.h of later 2.x, Node :
 *   c10::intrusive_ptr_target, held by c10::intrusive_ptr (the Node
 *   alone): vtable pointer; combined_refcount_ (strong count in bits
 *   0..31, weak count in 32..62, bit 63 "has a PyObject"; earlier c10:
 *   refcount_ and weakcount_, 32 bits each, the same bytes); then the
 *   same four fields. */
#define NODE_WEAK_PTR 8
#define NODE_WEAK_CTRL 16
#define NODE_SEQ 24
#define NODE_TID 48
#define NODE_SIZE 56
#define INODE_REFS 8
#define INODE_SEQ 16
#define INODE_TID 40
#define INODE_SIZE 48
#define INODE_REFS_MAX 0x0fffffffu /* c10's kImpracticallyHugeReferenceCount */
/* std::_Sp_counted_base: vtable pointer, then _M_use_count (int) */
#define CTRL_USE 8
#define LAYOUT_SHARED 1
#define LAYOUT_INTRUSIVE 2

#define FWD_SEQS (1u << 17)  /* (thread, sequence number) entries, direct-mapped */
#define FWD_PATHS (1u << 16) /* distinct Python paths of forward operations */

typedef struct fwd_rev_s {
  _Atomic uint64_t key;    /* the path's innermost Python key; 0 = being filled */
  _Atomic uint32_t parent; /* the path one frame shorter, 0 = none */
  _Atomic uint32_t depth;  /* its number of frames */
} fwd_rev_t;

static struct {
  _Atomic int on;                /* 1: symbols found, tables mapped; 0 off (again) */
  uint64_t (*peek)(void);        /* at::sequence_number::peek */
  uint64_t (*tid)(void);         /* at::RecordFunction::currentThreadId */
  void *(*node)(void *ret);      /* torch::autograd::get_current_node (hidden return pointer) */
  _Atomic uint64_t *seq;         /* FWD_SEQS entries: tag << 32 | path id; 0 empty */
  gpd_intern_t paths;            /* (parent path, Python key) -> path id */
  fwd_rev_t *rev;                /* by path id: its key, parent and depth */
  int looked;
  _Atomic int full_logged, off_logged;
  _Atomic int known;             /* LAYOUT_*: a node passed that layout's checks; 0 none yet */
} fwd;

/* Switch the link off for good (a Node that is not laid out as known):
 * one line. */
static void fwd_off(const char *why) {
  atomic_store_explicit(&fwd.on, 0, memory_order_release);
  if (!atomic_exchange(&fwd.off_logged, 1))
    GPD_LOG(GPD_LOG_WARN, "backward: libtorch's autograd Node is not laid out as in PyTorch 2.x (%s); "
            "backward kernels stay under the caller of backward()", why);
}

void gpd__pyframes_fwd_module(const struct dl_phdr_info *info, const char *base) {
  if (fwd.looked++)
    return; /* once per process (module.c calls under its lock) */
#if !defined(__x86_64__)
  (void)info;
  GPD_LOG(GPD_LOG_WARN, "backward: %s: backward under forward is built for x86-64 only; backward kernels stay "
          "under the caller of backward()", base);
#else
  static const struct {
    const char *sym, *what;
  } need[3] = {{FWD_SYM_PEEK, "at::sequence_number::peek"},
               {FWD_SYM_TID, "at::RecordFunction::currentThreadId"},
               {FWD_SYM_NODE, "torch::autograd::get_current_node"}};
  uintptr_t a[3];
  for (int i = 0; i < 3; i++) {
    size_t size;
    if (gpd__pyframes_dynsym(info, need[i].sym, &a[i], &size) < 0) {
      GPD_LOG(GPD_LOG_WARN, "backward: %s has no %s (symbol %s); backward kernels stay under the caller of "
              "backward()", base, need[i].what, need[i].sym);
      return;
    }
  }
  void *seq = mmap(NULL, FWD_SEQS * sizeof fwd.seq[0], PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void *rev = mmap(NULL, (FWD_PATHS + 1) * sizeof fwd.rev[0], PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  int err = seq == MAP_FAILED || rev == MAP_FAILED ? -ENOMEM : gpd_intern_init(&fwd.paths, FWD_PATHS);
  if (err < 0) {
    if (seq != MAP_FAILED)
      munmap(seq, FWD_SEQS * sizeof fwd.seq[0]);
    if (rev != MAP_FAILED)
      munmap(rev, (FWD_PATHS + 1) * sizeof fwd.rev[0]);
    GPD_LOG(GPD_LOG_WARN, "backward: no tables (%s); backward kernels stay under the caller of backward()",
            gpd_strerror(err));
    return;
  }
  fwd.seq = seq;
  fwd.rev = rev;
  fwd.peek = (uint64_t (*)(void))a[0];
  fwd.tid = (uint64_t (*)(void))a[1];
  fwd.node = (void *(*)(void *))a[2];
  atomic_store_explicit(&fwd.on, 1, memory_order_release);
  GPD_LOG(GPD_LOG_INFO, "backward: autograd sequence numbers and torch::autograd::get_current_node found in %s; "
          "backward kernels go under the Python frames of their forward operation, below <backward>", base);
#endif
}

/* Slot of (thread id, sequence number): consecutive numbers of one thread
 * take consecutive slots, so a thread's last FWD_SEQS nodes all stay. */
static inline uint32_t fwd_slot(uint64_t tid, uint64_t seq) {
  return (uint32_t)(seq + tid * 0x9e3779b1ull) & (FWD_SEQS - 1);
}

/* The entry's check bits for (thread id, sequence number). */
static inline uint64_t fwd_tag(uint64_t tid, uint64_t seq) {
  uint64_t x = seq ^ (tid * 0x9e3779b97f4a7c15ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x >> 32;
}

/* The path id of t's Python frames (t->key, innermost first), interning
 * root first only the suffix that differs from the thread's last record;
 * 0 when the table is full.  t->fwd_id / fwd_key / fwd_n hold the path
 * last recorded or resolved on this thread, root first: fwd_id[j] is the
 * path of fwd_key[0..j] (fwd_find keeps the same meaning). */
static uint32_t fwd_path(gpd_pyframes_thread_t *t) {
  uint32_t n = t->n, j = 0, lim = t->fwd_n < n ? t->fwd_n : n;
  while (j < lim && t->fwd_key[j] == t->key[n - 1 - j])
    j++;
  t->fwd_n = j;
  uint32_t parent = j ? t->fwd_id[j - 1] : 0;
  for (; j < n; j++) {
    uint64_t k = t->key[n - 1 - j];
    uint32_t id = 0;
    int is_new = 0;
    if (gpd_intern_get(&fwd.paths, parent, k, &id, &is_new) != 0 || id > FWD_PATHS) {
      if (!atomic_exchange(&fwd.full_logged, 1))
        GPD_LOG(GPD_LOG_WARN, "backward: table of forward Python paths full (%u); later forward operations' "
                "backward kernels stay under the caller of backward()", FWD_PATHS);
      return 0;
    }
    if (is_new) {
      atomic_store_explicit(&fwd.rev[id].parent, parent, memory_order_relaxed);
      atomic_store_explicit(&fwd.rev[id].depth, j + 1, memory_order_relaxed);
      atomic_store_explicit(&fwd.rev[id].key, k, memory_order_release);
    }
    t->fwd_key[j] = k;
    t->fwd_id[j] = id;
    t->fwd_n = j + 1;
    parent = id;
  }
  return parent;
}

void gpd_pyframes_fwd_record(gpd_pyframes_thread_t *t) {
  if (!atomic_load_explicit(&fwd.on, memory_order_acquire) || t->n == 0)
    return;
  uint64_t s = fwd.peek();
  if (s == t->fwd_seq)
    return; /* no autograd node since this thread's last record */
  t->fwd_seq = s;
  if (s == 0 || s > (1ull << 48))
    return;
  /* the thread made a node, so it has its id already (Node's constructor
   * asked for it): asking does not hand out a new one */
  if (!t->fwd_tid)
    t->fwd_tid = fwd.tid();
  uint32_t id = fwd_path(t);
  if (id)
    atomic_store_explicit(&fwd.seq[fwd_slot(t->fwd_tid, s - 1)], fwd_tag(t->fwd_tid, s - 1) << 32 | id,
                          memory_order_release);
}

/* Give back the reference that get_current_node took (the engine's
 * NodeGuard and its task hold two more while the node is evaluated): the
 * shared_ptr's use count decremented atomically, never to 0 (that would
 * need the destructor: the reference is kept instead). */
FOREIGN static void fwd_put(uintptr_t ctrl) {
  _Atomic int *use = (_Atomic int *)(ctrl + CTRL_USE);
  int v = atomic_load_explicit(use, memory_order_relaxed);
  while (v > 1 && !atomic_compare_exchange_weak_explicit(use, &v, v - 1, memory_order_acq_rel, memory_order_relaxed))
    ;
}

/* The same for an intrusive_ptr: the strong count in the combined count,
 * only from 3 or more (c10 acts on the transitions 1 -> 0 (destroy) and
 * 2 -> 1 (a PyObject's reference), which the shim cannot do). */
FOREIGN static void fwd_iput(uintptr_t node) {
  _Atomic uint64_t *refs = (_Atomic uint64_t *)(node + INODE_REFS);
  uint64_t v = atomic_load_explicit(refs, memory_order_relaxed);
  while ((uint32_t)v > 2 &&
         !atomic_compare_exchange_weak_explicit(refs, &v, v - 1, memory_order_acq_rel, memory_order_relaxed))
    ;
}

/* A plausible intrusive_ptr_target count with our reference in it: strong
 * 2..INODE_REFS_MAX, weak 1..INODE_REFS_MAX (a strong reference counts as
 * a weak one too). */
static inline int fwd_irefs_ok(uint64_t v) {
  uint32_t strong = (uint32_t)v, weak = (uint32_t)((v & ~(1ull << 63)) >> 32);
  return strong >= 2 && strong <= INODE_REFS_MAX && weak >= 1 && weak <= INODE_REFS_MAX;
}

/* The Python keys of path id into t->key, innermost first; their count,
 * 0 for a path not (yet) complete.  Walks up the parent links only until
 * the path last resolved on this thread (t->fwd_*), whose root part is
 * copied: consecutive backward nodes share most of their forward frames,
 * and each link is a dependent load. */
static int fwd_keys(gpd_pyframes_thread_t *t, uint32_t id) {
  if (id == 0 || id > FWD_PATHS || !atomic_load_explicit(&fwd.rev[id].key, memory_order_acquire))
    return 0;
  uint32_t depth = atomic_load_explicit(&fwd.rev[id].depth, memory_order_relaxed), d = depth, n = 0;
  if (depth == 0 || depth > GPD_PY_MAX)
    return 0;
  /* the differing suffix, innermost first, into t->key and (root first)
   * into the memo, whose valid prefix shrinks before an entry is written */
  while (d > 0 && !(d <= t->fwd_n && t->fwd_id[d - 1] == id)) {
    uint64_t k = id && id <= FWD_PATHS ? atomic_load_explicit(&fwd.rev[id].key, memory_order_acquire) : 0;
    if (!k) {
      t->fwd_n = 0; /* a path still being filled by its forward thread, or a bad link */
      return 0;
    }
    if (t->fwd_n > d - 1)
      t->fwd_n = d - 1;
    t->fwd_key[d - 1] = k;
    t->fwd_id[d - 1] = id;
    t->key[n++] = k;
    id = atomic_load_explicit(&fwd.rev[id].parent, memory_order_relaxed);
    d--;
  }
  if (d == 0 && id != 0) {
    t->fwd_n = 0;
    return 0;
  }
  for (uint32_t j = d; j-- > 0;) /* the shared root part */
    t->key[n++] = t->fwd_key[j];
  t->fwd_n = depth;
  return (int)n;
}

FOREIGN int gpd__pyframes_fwd_find(gpd_pyframes_thread_t *t) {
  if (!atomic_load_explicit(&fwd.on, memory_order_acquire))
    return 0;
  /* std::shared_ptr<Node>: the Node, its control block; c10::intrusive_ptr:
   * the Node, and ret[1] stays 0 */
  uintptr_t ret[2] = {0, 0};
  void *r = fwd.node(ret);
  uintptr_t node = ret[0], ctrl = ret[1];
  if (r != (void *)ret) {
    fwd_off("get_current_node does not return through a hidden pointer");
    return 0;
  }
  if (!node)
    return 0; /* no node being evaluated */
  /* Until one node passed, the reads are checked ones (a function that
   * returns something else may hand back any pointer); then they are
   * plain (a live reference of the same function, of the same kind). */
  int known = atomic_load_explicit(&fwd.known, memory_order_relaxed);
  uint64_t seq, tid;
  if (ctrl) {
    /* shared: the Node's weak_ptr to itself (enable_shared_from_this)
     * names the same Node and control block as the returned shared_ptr */
    if (known == LAYOUT_INTRUSIVE || (node & 7) || (ctrl & 7) ||
        (!known && (!rd_ok(t, node, NODE_SIZE) || !rd_ok(t, ctrl, CTRL_USE + 4))) ||
        ld_ptr(node + NODE_WEAK_PTR) != node || ld_ptr(node + NODE_WEAK_CTRL) != ctrl) {
      fwd_off("its shared_ptr is not the Node's own weak reference"); /* that reference stays taken */
      return 0;
    }
    seq = ld_ptr(node + NODE_SEQ);
    tid = ld_ptr(node + NODE_TID);
    fwd_put(ctrl);
  } else {
    /* intrusive: a vtable pointer and a count that holds our reference */
    if (known == LAYOUT_SHARED || (node & 7) || (!known && !rd_ok(t, node, INODE_SIZE)) || !ld_ptr(node) ||
        (ld_ptr(node) & 7) || !fwd_irefs_ok(ld_ptr(node + INODE_REFS))) {
      fwd_off("a Node returned alone whose reference count is not an intrusive_ptr_target's");
      return 0;
    }
    seq = ld_ptr(node + INODE_SEQ);
    tid = ld_ptr(node + INODE_TID);
    fwd_iput(node);
  }
  if (seq == UINT64_MAX)
    return 0; /* a node of no forward operation (AccumulateGrad) */
  if (tid == 0 || tid >= (1ull << 32) || seq >= (1ull << 48)) {
    fwd_off(tid == 0 || tid >= (1ull << 32) ? "a thread id out of range" : "a sequence number out of range");
    return 0;
  }
  if (!known)
    atomic_store_explicit(&fwd.known, ctrl ? LAYOUT_SHARED : LAYOUT_INTRUSIVE, memory_order_relaxed);
  uint64_t e = atomic_load_explicit(&fwd.seq[fwd_slot(tid, seq)], memory_order_acquire);
  uint32_t id = (uint32_t)e;
  if (!id || e >> 32 != fwd_tag(tid, seq))
    return 0; /* its forward launched nothing from Python, or was overwritten */
  return fwd_keys(t, id);
}
