/* pyframes.c - the calling thread's CPython frames, read without the
 * GIL, spliced into the native call path (pyframes.h, docs/PYTHON.md).
 *
 * Mechanism.  Every CPython thread state is reachable from its own thread
 * through the GIL-state TSS key (_PyRuntime's autoTSSkey:
 * pthread_getspecific(key) is PyGILState_GetThisThreadState without the
 * call), whether or not the thread holds the GIL; ctypes and PyTorch
 * release it around the foreign call that reaches the GPU API, so the
 * interpreter's "current thread state" would name another thread.  From
 * the thread state: cframe -> current_frame, the innermost
 * _PyInterpreterFrame, and its `previous` chain (Include/internal/
 * pycore_frame.h of 3.11 and 3.12).  The chain is split into evaluation
 * activations: in 3.11 the first frame of an activation has is_entry set;
 * in 3.12 each activation pushes an entry frame owned by the C stack
 * (owner FRAME_OWNED_BY_CSTACK) below its first frame.  The thread only
 * reads its own chain, which does not change while it is inside the GPU
 * call, so no lock is needed; still every pointer is checked against a
 * page-readability cache before it is read, the code object's type
 * pointer must be &PyCode_Type, strings &PyUnicode_Type, the line table
 * &PyBytes_Type, and the walk is bounded.  The perf trampoline of 3.12 was
 * not used: it needs `-X perf` (the user's choice, not ours), exists only
 * from 3.12, and gives function names without lines.
 *
 * Lines: PyCode_Addr2Line semantics over co_linetable, the location table
 * format of CPython 3.11+ (Objects/locations.md): entries start with a
 * byte whose bit 7 is set, bits 3..6 the code, bits 0..2 the length - 1
 * in code units; code 15 no location, 14 long form and 13 no-column form
 * start with a signed varint line delta, 10..12 one-line forms with delta
 * code - 10, 0..9 short forms on the same line.
 *
 * Sites: (qualname, filename, line) -> a process-wide index (lock-free
 * open addressing, bounded); the intern key of a Python frame is
 * GPD_PY_KEY_TAG << 48 | index.  The NODE of a Python frame carries the
 * string "qualname\tfilename" and the line; the daemon hashes them into
 * the context id, so equal Python frames get equal ids in every process.
 *
 * This file owns the layouts, finding the interpreter, checked reads,
 * lines, sites, the walk and the splice; work handed to a framework's
 * worker thread is pyframes-handoff.c's; what both share, pyframes-internal.h.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "internal.h"
#include "pyframes.h"
#include "pyframes-internal.h"

/* ------------------------------------------------------------ layouts */

/* Byte offsets of the fields read, per CPython minor version (x86_64,
 * release builds).  3.11 from Debian's python3.11-dev 3.11.2 internal
 * headers, 3.12 from CPython 3.12.1's; tests/python/test-pylayout.c checks
 * them against the headers installed on the machine.  A patch release
 * that moved autoTSSkey is caught at run time: the key is searched near
 * the recorded offset and checked (thread state -> interpreter).  The
 * type: pyframes-internal.h. */

#define OWNER_GENERATOR 1

static const pylayout_t pylayouts[] = {
    {.hex = 0x030b, .name = "3.11", .rt_tss = 592, .rt_main = 48, .ts_interp = 16, .ts_cframe = 56,
     .ts_next = 8, .in_threads = 16, .cf_current = 8, .fr_code = 32, .fr_prev = 48, .fr_instr = 56, .fr_owner = 69, .fr_size = 72,
     .fr_entry = 68, .owner_cstack = -1, .co_firstlineno = 72, .co_filename = 112, .co_qualname = 128,
     .co_linetable = 136, .co_firsttraceable = 168, .co_code = 184, .str_ascii = 48,
     .str_compact = 72, .str_utf8 = 56},
    {.hex = 0x030c, .name = "3.12", .rt_tss = 1544, .rt_main = 48, .ts_interp = 16, .ts_cframe = 56,
     .ts_next = 8, .in_threads = 72, .cf_current = 0, .fr_code = 0, .fr_prev = 8, .fr_instr = 56, .fr_owner = 70, .fr_size = 72,
     .fr_entry = -1, .owner_cstack = 3, .co_firstlineno = 68, .co_filename = 112, .co_qualname = 128,
     .co_linetable = 136, .co_firsttraceable = 176, .co_code = 192, .str_ascii = 40,
     .str_compact = 56, .str_utf8 = 48},
};

gpd__pyframes_state_t gpd__pyframes_py;
static int py_log_once, py_log_sites;
static int vm_readv_ok = 1; /* process_vm_readv works here (else mincore) */

/* --------------------------------------------------------- safe reads */

/* 1 when the page of address a is readable.  A page is checked once with
 * process_vm_readv on our own pid (EFAULT for unmapped or PROT_NONE
 * memory; a seccomp profile may forbid it: then mincore, which knows
 * unmapped pages only) and cached per thread; the cache is emptied every
 * 64 Ki checks so that a page unmapped since is not trusted for long. */
int gpd__pyframes_page_ok(gpd_pyframes_thread_t *t, uintptr_t a) {
  uintptr_t pg = a >> 12;
  /* 4-way sets, most recently used first: the pages of one walk (frames,
   * code objects, strings, C stack) must not evict each other. */
  uintptr_t *set = &t->page[((pg ^ (pg >> 6) ^ (pg >> 12)) & (GPD_PY_PAGES / 4 - 1)) * 4];
  if (set[0] == pg)
    return 1;
  for (int w = 1; w < 4; w++)
    if (set[w] == pg) {
      memmove(set + 1, set, (size_t)w * sizeof *set);
      set[0] = pg;
      return 1;
    }
  if (++t->checks >= (1u << 16)) {
    memset(t->page, 0, sizeof t->page);
    t->checks = 0;
  }
  char b;
  int ok;
  if (vm_readv_ok) {
    struct iovec l = {&b, 1}, r = {(void *)(pg << 12), 1};
    ssize_t n = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
    if (n == 1)
      ok = 1;
    else if (errno == EPERM || errno == ENOSYS || errno == EACCES) {
      vm_readv_ok = 0;
      unsigned char v;
      ok = mincore((void *)(pg << 12), 4096, &v) == 0;
    } else
      ok = 0;
  } else {
    unsigned char v;
    ok = mincore((void *)(pg << 12), 4096, &v) == 0;
  }
  if (ok) {
    memmove(set + 1, set, 3 * sizeof *set);
    set[0] = pg;
  }
  return ok;
}

/* ----------------------------------------------------------- finding */

/* The thread state of the calling thread through TSS slot key at tss
 * (address of a Py_tss_t {int initialized; pthread_key_t key;}); 0 if
 * none.  Reads: the runtime's own data (checked at setup). */
FOREIGN static uintptr_t tss_tstate(uintptr_t tss) {
  if (ld_int(tss) != 1)
    return 0; /* not initialized, or finalized */
  unsigned k = *(const unsigned *)(tss + 4);
  if (k >= 1024)
    return 0;
  return (uintptr_t)pthread_getspecific((pthread_key_t)k);
}

/* Is tss (inside _PyRuntime) the GIL-state key: does this thread's slot
 * hold a thread state of the main interpreter?  -1 this thread has no
 * thread state (cannot tell), 0 no, 1 yes. */
FOREIGN static int tss_check(gpd_pyframes_thread_t *t, uintptr_t tss) {
  if (ld_int(tss) != 1 || *(const unsigned *)(tss + 4) >= 1024)
    return 0;
  uintptr_t ts = tss_tstate(tss);
  if (!ts)
    return -1;
  uintptr_t main = ld_ptr(py.runtime + py.L->rt_main);
  if ((ts & 7) || !rd_ok(t, ts, py.L->ts_cframe + 8))
    return 0;
  return main && ld_ptr(ts + py.L->ts_interp) == main;
}

static uintptr_t sym(const char *name) { return (uintptr_t)dlsym(RTLD_DEFAULT, name); }

/* Stage 0 -> 2: find the interpreter's symbols and layout (dlsym,
 * dladdr1, getenv, logging: never from a signal handler).  0 not there
 * (yet), -1 off for good, 1 found (state 2 or later). */
static int py_find(void) {
  int st = atomic_load_explicit(&py.state, memory_order_acquire);
  if (st != 0)
    return st < 0 ? -1 : 1;
  const char *off = getenv("GPUPROF_PYTHON");
  if (off && strcmp(off, "0") == 0) {
    atomic_store(&py.state, -1); /* native frames only, by request */
    return -1;
  }
  const unsigned long *ver = (const unsigned long *)sym("Py_Version");
  uintptr_t rt = sym("_PyRuntime");
  if (!rt)
    return 0; /* no Python (yet) */
  if (!ver) {
    GPD_LOG_ONCE(py_log_once, GPD_LOG_WARN,
                 "python: interpreter older than 3.11 (no Py_Version); Python frames not captured");
    atomic_store(&py.state, -1);
    return -1;
  }
  unsigned hex = (unsigned)(*ver >> 16);
  const pylayout_t *L = NULL;
  for (size_t i = 0; i < sizeof pylayouts / sizeof pylayouts[0]; i++)
    if (pylayouts[i].hex == hex)
      L = &pylayouts[i];
  uintptr_t ev = sym("_PyEval_EvalFrameDefault");
  Dl_info info;
  const ElfW(Sym) *es = NULL;
  if (!L || !ev || !dladdr1((void *)ev, &info, (void **)&es, RTLD_DL_SYMENT) || !es || es->st_size == 0) {
    GPD_LOG_ONCE(py_log_once, GPD_LOG_WARN,
                 "python %u.%u: frame layout unknown (3.11 and 3.12 are known); Python frames not "
                 "captured, native frames only",
                 hex >> 8, hex & 0xff);
    atomic_store(&py.state, -1);
    return -1;
  }
  py.L = L;
  py.runtime = rt;
  py.code_type = sym("PyCode_Type");
  py.str_type = sym("PyUnicode_Type");
  py.bytes_type = sym("PyBytes_Type");
  py.eval_lo = ev;
  py.eval_hi = ev + es->st_size;
  if (!py.code_type || !py.str_type || !py.bytes_type) {
    GPD_LOG_ONCE(py_log_once, GPD_LOG_WARN, "python %s: type objects not found; Python frames not captured",
                 L->name);
    atomic_store(&py.state, -1);
    return -1;
  }
  int z = 0;
  atomic_compare_exchange_strong_explicit(&py.state, &z, 2, memory_order_release, memory_order_relaxed);
  return 1;
}

/* Stage 2 -> 1: find the TSS key with a thread that has a thread state.
 * Reads checked memory and the calling thread's own pthread key slot
 * only: async-signal-safe when may_log is 0 (the CPU sampler's handler;
 * then the connection thread logs the result, gpd_pyframes_service; the
 * handler only checks the recorded offset and never turns Python off).
 * Returns 1 when on. */
static int py_find_tss(gpd_pyframes_thread_t *t, int may_log) {
  int c = tss_check(t, py.runtime + py.L->rt_tss);
  uintptr_t tss = 0;
  if (c == 1) {
    tss = py.runtime + py.L->rt_tss;
  } else if (c == 0 && !may_log) {
    /* the sampler: a "no" may come from an interpreter still starting
     * (key not made yet, no main interpreter): never concluded here, and
     * no search per sample; a capture searches (a moved key) */
    return 0;
  } else if (c == 0) {
    /* a patch release may have moved it: search nearby (4-byte steps) */
    int unknown = 0;
    for (unsigned off = 64; off < 8192 && !tss; off += 4) {
      int r = tss_check(t, py.runtime + off);
      if (r == 1)
        tss = py.runtime + off;
      else if (r < 0)
        unknown = 1;
    }
    if (!tss) {
      if (unknown)
        return 0; /* some candidate slot empty on this thread: retry on another */
      if (may_log)
        GPD_LOG_ONCE(py_log_once, GPD_LOG_WARN,
                     "python %s: thread-state key not found; Python frames not captured", py.L->name);
      atomic_store(&py.state, -1);
      return 0;
    }
  } else {
    return 0; /* this thread has no thread state: ask again later */
  }
  py.tss = tss;
  int two = 2;
  atomic_compare_exchange_strong_explicit(&py.state, &two, 1, memory_order_release, memory_order_relaxed);
  if (may_log && !atomic_exchange(&py.logged, 1))
    GPD_LOG(GPD_LOG_INFO, "python %s: Python frames captured (thread-state key at _PyRuntime+%lu)", py.L->name,
            (unsigned long)(py.tss - py.runtime));
  return atomic_load_explicit(&py.state, memory_order_acquire) == 1;
}

/* Look up the interpreter (once; again every 4096 captures of a thread
 * while it is not there: a program may load libpython later).  Returns 1
 * when on. */
static int py_setup(gpd_pyframes_thread_t *t) {
  int st = atomic_load_explicit(&py.state, memory_order_acquire);
  if (st == 1)
    return 1;
  if (st == -1)
    return 0;
  if (st == 0) {
    /* counted per thread: a shared counter was a locked add on one line
     * written by every thread at every capture of a process without
     * Python, the common case */
    if ((t->tries++ & 4095) != 0)
      return 0;
    if (py_find() <= 0)
      return 0;
  }
  return py_find_tss(t, 1);
}

/* ------------------------------------------------------------- lines */

FOREIGN static int varint(const uint8_t **p, const uint8_t *end, unsigned *out) {
  unsigned v = 0, shift = 0;
  for (;;) {
    if (*p >= end || shift > 28)
      return -1;
    unsigned b = *(*p)++;
    v |= (b & 63) << shift;
    shift += 6;
    if (!(b & 64))
      break;
  }
  *out = v;
  return 0;
}

/** Line of byte offset addr in a location table (CPython 3.11+,
 *  Objects/locations.md; PyCode_Addr2Line).  -1: no line. */
FOREIGN int gpd_pyframes__addr2line(const uint8_t *tab, size_t len, int first, long addr) {
  if (addr < 0)
    return first;
  const uint8_t *p = tab, *end = tab + len;
  long start = 0;
  long line = first; /* long: a corrupt table cannot overflow it */
  while (p < end) {
    unsigned b = *p;
    if (!(b & 128))
      return -1; /* not at an entry: a corrupt table */
    unsigned code = (b >> 3) & 15;
    long size = ((b & 7) + 1) * 2;
    const uint8_t *q = p + 1;
    int delta = 0, none = 0;
    unsigned u;
    if (code == 15) {
      none = 1;
    } else if (code == 14 || code == 13) {
      if (varint(&q, end, &u) < 0)
        return -1;
      delta = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
    } else if (code >= 10) {
      delta = (int)code - 10;
    }
    line += delta;
    if (addr < start + size)
      return none || line < 0 || line > 0x7fffffff ? -1 : (int)line;
    start += size;
    p++;
    while (p < end && !(*p & 128))
      p++;
  }
  return -1;
}

/* ------------------------------------------------------------- sites */

#define SITES_CAP 65536u /* power of two */
#define SITE_TEXT_MAX 1024u
/* Site texts live in one arena (bump allocated, never freed: sites are
 * forever), not in malloc'd blocks: a site may be made by the CPU
 * sampler's signal handler.  Pages are touched only as texts fill them. */
#define SITE_ARENA (4u << 20)
static char site_arena[SITE_ARENA];
static _Atomic size_t site_arena_used;

typedef struct site_s {
  _Atomic uint64_t hash; /* 0 = empty */
  _Atomic uint32_t ready;
  uint32_t line;
  uint32_t len;
  char *text; /* "qualname\tfilename" */
} site_t;
static site_t sites[SITES_CAP];

/* Index of site (text, line), inserting it.  -1 when the table or the
 * text arena is full (the frame is then left out).  No allocation, no
 * lock: async-signal-safe when may_log is 0. */
long gpd__pyframes_site_get(const char *text, uint32_t len, uint32_t line, int may_log) {
  uint64_t h = gpd_hash64(text, len, line) | 1;
  for (uint32_t probe = 0; probe < 64; probe++) {
    uint32_t i = (uint32_t)(h + probe) & (SITES_CAP - 1);
    site_t *s = &sites[i];
    uint64_t eh = atomic_load_explicit(&s->hash, memory_order_acquire);
    if (eh == 0) {
      if (atomic_compare_exchange_strong(&s->hash, &eh, h)) {
        size_t at = atomic_fetch_add_explicit(&site_arena_used, (size_t)len + 1, memory_order_relaxed);
        s->text = at + len + 1 <= SITE_ARENA ? site_arena + at : NULL;
        if (s->text) {
          memcpy(s->text, text, len);
          s->text[len] = 0;
        }
        s->len = s->text ? len : 0;
        s->line = line;
        atomic_store_explicit(&s->ready, s->text ? 1 : 2, memory_order_release);
        return s->text ? (long)i : -1;
      }
    }
    if (eh != h)
      continue;
    unsigned r;
    int spin = 0;
    while ((r = atomic_load_explicit(&s->ready, memory_order_acquire)) == 0 && spin++ < 100000)
      ;
    if (r == 1 && s->line == line && s->len == len && memcmp(s->text, text, len) == 0)
      return (long)i;
  }
  if (may_log)
    GPD_LOG_ONCE(py_log_sites, GPD_LOG_WARN, "python: site table full; some Python frames left out");
  return -1;
}

int gpd_pyframes_node(gpd_rec_node_t *r, uint64_t key) {
  uint64_t i = key & 0xffffffffffffull;
  if (!gpd_pyframes_is_key(key) || i >= SITES_CAP || atomic_load(&sites[i].ready) != 1)
    return -ENOENT;
  int label = sites[i].line == GPD_PY_SITE_LABEL;
  /* the site's text is permanent: the string table keeps the pointer
   * (no allocation: a CPU sample's handler announces nodes too) */
  uint32_t sid = gpd_shim__string_static(sites[i].text, sites[i].len, label ? GPD_STR_OTHER : GPD_STR_PYCODE);
  if (!sid)
    return -ENOSPC;
  /* a placeholder is a labelled context, as capture.c's label nodes */
  r->h.flags = label ? GPD_NODE_F_LABEL : GPD_NODE_F_PYTHON;
  r->module = sid;
  r->offset = label ? 0 : sites[i].line;
  return 0;
}

/* Copy Python str o as UTF-8 into out (at most cap-1 bytes, NUL ended).
 * Compact strings only (every code object's names are); 0 or -1. */
FOREIGN int gpd__pyframes_str_read(gpd_pyframes_thread_t *t, uintptr_t o, char *out, size_t cap) {
  const pylayout_t *L = py.L;
  if (!obj_ok(t, o, L->str_compact, py.str_type))
    return -1;
  long n = *(const long *)(o + 16);
  unsigned state = *(const unsigned *)(o + 32);
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (n < 0 || !compact)
    return -1;
  size_t w = 0;
  if (ascii) {
    size_t m = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
    if (!rd_ok(t, o + L->str_ascii, m + 1))
      return -1;
    for (size_t i = 0; i < m; i++) /* not memcpy: the sanitizer checks its ranges */
      out[i] = ((const volatile char *)(o + L->str_ascii))[i];
    w = m;
  } else {
    if (kind != 1 && kind != 2 && kind != 4)
      return -1;
    long m = n < (long)cap ? n : (long)cap;
    uintptr_t d = o + L->str_compact;
    if (!rd_ok(t, d, (size_t)m * kind + 1))
      return -1;
    for (long i = 0; i < m; i++) {
      uint32_t c = kind == 1 ? ((const uint8_t *)d)[i]
                             : kind == 2 ? ((const uint16_t *)d)[i] : ((const uint32_t *)d)[i];
      char b[4];
      size_t k;
      if (c < 0x80) { b[0] = (char)c; k = 1; }
      else if (c < 0x800) { b[0] = (char)(0xc0 | c >> 6); b[1] = (char)(0x80 | (c & 63)); k = 2; }
      else if (c < 0x10000) { b[0] = (char)(0xe0 | c >> 12); b[1] = (char)(0x80 | ((c >> 6) & 63)); b[2] = (char)(0x80 | (c & 63)); k = 3; }
      else if (c < 0x110000) { b[0] = (char)(0xf0 | c >> 18); b[1] = (char)(0x80 | ((c >> 12) & 63)); b[2] = (char)(0x80 | ((c >> 6) & 63)); b[3] = (char)(0x80 | (c & 63)); k = 4; }
      else { b[0] = '?'; k = 1; }
      if (w + k >= cap)
        break;
      memcpy(out + w, b, k);
      w += k;
    }
  }
  for (size_t i = 0; i < w; i++)
    if (out[i] == '\t' || out[i] == '\n' || out[i] == 0)
      out[i] = ' ';
  out[w] = 0;
  return (int)w;
}

/* Site key of code object co at instruction pointer instr; 0 = leave out. */
FOREIGN static uint64_t site_key(gpd_pyframes_thread_t *t, uintptr_t co, uintptr_t instr, int may_log) {
  const pylayout_t *L = py.L;
  uintptr_t fn = ld_ptr(co + L->co_filename), qn = ld_ptr(co + L->co_qualname),
            lt = ld_ptr(co + L->co_linetable);
  uintptr_t names = fn ^ (qn << 1) ^ (lt << 2);
  unsigned slot = (unsigned)((co >> 4) ^ (instr >> 1) ^ (co >> 13)) & (GPD_PY_CACHE - 1);
  if (t->cache[slot].code == co && t->cache[slot].instr == instr && t->cache[slot].names == names)
    return t->cache[slot].key;
  /* line: byte offset of the instruction in co_code_adaptive */
  long ncode = *(const long *)(co + 16); /* ob_size: code units */
  long addr = (long)(instr - (co + L->co_code));
  if (ncode < 0 || ncode > (1L << 30) || addr >= ncode * 2 || addr < -2)
    return 0;
  if (!obj_ok(t, lt, 40, py.bytes_type))
    return 0;
  long tlen = *(const long *)(lt + 16);
  if (tlen < 0 || tlen > (1 << 20) || !rd_ok(t, lt + 32, (size_t)tlen + 1))
    return 0;
  int line = gpd_pyframes__addr2line((const uint8_t *)(lt + 32), (size_t)tlen, ld_int(co + L->co_firstlineno),
                                     addr < 0 ? -1 : addr);
  if (line < 0)
    line = 0;
  char text[SITE_TEXT_MAX];
  int a = gpd__pyframes_str_read(t, qn, text, 256);
  if (a < 0)
    return 0;
  text[a] = '\t';
  int b = gpd__pyframes_str_read(t, fn, text + a + 1, sizeof text - (size_t)a - 1);
  if (b < 0)
    return 0;
  long i = gpd__pyframes_site_get(text, (uint32_t)(a + 1 + b), (uint32_t)line, may_log);
  if (i < 0)
    return 0;
  uint64_t key = GPD_PY_KEY_TAG << 48 | (uint64_t)i;
  t->cache[slot].code = co;
  t->cache[slot].instr = instr;
  t->cache[slot].names = names;
  t->cache[slot].key = key;
  return key;
}

/* -------------------------------------------------------------- walk */

#define WALK_STEPS 1024 /* frames looked at, incomplete and entry frames included */

/* The walk from frame f (innermost) with the process's layout. */
FOREIGN int gpd__pyframes_walk_from(gpd_pyframes_thread_t *t, uintptr_t f, int may_log) {
  const pylayout_t *L = py.L;
  uint32_t n = 0, act = 0;
  int steps = 0;
  for (; f && steps < WALK_STEPS; steps++) {
    /* A frame an earlier walk saw at this address, with the same code
     * object (and its name and line-table pointers) and instruction: its
     * key is known and its pages were checked; only its links are read
     * again.  Keyed by address, not by step: the innermost frames change
     * at every call while the outer ones stay (a cache by step from the
     * innermost frame missed for the whole walk; 0.3 us per capture on
     * PyTorch). */
    unsigned ms = (unsigned)((f >> 4) ^ (f >> 12)) & (GPD_PY_MEMO - 1);
    int memo = t->memo[ms].f == f;
    if (!memo && ((f & 7) || !rd_ok(t, f, L->fr_size)))
      break; /* torn: keep what was read */
    uintptr_t co = ld_ptr(f + L->fr_code), prev = ld_ptr(f + L->fr_prev),
              instr = ld_ptr(f + L->fr_instr);
    if (steps < GPD_PY_PF) {
      t->pf_f[steps] = f;
      t->pf_co[steps] = co;
    }
    int owner = *(const signed char *)(f + L->fr_owner);
    /* known_co: the frame an earlier walk saw here runs the same code
     * object, now at another instruction (the innermost frame at every
     * capture): that code object was checked then (readable, of the code
     * type: entries with a key only), as a memo hit's is trusted; only
     * its new line is looked up (a cold page-cache line and the object's
     * header line less per capture) */
    int same_co = memo && co == t->memo[ms].co && co_names(co) == t->memo[ms].names;
    memo = same_co && instr == t->memo[ms].instr;
    int known_co = same_co && !memo && t->memo[ms].key;
    if (L->owner_cstack >= 0 && owner == L->owner_cstack) {
      act++; /* 3.12: the entry frame below an activation's first frame */
    } else {
      uint64_t k = 0;
      if (memo) {
        k = t->memo[ms].key;
      } else {
        if (!known_co && !obj_ok(t, co, L->co_code, py.code_type))
          break;
        int firsttr = ld_int(co + L->co_firsttraceable);
        int complete = owner == OWNER_GENERATOR ||
                       instr >= co + L->co_code + 2 * (uintptr_t)(firsttr > 0 ? firsttr : 0);
        k = complete ? site_key(t, co, instr, may_log) : 0;
      }
      if (k && n < GPD_PY_MAX) {
        t->key[n] = k;
        t->act[n] = (uint16_t)(act < 0xffff ? act : 0xffff);
        n++;
      }
      if (!memo) {
        t->memo[ms].f = 0; /* f last: an abandoned update leaves no entry */
        t->memo[ms].co = co;
        t->memo[ms].instr = instr;
        t->memo[ms].names = co_names(co);
        t->memo[ms].key = k;
        t->memo[ms].f = f;
      }
      if (L->fr_entry >= 0 && *(const uint8_t *)(f + (unsigned)L->fr_entry))
        act++; /* 3.11: the first frame of an activation */
    }
    if (!memo && L->owner_cstack >= 0 && owner == L->owner_cstack && (!co || (co & 7) || rd_ok(t, co, L->co_code))) {
      t->memo[ms].f = 0;
      t->memo[ms].co = co;
      t->memo[ms].instr = instr;
      t->memo[ms].names = co_names(co);
      t->memo[ms].key = 0;
      t->memo[ms].f = f;
    }
    f = prev;
  }
  t->pf_n = steps < GPD_PY_PF ? (uint32_t)steps : GPD_PY_PF;
  t->n = n;
  t->nact = act;
  return (int)n;
}

void gpd_pyframes_prefetch(const gpd_pyframes_thread_t *t) {
  if (atomic_load_explicit(&py.state, memory_order_relaxed) != 1 || !t->pf_ts)
    return;
  const pylayout_t *L = py.L;
  __builtin_prefetch((const void *)(t->pf_ts + L->ts_cframe), 0, 3);
  __builtin_prefetch((const void *)(t->pf_cf + L->cf_current), 0, 3);
  for (uint32_t i = 0; i < t->pf_n && i < GPD_PY_PF; i++) {
    uintptr_t f = t->pf_f[i], co = t->pf_co[i];
    __builtin_prefetch((const void *)(f + L->fr_code), 0, 3);
    __builtin_prefetch((const void *)(f + L->fr_size - 1), 0, 3);
    __builtin_prefetch(&t->memo[(unsigned)((f >> 4) ^ (f >> 12)) & (GPD_PY_MEMO - 1)], 0, 3);
    __builtin_prefetch((const void *)(co + L->co_filename), 0, 3);
    __builtin_prefetch((const void *)(co + L->co_linetable + 7), 0, 3);
  }
}

/* The walk of the calling thread's chain, once the interpreter is known. */
static int walk_thread(gpd_pyframes_thread_t *t, int may_log) {
  /* The thread state and C frame of the last walk were checked readable
   * then; the same addresses are not checked again (this thread's own
   * state, alive while it runs Python; its C frame, in its stack or in
   * the state): two cold page-cache lines less per capture. */
  uintptr_t ts = tss_tstate(py.tss);
  if (!ts || (ts & 7) || (ts != t->pf_ts && !rd_ok(t, ts, py.L->ts_cframe + 8)))
    return 0;
  uintptr_t cf = ld_ptr(ts + py.L->ts_cframe);
  if (!cf || (cf & 7) || (cf != t->pf_cf && !rd_ok(t, cf, py.L->cf_current + 8)))
    return 0;
  t->pf_ts = ts;
  t->pf_cf = cf;
  return gpd__pyframes_walk_from(t, ld_ptr(cf + py.L->cf_current), may_log);
}

int gpd_pyframes_walk(gpd_pyframes_thread_t *t) {
  t->n = 0;
  t->nact = 0;
  t->hand = 0;
  if (!py_setup(t))
    return 0;
  return walk_thread(t, 1);
}

int gpd_pyframes_walk_signal(gpd_pyframes_thread_t *t) {
  t->n = 0;
  t->nact = 0;
  t->hand = 0;
  int st = atomic_load_explicit(&py.state, memory_order_acquire);
  if (st != 1 && (st != 2 || !py_find_tss(t, 0)))
    return 0;
  return walk_thread(t, 0);
}

void gpd_pyframes_service(void) {
  if (py_find() > 0 && atomic_load_explicit(&py.state, memory_order_acquire) == 1 &&
      !atomic_exchange(&py.logged, 1))
    GPD_LOG(GPD_LOG_INFO, "python %s: Python frames captured (thread-state key at _PyRuntime+%lu)", py.L->name,
            (unsigned long)(py.tss - py.runtime));
}

/* Does return address ret lie in _PyEval_EvalFrameDefault (its call
 * site ret - 1, so that a call as the function's last instruction
 * counts)? */
static inline int in_eval(uintptr_t ret) { return ret - 1 >= py.eval_lo && ret - 1 < py.eval_hi; }

/* gpd_pyframes_splice after a handoff (pyframes-handoff.c): the native
 * path, the placeholder, the caller's frames (innermost first). */
static int hand_splice(gpd_pyframes_thread_t *t, const uintptr_t *ips, int n, int max, const uintptr_t **out) {
  int w = 0;
  for (int i = 0; i < n && w < max; i++)
    t->merged[w++] = ips[i];
  if (w < max)
    t->merged[w++] = (uintptr_t)t->hand_label + 1;
  for (uint32_t j = 0; j < t->n && w < max; j++)
    t->merged[w++] = (uintptr_t)t->key[j] + 1;
  *out = t->merged;
  return w;
}

int gpd_pyframes_splice(gpd_pyframes_thread_t *t, const uintptr_t *ips, int n, int max,
                        const uintptr_t **out) {
  int cap = (int)(sizeof t->merged / sizeof t->merged[0]);
  if (max > cap)
    max = cap;
  int w = 0;
  if (t->hand)
    return hand_splice(t, ips, n, max, out);
  uint32_t a = 0, j = 0; /* next activation, next Python frame */
  for (int i = 0; i < n && w < max; i++) {
    if (in_eval(ips[i]) && a < t->nact) {
      while (j < t->n && t->act[j] < a)
        j++;
      while (j < t->n && t->act[j] == a && w < max)
        t->merged[w++] = (uintptr_t)t->key[j++] + 1;
      a++;
      continue;
    }
    t->merged[w++] = ips[i];
  }
  *out = t->merged;
  return w;
}

int gpd_pyframes_eval_frame(const uintptr_t *ips, int n) {
  for (int i = 0; i < n; i++)
    if (in_eval(ips[i]))
      return i;
  return -1;
}

/* ------------------------------------------------------- test hooks */

/** Test hook (exported): walk a frame chain from frame f with the layout
 *  of version hex (0x030b, 0x030c) and the given type objects, as the
 *  capture would: for the torn-chain test (tests/python/test-pywalk.c).
 *  Returns frames found; keys into keys[0..max). */
GPD_EXPORT int gpd_shim__pywalk(unsigned hex, uintptr_t f, uintptr_t code_type, uintptr_t str_type,
                                uintptr_t bytes_type, uint64_t *keys, int max) {
  static gpd_pyframes_thread_t t; /* test only: one caller at a time */
  const pylayout_t *L = NULL;
  for (size_t i = 0; i < sizeof pylayouts / sizeof pylayouts[0]; i++)
    if (pylayouts[i].hex == hex)
      L = &pylayouts[i];
  if (!L || atomic_load(&py.state) == 1)
    return -1;
  py.L = L;
  py.code_type = code_type;
  py.str_type = str_type;
  py.bytes_type = bytes_type;
  memset(&t, 0, sizeof t);
  int n = gpd__pyframes_walk_from(&t, f, 1);
  for (int i = 0; i < n && i < max; i++)
    keys[i] = t.key[i];
  return n;
}

/** Test hook (exported): line of addr in a location table. */
GPD_EXPORT int gpd_shim__py_addr2line(const uint8_t *tab, size_t len, int first, long addr) {
  return gpd_pyframes__addr2line(tab, len, first, addr);
}
