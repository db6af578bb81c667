/* pyframes.h - CPython frames spliced into captured call paths
 * (pyframes.c, pyframes-handoff.c; docs/PYTHON.md).
 *
 * At a capture on a thread that runs Python, the interpreter's frames
 * (function, file, line) replace the native frames of
 * _PyEval_EvalFrameDefault, one group of Python frames per evaluation
 * activation, in order (as py-spy --native shows them).  The frames are
 * read from the thread's own frame chain through per-version layouts
 * (CPython 3.11 and 3.12), without the GIL and without calling into the
 * interpreter; every pointer is checked before it is read.
 *
 * A Python frame is interned like a native call site, under a key whose
 * bits 48..63 are GPD_PY_KEY_TAG (native keys are addresses below 2^48
 * with a module address tag that would reach 0xffff only after 65 535
 * unloads; a call site is never below 2^16, the Python site index is).
 */
#ifndef GPUPROF_SHIM_PYFRAMES_H
#define GPUPROF_SHIM_PYFRAMES_H

#include <link.h>
#include <stdint.h>

#include "gpuprof/record.h"

#define GPD_PY_KEY_TAG 0xffffull
/** Python frames kept per capture (innermost win). */
#define GPD_PY_MAX 256
/** Frames of earlier walks remembered per thread (power of two). */
#define GPD_PY_MEMO 256
/** Per-thread (code object, instruction) -> site cache entries. */
#define GPD_PY_CACHE 256
/** Per-thread cache of pages known readable (4-way sets). */
#define GPD_PY_PAGES 512
/** Frames of the last walk the next one prefetches (innermost first). */
#define GPD_PY_PF 32
/** Code objects a worker thread remembers as handoff functions or not. */
#define GPD_PY_HCODE 32

static inline int gpd_pyframes_is_key(uint64_t k) { return (k >> 48) == GPD_PY_KEY_TAG; }

/** Per-thread state of the Python frame walk (embedded in the capture
 *  memo; written only by captures on its thread). */
typedef struct gpd_pyframes_thread_s {
  uint32_t n;                  /* Python frames of the last walk */
  uint32_t nact;               /* evaluation activations seen */
  uint32_t tries;              /* walks while no interpreter is known */
  uint64_t key[GPD_PY_MAX];    /* intern keys, innermost first */
  uint16_t act[GPD_PY_MAX];    /* activation of each frame (0 = innermost) */
  uint32_t checks;             /* page checks since the page cache was emptied */
  uintptr_t page[GPD_PY_PAGES]; /* page numbers known readable (0 = none) */
  struct {
    uintptr_t code, instr;     /* code object, instruction pointer */
    uintptr_t names;           /* filename ^ qualname ^ linetable pointers */
    uint64_t key;
  } cache[GPD_PY_CACHE];
  /* frames of earlier walks by address (frame, code, instruction, code's
   * name pointers, key or 0): an unchanged frame is not checked and
   * looked up again (direct-mapped) */
  struct {
    uintptr_t f, co, instr, names;
    uint64_t key;
  } memo[GPD_PY_MEMO];
  /* the last walk's thread state, frame-chain holder, and first frames
   * and their code objects: where the next walk will most likely read
   * (gpd_pyframes_prefetch) */
  uint32_t pf_n;
  uintptr_t pf_ts, pf_cf;
  uintptr_t pf_f[GPD_PY_PF], pf_co[GPD_PY_PF];
  /* the merged path (native + Python), innermost first */
  uintptr_t merged[GPD_PY_MAX + 288];
  /* handoff (gpd_pyframes_handoff): key[0..n) are the frames of the
   * thread that handed work to this one when hand != 0 (dispatch index +
   * 1), hand_label the intern key of its placeholder (a site key of
   * GPD_PY_KEY_TAG); the caller's frames as last walked, by (thread state, top frame,
   * its code object and instruction); code objects seen on top of a
   * thread, with the dispatch entries whose handoff functions they are
   * (bit k: entry k) */
  uint32_t hand;
  uint64_t hand_label;
  uint32_t h_n;
  uintptr_t h_ts, h_f, h_co, h_instr;
  uint64_t h_key[GPD_PY_MAX];
  struct {
    uintptr_t co, names;
    uint32_t mask;
  } hcode[GPD_PY_HCODE];
  /* backward under forward (pyframes-backward.c): this thread's autograd
   * sequence counter at its last recorded capture, its RecordFunction
   * thread id (0 = not asked yet), and the Python path it recorded or
   * resolved last, root first, as keys and their ids in the forward-path
   * table (fwd_id[j] is the path of fwd_key[0..j]: the next record
   * interns, the next resolution reads, only the part that differs) */
  uint64_t fwd_seq, fwd_tid;
  uint32_t fwd_n;
  uint64_t fwd_key[GPD_PY_MAX];
  uint32_t fwd_id[GPD_PY_MAX];
} gpd_pyframes_thread_t;

/** Walk the calling thread's Python frames into t (key/act/n/nact).
 *  Returns the number of Python frames (0: none, or Python not known /
 *  not supported in this process; never an error to the caller).  Lazily
 *  finds the interpreter on first use; an unknown version logs once and
 *  stays off.  Application thread, no locks, no syscalls in the steady
 *  state (a page not seen before costs one process_vm_readv). */
int gpd_pyframes_walk(gpd_pyframes_thread_t *t);

/** Prefetch what the next gpd_pyframes_walk on t will most likely read
 *  (the last walk's thread state, frames, their memo entries and code
 *  objects' name fields), so that the walk's chain of dependent loads
 *  finds them in cache instead of missing one after another (a loop's
 *  consecutive operations share most outer frames).  Only prefetch
 *  instructions (never fault); call it early in a capture.  Application
 *  thread that owns t. */
void gpd_pyframes_prefetch(const gpd_pyframes_thread_t *t);

/** The same walk from the CPU sampler's signal handler (cpu-sampler.c):
 *  async-signal-safe -- no allocation (site texts live in a static
 *  arena), no lock, no logging, no symbol lookup; the only system calls
 *  are process_vm_readv / mincore for a page not seen before, and the one
 *  library call pthread_getspecific (glibc: a read of the calling thread's
 *  own key array).  0 frames until the interpreter was found by a capture
 *  or by gpd_pyframes_service; the thread-state key it may find itself.
 *  t must be the thread's sample-only state (never the captures'). */
int gpd_pyframes_walk_signal(gpd_pyframes_thread_t *t);

/** From the constructor and the connection thread while CPU sampling is
 *  on: look up the interpreter (a CPU-only Python program makes no
 *  capture that would), and log once when Python frames are on. */
void gpd_pyframes_service(void);

/** Handoff (docs/PYTHON.md "Work handed to a worker thread"): on a
 *  thread whose own walk found no Python frames, when native path
 *  ips[0..n) (return addresses, innermost first) passes through a known
 *  dispatch function (torch::autograd::Engine::thread_main, found when its
 *  library was loaded): for PyTorch's engine, first the Python frames
 *  recorded at the forward operation of the autograd node being evaluated
 *  (pyframes-backward.c: one call into libtorch, get_current_node, and
 *  its reference given back; docs/PYTHON.md "Backward under forward");
 *  else find the one Python thread blocked in a handoff
 *  function of that dispatch (torch/autograd/graph.py
 *  _engine_run_backward, ...) by walking the interpreter's thread-state
 *  list, and put its Python frames into t (key/n, nact = 0, hand = entry +
 *  1) for gpd_pyframes_splice.  Returns the number of frames carried (0:
 *  no dispatch frame, none or several blocked threads, Python not known).
 *  Another thread's memory is read with the same page checks as the own
 *  walk and validated by reading its top frame again; the walk is cached
 *  per (thread state, top frame, code, instruction), so a backward pass
 *  walks its caller once.  Application thread that owns t; no lock, no
 *  allocation, no system call in the steady state. */
int gpd_pyframes_handoff(gpd_pyframes_thread_t *t, const uintptr_t *ips, int n);

/** From the module table's refresh (module.c, under its lock), for each
 *  library newly mapped: when its basename starts with a dispatch entry's
 *  library name, look its dispatch symbol up in the library's dynamic
 *  symbol table (address and st_size) and publish the range; a symbol
 *  that is absent logs one line (the native path stays). */
void gpd_pyframes_module(const struct dl_phdr_info *info, const char *path);

/** Backward under forward (docs/PYTHON.md "Backward under forward"),
 *  forward side: after a walk that found the calling thread's own Python
 *  frames (t->key, t->n), when libtorch's autograd symbols were found,
 *  read the thread's autograd sequence counter
 *  (at::sequence_number::peek); if it moved since the thread's last
 *  record, the newest autograd node (counter - 1) was created since, by
 *  the operation now launching: remember (its RecordFunction thread id,
 *  sequence number) -> these Python frames in a bounded process-wide
 *  table (newest wins).  Application thread that owns t; no lock; no
 *  allocation (tables mapped when libtorch was found); one call into
 *  libtorch (a thread-local load), two on the thread's first record. */
void gpd_pyframes_fwd_record(gpd_pyframes_thread_t *t);

/** Splice the walked Python frames into native path ips[0..n) (return
 *  addresses, innermost first, shim frames already cut): each native
 *  frame inside _PyEval_EvalFrameDefault is replaced by the Python frames
 *  of the matching activation (innermost activation = innermost such
 *  frame), as key + 1 (so that "value - 1" is the intern key, as for call
 *  sites).  After gpd_pyframes_handoff (t->hand): the native path stays
 *  whole, and the dispatch's placeholder (`<backward>`, `<worker>`) and
 *  the carried Python frames follow it outward.  Returns the merged length (at most max) and *out (t->merged). */
int gpd_pyframes_splice(gpd_pyframes_thread_t *t, const uintptr_t *ips, int n, int max,
                        const uintptr_t **out);

/** Index of the innermost frame of ips[0..n) (return addresses,
 *  innermost first) inside _PyEval_EvalFrameDefault, or -1 (none, or
 *  Python not known).  Statistics (capture.c, GPUPROF_SHIM_STATS=1). */
int gpd_pyframes_eval_frame(const uintptr_t *ips, int n);

/** Fill NODE record r for Python key `key` (flags GPD_NODE_F_PYTHON, module
 *  = string id of "qualname\tfilename", offset = line), announcing the
 *  string first.  0, or -ENOENT (unknown key) / -ENOSPC (string not
 *  announced). */
int gpd_pyframes_node(gpd_rec_node_t *r, uint64_t key);

#endif
