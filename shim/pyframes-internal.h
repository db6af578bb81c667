/* pyframes-internal.h - what pyframes.c (finding the interpreter,
 * lines, sites, the walk, splicing) and pyframes-handoff.c (work handed to
 * a framework's worker thread) share: the frame layout table's type, the
 * process-wide interpreter state, the checked-read helpers (inline: the
 * walk calls them per frame) and the gpd__pyframes_* functions one file
 * calls in the other.  Only python-*.c include it. */
#ifndef GPUPROF_SHIM_PYFRAMES_INTERNAL_H
#define GPUPROF_SHIM_PYFRAMES_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pyframes.h"

/* Byte offsets of the fields read, per CPython minor version (x86_64,
 * release builds); the table is in pyframes.c. */
typedef struct pylayout_s {
  unsigned hex;                     /* PY_VERSION_HEX >> 16 */
  const char *name;
  unsigned rt_tss, rt_main;         /* _PyRuntimeState: autoTSSkey, interpreters.main */
  unsigned ts_interp, ts_cframe, ts_next; /* PyThreadState */
  unsigned in_threads;              /* PyInterpreterState.threads.head */
  unsigned cf_current;              /* _PyCFrame.current_frame */
  unsigned fr_code, fr_prev, fr_instr, fr_owner, fr_size;
  int fr_entry;                     /* is_entry (3.11), -1 none */
  int owner_cstack;                 /* FRAME_OWNED_BY_CSTACK (3.12), -1 none */
  unsigned co_firstlineno, co_filename, co_qualname, co_linetable, co_firsttraceable, co_code;
  unsigned str_ascii, str_compact, str_utf8; /* sizeof PyASCIIObject, PyCompactUnicodeObject; utf8 */
} pylayout_t;

/* Process-wide state (pyframes.c): found once, read by every thread. */
typedef struct gpd__pyframes_state_s {
  _Atomic int state;  /* 0 not looked, 1 on, -1 off for good, 2 symbols found, TSS not yet */
  const pylayout_t *L;
  uintptr_t runtime, tss;           /* &_PyRuntime, &autoTSSkey */
  uintptr_t code_type, str_type, bytes_type;
  uintptr_t eval_lo, eval_hi;       /* _PyEval_EvalFrameDefault */
  pthread_key_t key;
  _Atomic int logged; /* "Python frames captured" said */
} gpd__pyframes_state_t;
extern gpd__pyframes_state_t gpd__pyframes_py;
/* its short name inside python-*.c */
#define py gpd__pyframes_py

/* The line of a site that is a placeholder (`<backward>`), not a frame. */
#define GPD_PY_SITE_LABEL 0xffffffffu

/* The walker reads interpreter memory that it checked readable but that
 * this process's sanitizer does not see as ours (a torn chain may point
 * into a heap block's red zone): no ASan checks on those reads. */
#define FOREIGN __attribute__((no_sanitize_address))

/* 1 when the page of address a is readable (cached per thread). */
int gpd__pyframes_page_ok(gpd_pyframes_thread_t *t, uintptr_t a);

/* 1 when [a, a+n) may be read: a user address, every page readable. */
static inline int rd_ok(gpd_pyframes_thread_t *t, uintptr_t a, size_t n) {
  if (a < 4096 || n == 0 || a + n < a || a + n > (1ull << 47))
    return 0;
  for (uintptr_t pg = a & ~(uintptr_t)4095; pg < a + n; pg += 4096)
    if (!gpd__pyframes_page_ok(t, pg))
      return 0;
  return 1;
}

FOREIGN static inline uintptr_t ld_ptr(uintptr_t a) { return *(const uintptr_t *)a; }
FOREIGN static inline int ld_int(uintptr_t a) { return *(const int *)a; }

/* An object pointer that can be read for n bytes and whose ob_type is ty. */
FOREIGN static inline int obj_ok(gpd_pyframes_thread_t *t, uintptr_t o, size_t n, uintptr_t ty) {
  return (o & 7) == 0 && rd_ok(t, o, n) && ld_ptr(o + 8) == ty;
}

/* The name and line-table pointers of code object co, folded (the walk
 * memo's check that co still is the code object it saw); 0 for a pointer
 * that is not an aligned object.  co was checked readable before. */
FOREIGN static inline uintptr_t co_names(uintptr_t co) {
  const pylayout_t *L = py.L;
  if (!co || (co & 7))
    return 0;
  return ld_ptr(co + L->co_filename) ^ (ld_ptr(co + L->co_qualname) << 1) ^ (ld_ptr(co + L->co_linetable) << 2);
}

/* Index of site (text, line), inserting it; -1 when full.  Async-signal-
 * safe when may_log is 0 (pyframes.c). */
long gpd__pyframes_site_get(const char *text, uint32_t len, uint32_t line, int may_log);

/* Copy Python str o as UTF-8 into out (at most cap-1 bytes, NUL ended);
 * 0 or -1 (pyframes.c). */
int gpd__pyframes_str_read(gpd_pyframes_thread_t *t, uintptr_t o, char *out, size_t cap);

/* The walk from frame f (innermost) with the process's layout: keys into
 * t->key, returns their count (pyframes.c). */
int gpd__pyframes_walk_from(gpd_pyframes_thread_t *t, uintptr_t f, int may_log);

/* The defined dynamic function symbol `name` of a mapped library (its
 * own .dynsym through DT_GNU_HASH or DT_HASH, no loader call): address
 * and st_size; 0 or -ENOENT (pyframes-dynsym.c). */
int gpd__pyframes_dynsym(const struct dl_phdr_info *info, const char *name, uintptr_t *addr, size_t *size);

/* Backward under forward (pyframes-backward.c): from the module scan,
 * for a library that holds PyTorch's autograd engine (basename in base):
 * look its autograd symbols up, log once, and switch the link on. */
void gpd__pyframes_fwd_module(const struct dl_phdr_info *info, const char *base);

/* On an autograd worker thread (the dispatch frame is in its path): the
 * Python frames recorded at the forward launch of the node being
 * evaluated, into t->key (innermost first); their count, 0 when the link
 * is off, no node is evaluated, or its forward was not recorded. */
int gpd__pyframes_fwd_find(gpd_pyframes_thread_t *t);

#endif
