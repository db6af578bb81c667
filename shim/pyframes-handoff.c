/* pyframes-handoff.c - work handed to a framework's worker thread
 * (docs/PYTHON.md): the dispatch table (PyTorch's autograd engine, the
 * GPUPROF_TEST_HANDOFF test hook), finding each dispatch function in a
 * loaded library by its ELF dynamic symbol (gpd_pyframes_module), finding
 * the Python thread that waits for the work (gpd_pyframes_handoff) and
 * the splice of its frames below the worker's native path.  The walk,
 * sites and checked reads are pyframes.c's (pyframes-internal.h); the
 * symbol lookup pyframes-dynsym.c's.
 */
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/log.h"
#include "internal.h"
#include "pyframes.h"
#include "pyframes-internal.h"

/* Work handed to a framework's worker thread (docs/PYTHON.md): a dispatch
 * function runs on the worker (its native frame is in every path of the
 * work), while the Python thread that handed the work over waits inside a
 * handoff function, with the GIL released.  A capture on the worker that
 * finds no Python frames of its own but the dispatch frame in its native
 * path looks for that thread in the interpreter's thread-state list. */

typedef struct hand_fn_s {
  const char *qualname, *file; /* co_qualname; co_filename, or its suffix after a '/' */
} hand_fn_t;

#define HAND_FNS 4
typedef struct hand_disp_s {
  const char *lib;   /* basename prefix of the library that has the symbol */
  const char *sym;   /* the dispatch function's dynamic symbol */
  const char *what;  /* its name as the log says it */
  const char *label; /* the placeholder between caller and worker */
  int fwd;           /* PyTorch's engine: backward under forward (pyframes-backward.c) */
  hand_fn_t fn[HAND_FNS];
} hand_disp_t;

/* PyTorch's autograd engine: backward nodes run in Engine::thread_main on
 * the engine's device threads; the caller waits in run_backward, called
 * from _engine_run_backward (torch/autograd/graph.py, PyTorch 2.2+) or,
 * in 2.0 and 2.1, straight from backward and grad (torch/autograd/
 * __init__.py). */
static const hand_disp_t hand_builtin[] = {
    {"libtorch_cpu.so", "_ZN5torch8autograd6Engine11thread_mainERKSt10shared_ptrINS0_9GraphTaskEE",
     "torch::autograd::Engine::thread_main",
     "<backward>",
     1,
     {{"_engine_run_backward", "torch/autograd/graph.py"},
      {"backward", "torch/autograd/__init__.py"},
      {"grad", "torch/autograd/__init__.py"}}},
};
#define HAND_BUILTIN (sizeof hand_builtin / sizeof hand_builtin[0])
/* the test hook's entry (GPUPROF_TEST_HANDOFF): strings in hand_test_buf */
static hand_disp_t hand_test;
static char hand_test_buf[512];
static int hand_test_read;

#define HAND_MAX 8 /* dispatch ranges known at once */
static struct {
  _Atomic uint32_t n; /* entries of r published (release) */
  struct {
    uintptr_t lo, hi;       /* the dispatch function's code */
    const hand_disp_t *d;
    uint64_t label;         /* intern key of the placeholder */
  } r[HAND_MAX];
  int logged[HAND_BUILTIN + 1]; /* one line per table entry */
} hand;

/* GPUPROF_TEST_HANDOFF=LIB,SYMBOL,QUALNAME,FILE (test hook, read once
 * from the first module scan, i.e. the constructor): one more entry, with
 * the `<worker>` placeholder. */
static void hand_test_env(void) {
  hand_test_read = 1;
  const char *e = getenv("GPUPROF_TEST_HANDOFF");
  if (!e || strlen(e) >= sizeof hand_test_buf)
    return;
  strcpy(hand_test_buf, e);
  char *f[4], *p = hand_test_buf;
  for (int i = 0; i < 4; i++) {
    f[i] = p;
    p = i < 3 ? strchr(p, ',') : NULL;
    if (i < 3 && !p)
      return;
    if (p)
      *p++ = 0;
  }
  hand_test = (hand_disp_t){.lib = f[0], .sym = f[1], .what = f[1], .label = "<worker>",
                            .fn = {{f[2], f[3]}}};
}

void gpd_pyframes_module(const struct dl_phdr_info *info, const char *path) {
  if (!hand_test_read)
    hand_test_env();
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (size_t k = 0; k <= HAND_BUILTIN; k++) {
    const hand_disp_t *d = k < HAND_BUILTIN ? &hand_builtin[k] : &hand_test;
    if (!d->lib || strncmp(base, d->lib, strlen(d->lib)) != 0)
      continue;
    uintptr_t lo = 0;
    size_t size = 0;
    uint32_t n = atomic_load_explicit(&hand.n, memory_order_relaxed);
    if (gpd__pyframes_dynsym(info, d->sym, &lo, &size) < 0 || size == 0) {
      if (!hand.logged[k]++)
        GPD_LOG(GPD_LOG_WARN,
                "handoff: %s has no %s (symbol %s%s); work of its threads keeps its native path only", base,
                d->what, d->sym, size == 0 && lo ? ", size 0" : "");
      continue;
    }
    long site = gpd__pyframes_site_get(d->label, (uint32_t)strlen(d->label), GPD_PY_SITE_LABEL, 1);
    if (n >= HAND_MAX || site < 0)
      continue;
    hand.r[n].lo = lo;
    hand.r[n].hi = lo + size;
    hand.r[n].d = d;
    hand.r[n].label = GPD_PY_KEY_TAG << 48 | (uint64_t)site;
    atomic_store_explicit(&hand.n, n + 1, memory_order_release);
    if (!hand.logged[k]++)
      GPD_LOG(GPD_LOG_INFO, "handoff: %s found in %s; work of its threads goes under the Python frames of "
              "the thread waiting in %s (%s), below %s", d->what, base, d->fn[0].qualname, d->fn[0].file,
              d->label);
    if (d->fwd)
      gpd__pyframes_fwd_module(info, base); /* its autograd nodes: backward under forward */
  }
}

/* Does str object o equal s (ASCII compact strings; checked reads)? */
FOREIGN static int str_is(gpd_pyframes_thread_t *t, uintptr_t o, const char *s, int suffix) {
  char buf[512];
  int n = gpd__pyframes_str_read(t, o, buf, sizeof buf);
  if (n < 0)
    return 0;
  size_t m = strlen(s);
  if (!suffix)
    return (size_t)n == m && memcmp(buf, s, m) == 0;
  return (size_t)n >= m && ((size_t)n == m || buf[(size_t)n - m - 1] == '/') &&
         memcmp(buf + (size_t)n - m, s, m) == 0;
}

/* Bit k set: code object co (checked readable for the fixed part) is a
 * handoff function of dispatch range k.  Remembered per thread by (code
 * object, name pointers). */
FOREIGN static uint32_t hand_code(gpd_pyframes_thread_t *t, uintptr_t co, uint32_t nr) {
  const pylayout_t *L = py.L;
  if (!co || (co & 7) || !rd_ok(t, co, L->co_code))
    return 0;
  uintptr_t names = co_names(co);
  unsigned slot = (unsigned)((co >> 4) ^ (co >> 12)) & (GPD_PY_HCODE - 1);
  if (t->hcode[slot].co == co && t->hcode[slot].names == names)
    return t->hcode[slot].mask;
  uint32_t mask = 0;
  if (ld_ptr(co + 8) == py.code_type) {
    uintptr_t qn = ld_ptr(co + L->co_qualname), fn = ld_ptr(co + L->co_filename);
    for (uint32_t k = 0; k < nr; k++)
      for (int i = 0; i < HAND_FNS && hand.r[k].d->fn[i].qualname; i++)
        if (str_is(t, qn, hand.r[k].d->fn[i].qualname, 0) && str_is(t, fn, hand.r[k].d->fn[i].file, 1))
          mask |= 1u << k;
  }
  t->hcode[slot].co = co;
  t->hcode[slot].names = names;
  t->hcode[slot].mask = mask;
  return mask;
}

/* t->key[0..n) are carried frames of dispatch range k: one group (the
 * node cache's key, capture.c) below its placeholder.  Returns n. */
static int hand_carry(gpd_pyframes_thread_t *t, uint32_t k, uint32_t n) {
  t->n = n;
  t->nact = 0;
  memset(t->act, 0, t->n * sizeof t->act[0]);
  t->hand = k + 1;
  t->hand_label = hand.r[k].label;
  return (int)n;
}

#define HAND_THREADS 256 /* thread states looked at; a longer list: no handoff */

/* The thread blocked in a handoff function of dispatch range k: its
 * frames into t (cached), 0 when none or several. */
FOREIGN static int hand_find(gpd_pyframes_thread_t *t, uint32_t k, uint32_t nr) {
  const pylayout_t *L = py.L;
  uintptr_t interp = ld_ptr(py.runtime + L->rt_main);
  if (!interp || (interp & 7) || !rd_ok(t, interp, L->in_threads + 8))
    return 0;
  uintptr_t ts = ld_ptr(interp + L->in_threads), hts = 0, hf = 0, hco = 0;
  int found = 0, i = 0;
  for (; ts && i < HAND_THREADS; i++) {
    /* a thread state of another interpreter, or not one: a torn list */
    if ((ts & 7) || !rd_ok(t, ts, L->ts_cframe + 8) || ld_ptr(ts + L->ts_interp) != interp)
      return 0;
    uintptr_t cf = ld_ptr(ts + L->ts_cframe), f = 0;
    if (cf && !(cf & 7) && rd_ok(t, cf, L->cf_current + 8))
      f = ld_ptr(cf + L->cf_current);
    if (f && !(f & 7) && rd_ok(t, f, L->fr_size)) {
      uintptr_t co = ld_ptr(f + L->fr_code);
      if (hand_code(t, co, nr) & (1u << k)) {
        if (++found > 1)
          return 0; /* several: whose work is it? */
        hts = ts;
        hf = f;
        hco = co;
      }
    }
    ts = ld_ptr(ts + L->ts_next);
  }
  if (!found || ts)
    return 0;
  uintptr_t instr = ld_ptr(hf + L->fr_instr);
  if (t->h_ts != hts || t->h_f != hf || t->h_co != hco || t->h_instr != instr) {
    t->h_ts = 0;
    int n = gpd__pyframes_walk_from(t, hf, 1);
    /* the caller may have returned meanwhile: its top frame must be the
     * same one, at the same instruction, after the walk */
    uintptr_t cf = ld_ptr(hts + L->ts_cframe);
    if (n <= 0 || !cf || (cf & 7) || !rd_ok(t, cf, L->cf_current + 8) || ld_ptr(cf + L->cf_current) != hf ||
        ld_ptr(hf + L->fr_code) != hco || ld_ptr(hf + L->fr_instr) != instr)
      return 0;
    memcpy(t->h_key, t->key, (size_t)n * sizeof t->key[0]);
    t->h_n = (uint32_t)n;
    t->h_f = hf;
    t->h_co = hco;
    t->h_instr = instr;
    t->h_ts = hts;
  } else {
    memcpy(t->key, t->h_key, t->h_n * sizeof t->key[0]);
  }
  return hand_carry(t, k, t->h_n);
}

int gpd_pyframes_handoff(gpd_pyframes_thread_t *t, const uintptr_t *ips, int n) {
  t->hand = 0;
  uint32_t nr = atomic_load_explicit(&hand.n, memory_order_acquire);
  if (nr == 0)
    return 0;
  int st = atomic_load_explicit(&py.state, memory_order_acquire);
  if (st != 1 && st != 2) /* the interpreter and its layout are known from 2 on */
    return 0;
  for (int i = 0; i < n; i++)
    for (uint32_t k = 0; k < nr; k++)
      if (ips[i] - 1 >= hand.r[k].lo && ips[i] - 1 < hand.r[k].hi) {
        /* PyTorch's engine: the forward operation of the node being
         * evaluated, when it was recorded; else the waiting caller */
        int got = hand.r[k].d->fwd ? gpd__pyframes_fwd_find(t) : 0;
        if (got > 0)
          return hand_carry(t, k, (uint32_t)got);
        got = hand_find(t, k, nr);
        if (!got) {
          t->n = 0; /* a walk may have filled them */
          t->nact = 0;
        }
        return got;
      }
  return 0;
}
