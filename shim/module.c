/* module.c - the shim's load-module table (module.h): module ids and
 * MODULE announcements, the frame classes that decide where a captured
 * path ends, and mapping generations so that a library unloaded and
 * replaced at the same addresses never lends its name to the new one.
 *
 * Table: append-only array of entries, published by a release store of
 * the count; an entry's range, bias, path, build-id and tag never change
 * once published (only `live`, `cls` and the announcement word do), so
 * lookups need no lock.  Refreshes (dl_iterate_phdr) run under
 * table_lock: at init, when an address falls in no known module and the
 * loader's add/sub counters moved, when a vendor is registered, and
 * before the first capture after a dlclose that unmapped something.
 *
 * Unloads: the shim interposes dlclose (exported from libgpuprof.so) and
 * bumps gpd_module__gen when the loader's dlpi_subs counter moved across
 * the call.  Capture drops its per-thread memo and recorded unwinds on a
 * new generation; the next refresh marks the modules that are gone.  A
 * module mapped over addresses of a gone one gets a fresh 16-bit address
 * tag; capture keys its frames with (ip | tag << 48), so the intern table
 * gives them new nodes that are announced with the new module.  Tags wrap
 * after 65535 reuses (skipping 0); x86-64 and AArch64 user addresses are
 * below 2^48 with the default (4-level) page tables.
 *
 * Classes (see gpd_module_cut): the shim itself; vendor libraries, chosen
 * by basename prefix (built-in list below + gpd_shim_vendor_module); glue
 * (libc, libstdc++, ld.so...), which is cut only where it lies between
 * vendor frames; everything else is the user's.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof/log.h"
#include "internal.h"
#include "module.h"

#define MODULE_PATH_MAX 4096
#define MODULE_GONE_MAX 256 /* gone modules checked by address before a lookup */
#define MODULE_PREFIX_MAX 48

typedef struct module_s {
  uintptr_t lo, hi; /* [lo, hi) covers the PT_LOAD segments */
  uintptr_t bias;   /* dlpi_addr */
  uint32_t id;
  uint32_t tag;     /* address tag: 0 unless it took a gone module's addresses */
  uint32_t seen;    /* refresh number it was last seen in (under table_lock) */
  _Atomic uint32_t live;
  _Atomic uint32_t cls;
  _Atomic uint32_t ann;
  uint8_t build_id[20];
  uint8_t build_id_len;
  char *path;
} module_t;

_Atomic uint32_t gpd_module__gen;

static module_t modules[GPD_MODULE_MAX];
static _Atomic uint32_t nmodules;
static _Atomic uint32_t special[GPD_MODULE_SPECIAL_MAX]; /* indices of non-user modules */
static _Atomic uint32_t nspecial;
static _Atomic uint32_t gone[MODULE_GONE_MAX]; /* indices of modules that were unloaded */
static _Atomic uint32_t ngone;                 /* all of them (may exceed MODULE_GONE_MAX) */
static _Atomic uint32_t table_version;         /* bumps when the table changed */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long seen_adds, seen_subs; /* loader counters at the last refresh */
static _Atomic uint32_t synced_gen;             /* gpd_module__gen at the last refresh */
static uint32_t scan_no;
static uint32_t tag_next;
static uintptr_t shim_anchor;
static char exe_path[MODULE_PATH_MAX];
static int log_once_full, log_once_special;

/* Vendor and glue libraries by basename prefix; back ends add theirs. */
static char vendors[64][MODULE_PREFIX_MAX] = {
    "libcuda.so", "libcudart.so", "libcupti.so", "libnvidia-", "libOpenCL.so",
    "libpocl",    "libze_loader.so"};
static uint32_t nvendors = 7;
/* Sanitizer runtimes count as glue: they intercept libc (qsort, ...) and
 * so sit between frames the way libc does. */
static const char *const glue[] = {"libc.so",     "libpthread.so", "libdl.so",   "ld-linux",
                                   "libgcc_s.so", "libstdc++.so",  "librt.so",   "libm.so",
                                   "libasan.so",  "libtsan.so",    "libubsan.so", "liblsan.so"};

/* --------------------------------------------------------------- helpers */

static int has_prefix(const char *path, const char *prefix) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strncmp(base, prefix, strlen(prefix)) == 0;
}

static uint32_t path_class(const char *path, uintptr_t lo, uintptr_t hi) {
  if (shim_anchor >= lo && shim_anchor < hi)
    return GPD_MODCLS_SHIM;
  for (uint32_t i = 0; i < nvendors; i++)
    if (has_prefix(path, vendors[i]))
      return GPD_MODCLS_VENDOR;
  for (size_t i = 0; i < sizeof glue / sizeof *glue; i++)
    if (has_prefix(path, glue[i]))
      return GPD_MODCLS_GLUE;
  return GPD_MODCLS_USER;
}

/* Under table_lock: make module i count for the cut. */
static void special_add(uint32_t i) {
  uint32_t n = atomic_load_explicit(&nspecial, memory_order_relaxed);
  for (uint32_t k = 0; k < n; k++)
    if (atomic_load_explicit(&special[k], memory_order_relaxed) == i)
      return;
  if (n >= GPD_MODULE_SPECIAL_MAX) {
    GPD_LOG_ONCE(log_once_special, GPD_LOG_WARN, "too many vendor/system modules; %s is not cut from paths",
                 modules[i].path);
    return;
  }
  atomic_store_explicit(&special[n], i, memory_order_relaxed);
  atomic_store_explicit(&nspecial, n + 1, memory_order_release);
}

static void module_build_id(struct dl_phdr_info *info, module_t *m) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE)
      continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
      size_t namesz = (nh->n_namesz + 3u) & ~3u, descsz = (nh->n_descsz + 3u) & ~3u;
      const uint8_t *name = p + sizeof *nh, *desc = name + namesz;
      if (desc + descsz > end)
        break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        size_t n = nh->n_descsz < sizeof m->build_id ? nh->n_descsz : sizeof m->build_id;
        memcpy(m->build_id, desc, n);
        m->build_id_len = (uint8_t)n;
        return;
      }
      p = desc + descsz;
    }
  }
}

/* ------------------------------------------------------------- refresh */

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  int *changed = arg;
  (void)size;
  seen_adds = info->dlpi_adds;
  seen_subs = info->dlpi_subs;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
    if (a < lo)
      lo = a;
    if (b > hi)
      hi = b;
  }
  if (lo >= hi)
    return 0;
  const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : exe_path;
  module_t probe;
  memset(&probe, 0, sizeof probe);
  module_build_id(info, &probe);
  uint32_t n = atomic_load_explicit(&nmodules, memory_order_relaxed);
  for (uint32_t i = n; i-- > 0;) {
    module_t *m = &modules[i];
    if (m->lo != lo || m->hi != hi || m->bias != info->dlpi_addr || strcmp(m->path, path) != 0)
      continue;
    if (atomic_load_explicit(&m->live, memory_order_relaxed)) {
      m->seen = scan_no;
      return 0;
    }
    /* The same file mapped again at the same place: the same module. */
    if (m->build_id_len == probe.build_id_len && memcmp(m->build_id, probe.build_id, m->build_id_len) == 0) {
      m->seen = scan_no;
      atomic_store_explicit(&m->live, 1, memory_order_release);
      *changed = 1;
      return 0;
    }
    break; /* a different file: a new entry */
  }
  if (n >= GPD_MODULE_MAX) {
    GPD_LOG_ONCE(log_once_full, GPD_LOG_WARN, "module table full (%u); later libraries have no module",
                 GPD_MODULE_MAX);
    return 0;
  }
  module_t *m = &modules[n];
  memset(m, 0, sizeof *m);
  m->path = strdup(path);
  if (!m->path)
    return 0;
  m->lo = lo;
  m->hi = hi;
  m->bias = info->dlpi_addr;
  m->id = gpd_shim__id_next();
  m->seen = scan_no;
  memcpy(m->build_id, probe.build_id, sizeof m->build_id);
  m->build_id_len = probe.build_id_len;
  /* Addresses another module had (gone, or going: a live entry that
   * overlaps a new mapping is one this scan will mark gone): new keys. */
  for (uint32_t i = 0; i < n; i++)
    if (modules[i].lo < hi && lo < modules[i].hi) {
      if (++tag_next > 0xffffu)
        tag_next = 1;
      m->tag = tag_next;
      break;
    }
  uint32_t cls = path_class(path, lo, hi);
  atomic_store_explicit(&m->cls, cls, memory_order_relaxed);
  atomic_store_explicit(&m->live, 1, memory_order_relaxed);
  atomic_store_explicit(&nmodules, n + 1, memory_order_release);
  if (cls != GPD_MODCLS_USER)
    special_add(n);
  gpd_pyframes_module(info, path); /* a framework's dispatch function (pyframes.h) */
  *changed = 1;
  return 0;
}

static void refresh_locked(void) {
  int changed = 0;
  scan_no++;
  atomic_store_explicit(&synced_gen, atomic_load_explicit(&gpd_module__gen, memory_order_acquire),
                        memory_order_relaxed);
  dl_iterate_phdr(scan_cb, &changed);
  uint32_t n = atomic_load_explicit(&nmodules, memory_order_relaxed);
  for (uint32_t i = 0; i < n; i++) {
    module_t *m = &modules[i];
    if (!atomic_load_explicit(&m->live, memory_order_relaxed) || m->seen == scan_no)
      continue;
    atomic_store_explicit(&m->live, 0, memory_order_release);
    uint32_t g = atomic_load_explicit(&ngone, memory_order_relaxed), k;
    for (k = 0; k < g && k < MODULE_GONE_MAX; k++)
      if (atomic_load_explicit(&gone[k], memory_order_relaxed) == i)
        break;
    if (k == g || k == MODULE_GONE_MAX) {
      if (g < MODULE_GONE_MAX)
        atomic_store_explicit(&gone[g], i, memory_order_relaxed);
      atomic_store_explicit(&ngone, g + 1, memory_order_release);
    }
    changed = 1;
  }
  if (changed)
    atomic_fetch_add_explicit(&table_version, 1, memory_order_release);
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  unsigned long long *c = arg;
  c[0] = info->dlpi_adds;
  c[1] = info->dlpi_subs;
  return 1;
}

static void loader_counters(unsigned long long c[2]) {
  c[0] = c[1] = 0;
  dl_iterate_phdr(counters_cb, c);
}

/* Refresh if the loader's set changed since the last one. */
static void refresh_if_moved(void) {
  unsigned long long c[2];
  loader_counters(c);
  pthread_mutex_lock(&table_lock);
  if (c[0] != seen_adds || c[1] != seen_subs)
    refresh_locked();
  pthread_mutex_unlock(&table_lock);
}

/* A frame in no known module, for the connection thread (gpd_module_want). */
static _Atomic uintptr_t want_ip;

void gpd_module_want(uintptr_t ip) {
  uintptr_t z = 0;
  atomic_compare_exchange_strong_explicit(&want_ip, &z, ip, memory_order_relaxed, memory_order_relaxed);
}

void gpd_module_service(void) {
  uintptr_t ip = atomic_exchange_explicit(&want_ip, 0, memory_order_relaxed);
  if (ip)
    (void)gpd_module_cut(&ip, 1, 1); /* refreshes the table on a miss */
}

void gpd_module_sync(void) {
  uint32_t gen = atomic_load_explicit(&gpd_module__gen, memory_order_acquire);
  if (gen == atomic_load_explicit(&synced_gen, memory_order_relaxed))
    return;
  pthread_mutex_lock(&table_lock);
  if (gen != atomic_load_explicit(&synced_gen, memory_order_relaxed))
    refresh_locked();
  pthread_mutex_unlock(&table_lock);
}

/* -------------------------------------------------------------- lookups */

static module_t *module_find(uintptr_t ip) {
  uint32_t n = atomic_load_explicit(&nmodules, memory_order_acquire);
  for (uint32_t i = n; i-- > 0;)
    if (ip >= modules[i].lo && ip < modules[i].hi && atomic_load_explicit(&modules[i].live, memory_order_acquire))
      return &modules[i];
  return NULL;
}

static module_t *module_lookup(uintptr_t ip, int may_sync) {
  module_t *m = module_find(ip);
  if (m || !may_sync)
    return m;
  refresh_if_moved();
  return module_find(ip);
}

uint32_t gpd_module_tag(uintptr_t ip, int may_sync) {
  uint32_t g = atomic_load_explicit(&ngone, memory_order_acquire);
  if (!g)
    return 0;
  if (g <= MODULE_GONE_MAX) {
    int hit = 0;
    for (uint32_t k = 0; k < g && !hit; k++) {
      const module_t *m = &modules[atomic_load_explicit(&gone[k], memory_order_relaxed)];
      hit = ip >= m->lo && ip < m->hi;
    }
    if (!hit)
      return 0; /* no module here ever went away: tag 0 as always */
  }
  const module_t *m = module_lookup(ip, may_sync);
  return m ? m->tag : 0xffffu; /* no module now: one tag for "unmapped" */
}

static uint32_t ip_class(uintptr_t ip) {
  uint32_t n = atomic_load_explicit(&nspecial, memory_order_acquire);
  for (uint32_t k = 0; k < n; k++) {
    const module_t *m = &modules[atomic_load_explicit(&special[k], memory_order_relaxed)];
    if (ip >= m->lo && ip < m->hi && atomic_load_explicit(&m->live, memory_order_relaxed))
      return atomic_load_explicit(&m->cls, memory_order_relaxed);
  }
  return GPD_MODCLS_USER;
}

static uint32_t range_class(uintptr_t ip, const gpd_module_range_t *r, int nr) {
  for (int k = 0; k < nr; k++)
    if (ip >= r[k].lo && ip < r[k].hi)
      return r[k].cls;
  return GPD_MODCLS_USER;
}

/* The cut rule over a class function (the frame
 * that ended the run is i (n if none). */
#define CUT_SCAN(CLASS_OF)                                                   \
  do {                                                                       \
    for (i = 0; i < n; i++) {                                                \
      uint32_t c = CLASS_OF(ips[i] - 1); /* call site, not return address */ \
      if (c == GPD_MODCLS_VENDOR || c == GPD_MODCLS_SHIM)                    \
        cut = i + 1;                                                         \
      else if (c != GPD_MODCLS_GLUE)                                         \
        break;                                                               \
    }                                                                        \
  } while (0)

int gpd_module_cut_ranges(const uintptr_t *ips, int n, const gpd_module_range_t *r, int nr) {
  int i, cut = 0;
#define RANGE_CLASS(ip) range_class(ip, r, nr)
  CUT_SCAN(RANGE_CLASS);
#undef RANGE_CLASS
  return cut;
}

/* Test hook (exported): the cut rule over explicit ranges. */
GPD_EXPORT int gpd_shim__cut_ranges(const uintptr_t *ips, int n, const gpd_module_range_t *r, int nr) {
  return gpd_module_cut_ranges(ips, n, r, nr);
}

/* Last user module a cut ended in, per thread: skips the table scan that
 * checks it is known (the common case: the same caller again). */
static __thread uintptr_t known_lo, known_hi;
static __thread uint32_t known_version;

int gpd_module_cut(const uintptr_t *ips, int n, int may_sync) {
  for (int pass = 0;; pass++) {
    int i, cut = 0;
    CUT_SCAN(ip_class);
    if (!may_sync || pass || i >= n)
      return cut;
    uintptr_t b = ips[i] - 1;
    uint32_t v = atomic_load_explicit(&table_version, memory_order_acquire);
    if (b >= known_lo && b < known_hi && v == known_version)
      return cut;
    const module_t *m = module_find(b);
    if (!m) {
      refresh_if_moved(); /* maybe a vendor library loaded since */
      m = module_find(b);
      if (!m)
        return cut; /* JIT code or the like: the user's */
      continue;
    }
    known_lo = m->lo;
    known_hi = m->hi;
    known_version = v;
    return cut;
  }
}

/* --------------------------------------------------------- announcement */

static int module_announce(module_t *m, uint32_t epoch) {
  uint32_t old;
  int c = gpd_shim__ann_claim(&m->ann, epoch, &old);
  if (c != 0)
    return c == 1;
  size_t len = strlen(m->path);
  if (len > MODULE_PATH_MAX)
    len = MODULE_PATH_MAX;
  _Alignas(8) uint8_t buf[sizeof(gpd_rec_module_t) + MODULE_PATH_MAX];
  gpd_rec_module_t *r = (gpd_rec_module_t *)buf;
  memset(r, 0, sizeof *r);
  r->h.type = GPD_REC_MODULE;
  r->h.version = GPD_REC_VERSION;
  r->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *r, len);
  r->h.len = (uint32_t)len;
  r->id = m->id;
  r->build_id_len = m->build_id_len;
  r->base = m->bias;
  r->size = m->hi - m->bias;
  memcpy(r->build_id, m->build_id, m->build_id_len);
  memcpy(r->path, m->path, len);
  int ok = gpd_thread_push(r, sizeof *r + len) == 0;
  gpd_shim__ann_done(&m->ann, epoch, old, ok);
  return ok;
}

uint32_t gpd_module_of(uintptr_t ip, uint32_t epoch, uint64_t *base, int *ok, int may_sync) {
  module_t *m = module_lookup(ip, may_sync);
  *ok = 1;
  if (!m) {
    *base = 0;
    return 0;
  }
  *base = m->bias;
  *ok = module_announce(m, epoch);
  return m->id;
}

/* -------------------------------------------------- registration, init */

GPD_EXPORT void gpd_shim_vendor_module(const char *prefix) {
  if (!prefix || !*prefix || strlen(prefix) >= MODULE_PREFIX_MAX)
    return;
  pthread_mutex_lock(&table_lock);
  int dup = 0;
  for (uint32_t i = 0; i < nvendors; i++)
    dup |= strcmp(vendors[i], prefix) == 0;
  if (!dup && nvendors < sizeof vendors / sizeof *vendors)
    snprintf(vendors[nvendors++], sizeof vendors[0], "%s", prefix);
  /* A back end registers when its libraries were just loaded: pick them
   * up now, before the first capture walks through them. */
  refresh_locked();
  uint32_t n = atomic_load_explicit(&nmodules, memory_order_relaxed);
  for (uint32_t i = 0; i < n; i++)
    if (atomic_load_explicit(&modules[i].cls, memory_order_relaxed) != GPD_MODCLS_SHIM &&
        has_prefix(modules[i].path, prefix)) {
      atomic_store_explicit(&modules[i].cls, GPD_MODCLS_VENDOR, memory_order_relaxed);
      special_add(i);
    }
  pthread_mutex_unlock(&table_lock);
}

void gpd_module_init(uintptr_t anchor) {
  shim_anchor = anchor;
  ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
  exe_path[n > 0 ? n : 0] = '\0';
  pthread_mutex_lock(&table_lock);
  refresh_locked();
  pthread_mutex_unlock(&table_lock);
}

/* table_lock is a leaf (only the loader's lock is taken under it): the
 * prepare handler takes it last, so a fork never copies a table that
 * another thread is half way through refreshing. */
void gpd_module_atfork_prepare(void) { pthread_mutex_lock(&table_lock); }

void gpd_module_atfork_parent(void) { pthread_mutex_unlock(&table_lock); }

void gpd_module_atfork_child(void) {
  pthread_mutex_init(&table_lock, NULL); /* held by prepare: start over */
  /* New process: new ids (the counter restarted), nothing announced. */
  uint32_t n = atomic_load(&nmodules);
  for (uint32_t i = 0; i < n; i++) {
    modules[i].id = gpd_shim__id_next();
    atomic_store(&modules[i].ann, 0);
  }
}

/* -------------------------------------------------------------- dlclose */

typedef int (*dlclose_fn)(void *);
static _Atomic(dlclose_fn) real_dlclose;

/* Interposed: after an unload, addresses may be reused by another library
 * (module.h).  Returns what the loader's dlclose returns. */
GPD_EXPORT int dlclose(void *handle) {
  dlclose_fn f = atomic_load_explicit(&real_dlclose, memory_order_acquire);
  if (!f) {
    *(void **)&f = dlsym(RTLD_NEXT, "dlclose");
    if (!f)
      return -1;
    atomic_store_explicit(&real_dlclose, f, memory_order_release);
  }
  unsigned long long before[2], after[2];
  loader_counters(before);
  int rc = f(handle);
  loader_counters(after);
  if (after[1] != before[1])
    atomic_fetch_add_explicit(&gpd_module__gen, 1, memory_order_release);
  return rc;
}
