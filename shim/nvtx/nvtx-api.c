/* nvtx-api.c - the shim as an NVTX v3 injection: NVTX's export table and
 * callback slots, the range callbacks, domains, registered strings and
 * names, and the back end that makes NVTX find the shim (docs/NVTX.md).
 *
 * How NVTX finds an injection (nvtx3/nvtxDetail/nvtxInit.h, load sequence
 * version 2): at a program's (or library's) first NVTX call, its
 * header-only client dlopens the library named by NVTX_INJECTION64_PATH and
 * calls its exported InitializeInjectionNvtx2(nvtxGetExportTable); failing
 * that, a statically linked InitializeInjectionNvtx2_fnptr (a weak, hidden
 * symbol of the client's own module: a preloaded library cannot provide
 * it; the lookup of an already loaded "InitializeInjectionNvtx2Preinject"
 * is compiled out).  So the back end's init (the shim's constructor) sets
 * NVTX_INJECTION64_PATH to the shim's own file when it is unset; dlopen of
 * that path returns the preloaded shim.  Every NVTX instance in the
 * process (each module that includes the headers has its own) calls the
 * init once; each gets the same callbacks.
 *
 * The init asks the export table NVTX_ETID_CALLBACKS for the CORE and
 * CORE2 modules' function tables: entry [cbid] points to the instance's
 * function pointer for that call, which the shim sets.  Calls left unset
 * (marks, categories, thread names, resources, the CUDA/OpenCL naming
 * calls) become no-ops in NVTX.  Returning 0 makes NVTX turn every call
 * into a no-op (GPUPROF_NVTX=0, a disabled shim).
 *
 * CUPTI: CUPTI also records NVTX (CUPTI_ACTIVITY_KIND_MARKER) only as the
 * NVTX injection (NVTX_INJECTION64_PATH=libcupti.so).  A process has one
 * injection: the shim does not enable CUPTI's NVTX activity, and it never
 * overrides a path that is already set (another tool's, e.g. Nsight
 * Systems or a CUPTI client that wants the markers); then it logs one line
 * and records no ranges.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "backends.h"
#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "internal.h"
#include "nvtx-internal.h"

/* ------------------------------------------------------------ names */

size_t gpd_nvtx_utf8(char *out, size_t cap, const wchar_t *w) {
  size_t n = 0;
  for (; w && *w; w++) {
    uint32_t c = (uint32_t)*w;
    char b[4];
    size_t k;
    if (c < 0x20 || c == 0x7f || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff) {
      b[0] = '?';
      k = 1;
    } else if (c < 0x80) {
      b[0] = (char)c;
      k = 1;
    } else if (c < 0x800) {
      b[0] = (char)(0xc0 | c >> 6);
      b[1] = (char)(0x80 | (c & 0x3f));
      k = 2;
    } else if (c < 0x10000) {
      b[0] = (char)(0xe0 | c >> 12);
      b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
      b[2] = (char)(0x80 | (c & 0x3f));
      k = 3;
    } else {
      b[0] = (char)(0xf0 | c >> 18);
      b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
      b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
      b[3] = (char)(0x80 | (c & 0x3f));
      k = 4;
    }
    if (n + k + 1 > cap)
      break;
    memcpy(out + n, b, k);
    n += k;
  }
  if (cap)
    out[n] = '\0';
  return n;
}

/* Append at most max bytes of UTF-8 text s to out at *n (control bytes as
 * '?', cut before a continuation byte). */
static void nvtx_put(char *out, size_t *n, const char *s, size_t max) {
  size_t k = 0;
  for (; s && s[k] && k < max; k++)
    ;
  if (s && s[k] && k > 0)
    while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
      k--; /* s[k] would start the cut-off part: keep whole characters */
  for (size_t i = 0; i < k; i++) {
    unsigned char c = (unsigned char)s[i];
    out[(*n)++] = (char)(c < 0x20 || c == 0x7f ? '?' : c);
  }
}

/* Labels seen (hashes; 0 empty): at most GPD_NVTX_LABELS distinct. */
static _Atomic uint64_t nvtx_labels[GPD_NVTX_LABELS];

/* 1 if the label hash h is (now) one of the kept labels. */
static int nvtx_label_known(uint64_t h) {
  h |= 1;
  for (uint32_t p = 0; p < 64; p++) {
    _Atomic uint64_t *e = &nvtx_labels[(h + p) % GPD_NVTX_LABELS];
    uint64_t v = atomic_load_explicit(e, memory_order_relaxed);
    if (v == h)
      return 1;
    if (v == 0) {
      if (atomic_compare_exchange_strong(e, &v, h) || v == h)
        return 1;
    }
  }
  return 0;
}

size_t gpd_nvtx_label(char *out, const char *dom, const gpd_nvtx_name_t *nm) {
  size_t n = 0;
  nvtx_put(out, &n, "<nvtx> ", 8);
  if (dom && dom[0]) {
    nvtx_put(out, &n, dom, GPD_NVTX_DOMAIN_NAME_MAX);
    nvtx_put(out, &n, "::", 2);
  }
  size_t at = n;
  if (nm->wide) {
    n += gpd_nvtx_utf8(out + n, GPD_NVTX_NAME_MAX + 1, nm->wide);
  } else {
    nvtx_put(out, &n, nm->ascii ? nm->ascii : nm->registered, GPD_NVTX_NAME_MAX);
  }
  out[n] = '\0';
  if (!nvtx_label_known(gpd_hash64(out, n, 0x6e767478))) {
    n = at;
    nvtx_put(out, &n, "<more names>", 16);
    out[n] = '\0';
    gpd_nvtx__count(GPD_NVTX_C_LABELS_FULL);
  }
  return n;
}

/* ---------------------------------------------------- domains, strings */

typedef struct nvtx_domain_s {
  char name[GPD_NVTX_DOMAIN_NAME_MAX + 1];
} nvtx_domain_t;

typedef struct nvtx_string_s {
  char text[GPD_NVTX_NAME_MAX + 1];
} nvtx_string_t;

/* domains[0] is the default domain (handle NULL); the last one takes every
 * domain created beyond the others */
static nvtx_domain_t nvtx_domains[GPD_NVTX_DOMAINS];
static _Atomic uint32_t nvtx_ndomains = 1;
static nvtx_string_t nvtx_strings[GPD_NVTX_STRINGS];
static _Atomic uint32_t nvtx_nstrings;
static nvtx_string_t nvtx_string_more = {"<more strings>"};

/* Domain index of handle h (0: NULL or not one of ours). */
static unsigned nvtx_domain_index(nvtxDomainHandle_t h) {
  uintptr_t p = (uintptr_t)h, b = (uintptr_t)nvtx_domains;
  if (p < b + sizeof nvtx_domains[0] || p >= b + sizeof nvtx_domains || (p - b) % sizeof nvtx_domains[0])
    return 0;
  return (unsigned)((p - b) / sizeof nvtx_domains[0]);
}

static const char *nvtx_domain_name(unsigned d) { return d ? nvtx_domains[d].name : NULL; }

static nvtxDomainHandle_t nvtx_domain_create(const char *name) {
  char buf[GPD_NVTX_DOMAIN_NAME_MAX + 1];
  size_t n = 0;
  nvtx_put(buf, &n, name ? name : "", GPD_NVTX_DOMAIN_NAME_MAX);
  buf[n] = '\0';
  uint32_t have = atomic_load_explicit(&nvtx_ndomains, memory_order_acquire);
  for (uint32_t d = 1; d < have && d < GPD_NVTX_DOMAINS; d++)
    if (strcmp(nvtx_domains[d].name, buf) == 0)
      return (nvtxDomainHandle_t)&nvtx_domains[d];
  /* a name's entry is written before the count that publishes it; two
   * threads creating one name at once may get two entries (same label) */
  uint32_t d = atomic_fetch_add_explicit(&nvtx_ndomains, 1, memory_order_acq_rel);
  if (d >= GPD_NVTX_DOMAINS - 1) {
    atomic_store_explicit(&nvtx_ndomains, GPD_NVTX_DOMAINS, memory_order_release);
    d = GPD_NVTX_DOMAINS - 1;
    if (!nvtx_domains[d].name[0])
      memcpy(nvtx_domains[d].name, "<more domains>", sizeof "<more domains>");
    return (nvtxDomainHandle_t)&nvtx_domains[d];
  }
  memcpy(nvtx_domains[d].name, buf, n + 1);
  return (nvtxDomainHandle_t)&nvtx_domains[d];
}

/* Registered strings by text: index + 1 into nvtx_strings (0 empty), so
 * that a program registering the same text again (in a loop) gets the same
 * handle and does not use up the table.  Two threads registering one text
 * at once may get two entries (same text). */
static _Atomic uint32_t nvtx_string_ix[2 * GPD_NVTX_STRINGS];

static nvtxStringHandle_t nvtx_string_register(const char *a, const wchar_t *w) {
  char text[GPD_NVTX_NAME_MAX + 1];
  size_t n = 0;
  if (w) {
    n = gpd_nvtx_utf8(text, sizeof text, w);
  } else {
    nvtx_put(text, &n, a ? a : "", GPD_NVTX_NAME_MAX);
    text[n] = '\0';
  }
  uint64_t h = gpd_hash64(text, n, 0x737472);
  for (uint32_t p = 0; p < 2 * GPD_NVTX_STRINGS; p++) {
    _Atomic uint32_t *e = &nvtx_string_ix[(h + p) % (2 * GPD_NVTX_STRINGS)];
    uint32_t ix = atomic_load_explicit(e, memory_order_acquire);
    if (ix && strcmp(nvtx_strings[ix - 1].text, text) == 0)
      return (nvtxStringHandle_t)&nvtx_strings[ix - 1];
    if (ix)
      continue;
    uint32_t i = atomic_fetch_add_explicit(&nvtx_nstrings, 1, memory_order_relaxed);
    if (i >= GPD_NVTX_STRINGS) {
      atomic_store_explicit(&nvtx_nstrings, GPD_NVTX_STRINGS, memory_order_relaxed);
      break;
    }
    memcpy(nvtx_strings[i].text, text, n + 1);
    /* published after its text; a lost race leaves the entry unindexed */
    atomic_compare_exchange_strong_explicit(e, &ix, i + 1, memory_order_release, memory_order_relaxed);
    return (nvtxStringHandle_t)&nvtx_strings[i];
  }
  return (nvtxStringHandle_t)&nvtx_string_more;
}

/* The text of registered string h ("" when not one of ours). */
static const char *nvtx_string_text(nvtxStringHandle_t h) {
  uintptr_t p = (uintptr_t)h, b = (uintptr_t)nvtx_strings;
  if (h == (nvtxStringHandle_t)&nvtx_string_more)
    return nvtx_string_more.text;
  if (p < b || p >= b + sizeof nvtx_strings || (p - b) % sizeof nvtx_strings[0])
    return "";
  return ((const nvtx_string_t *)h)->text;
}

/* The name an event attribute structure carries (NULL, a short or an
 * unknown message type: ""). */
static void nvtx_attr_name(const nvtxEventAttributes_t *a, gpd_nvtx_name_t *nm) {
  memset(nm, 0, sizeof *nm);
  nm->ascii = "";
  if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message)
    return;
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII:
    nm->ascii = a->message.ascii ? a->message.ascii : "";
    break;
  case NVTX_MESSAGE_TYPE_UNICODE:
    nm->ascii = NULL;
    nm->wide = a->message.unicode;
    break;
  case NVTX_MESSAGE_TYPE_REGISTERED:
    nm->ascii = NULL;
    nm->registered = nvtx_string_text(a->message.registered);
    break;
  default:
    break;
  }
}

/* --------------------------------------------------------- callbacks */

/* Open a range named nm in domain d (push or start). */
static int nvtx_open(unsigned d, int start, const gpd_nvtx_name_t *nm, uint64_t *id) {
  char label[GPD_NVTX_LABEL_MAX];
  size_t len = gpd_nvtx_label(label, nvtx_domain_name(d), nm);
  return gpd_nvtx_range_open(d, start, label, len, id);
}

static int nvtx_push_a(const char *m) {
  gpd_nvtx_name_t nm = {.ascii = m ? m : ""};
  return nvtx_open(0, 0, &nm, NULL);
}

static int nvtx_push_w(const wchar_t *m) {
  gpd_nvtx_name_t nm = {.wide = m ? m : L""};
  return nvtx_open(0, 0, &nm, NULL);
}

static int nvtx_push_ex(const nvtxEventAttributes_t *a) {
  gpd_nvtx_name_t nm;
  nvtx_attr_name(a, &nm);
  return nvtx_open(0, 0, &nm, NULL);
}

static int nvtx_pop(void) { return gpd_nvtx_range_pop(0); }

static nvtxRangeId_t nvtx_start(unsigned d, const gpd_nvtx_name_t *nm) {
  uint64_t id = 0;
  (void)nvtx_open(d, 1, nm, &id);
  return id;
}

static nvtxRangeId_t nvtx_start_a(const char *m) {
  gpd_nvtx_name_t nm = {.ascii = m ? m : ""};
  return nvtx_start(0, &nm);
}

static nvtxRangeId_t nvtx_start_w(const wchar_t *m) {
  gpd_nvtx_name_t nm = {.wide = m ? m : L""};
  return nvtx_start(0, &nm);
}

static nvtxRangeId_t nvtx_start_ex(const nvtxEventAttributes_t *a) {
  gpd_nvtx_name_t nm;
  nvtx_attr_name(a, &nm);
  return nvtx_start(0, &nm);
}

static void nvtx_end(nvtxRangeId_t id) { gpd_nvtx_range_end(id); }

static int nvtx_dpush_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a) {
  gpd_nvtx_name_t nm;
  nvtx_attr_name(a, &nm);
  return nvtx_open(nvtx_domain_index(h), 0, &nm, NULL);
}

static int nvtx_dpop(nvtxDomainHandle_t h) { return gpd_nvtx_range_pop(nvtx_domain_index(h)); }

static nvtxRangeId_t nvtx_dstart_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a) {
  gpd_nvtx_name_t nm;
  nvtx_attr_name(a, &nm);
  return nvtx_start(nvtx_domain_index(h), &nm);
}

static void nvtx_dend(nvtxDomainHandle_t h, nvtxRangeId_t id) {
  (void)h;
  gpd_nvtx_range_end(id);
}

static nvtxDomainHandle_t nvtx_dcreate_a(const char *name) { return nvtx_domain_create(name); }

static nvtxDomainHandle_t nvtx_dcreate_w(const wchar_t *name) {
  char buf[GPD_NVTX_DOMAIN_NAME_MAX + 1];
  gpd_nvtx_utf8(buf, sizeof buf, name);
  return nvtx_domain_create(buf);
}

/* Domains stay valid (a bounded table): a handle used after its destroy
 * still names its domain. */
static void nvtx_ddestroy(nvtxDomainHandle_t h) { (void)h; }

static nvtxStringHandle_t nvtx_dreg_a(nvtxDomainHandle_t h, const char *s) {
  (void)h;
  return nvtx_string_register(s, NULL);
}

static nvtxStringHandle_t nvtx_dreg_w(nvtxDomainHandle_t h, const wchar_t *s) {
  (void)h;
  return nvtx_string_register(NULL, s ? s : L"");
}

static void nvtx_initialize(const void *reserved) { (void)reserved; }

/* ------------------------------------------------------------- attach */

static _Atomic int nvtx_off;         /* GPUPROF_NVTX=0 */
static _Atomic uint32_t nvtx_attached; /* NVTX instances attached */

static void nvtx_slot(NvtxFunctionTable tab, unsigned n, unsigned cbid, NvtxFunctionPointer f) {
  if (tab && cbid < n && tab[cbid])
    *tab[cbid] = f;
}

#define NVTX_FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

int gpd_nvtx_attach(const void *(*get_export_table)(uint32_t)) {
  if (!get_export_table || atomic_load(&nvtx_off) || atomic_load(&gpd_shim__g.disabled))
    return 0;
  const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
  if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
    return 0;
  NvtxFunctionTable core = NULL, core2 = NULL;
  unsigned ncore = 0, ncore2 = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &ncore) || !core)
    return 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &ncore2))
    core2 = NULL;
  gpd_nvtx_ranges_init(gpd_shim_capture);
  nvtx_slot(core, ncore, NVTX_CBID_CORE_RangeStartEx, NVTX_FN(nvtx_start_ex));
  nvtx_slot(core, ncore, NVTX_CBID_CORE_RangeStartA, NVTX_FN(nvtx_start_a));
  nvtx_slot(core, ncore, NVTX_CBID_CORE_RangeStartW, NVTX_FN(nvtx_start_w));
  nvtx_slot(core, ncore, NVTX_CBID_CORE_RangeEnd, NVTX_FN(nvtx_end));
  nvtx_slot(core, ncore, NVTX_CBID_CORE_RangePushEx, NVTX_FN(nvtx_push_ex));
  nvtx_slot(core, ncore, NVTX_CBID_CORE_RangePushA, NVTX_FN(nvtx_push_a));
  nvtx_slot(core, ncore, NVTX_CBID_CORE_RangePushW, NVTX_FN(nvtx_push_w));
  nvtx_slot(core, ncore, NVTX_CBID_CORE_RangePop, NVTX_FN(nvtx_pop));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainRangeStartEx, NVTX_FN(nvtx_dstart_ex));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainRangeEnd, NVTX_FN(nvtx_dend));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainRangePushEx, NVTX_FN(nvtx_dpush_ex));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainRangePop, NVTX_FN(nvtx_dpop));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainRegisterStringA, NVTX_FN(nvtx_dreg_a));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainRegisterStringW, NVTX_FN(nvtx_dreg_w));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainCreateA, NVTX_FN(nvtx_dcreate_a));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainCreateW, NVTX_FN(nvtx_dcreate_w));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_DomainDestroy, NVTX_FN(nvtx_ddestroy));
  nvtx_slot(core2, ncore2, NVTX_CBID_CORE2_Initialize, NVTX_FN(nvtx_initialize));
  const NvtxExportTableVersionInfo *vi = get_export_table(NVTX_ETID_VERSIONINFO);
  if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
    vi->SetInjectionNvtxVersion(NVTX_VERSION);
  if (atomic_fetch_add(&nvtx_attached, 1) == 0)
    GPD_INFO("NVTX ranges are recorded as calling contexts");
  return 1;
}

/* ------------------------------------------------------------ back end */

/* 1 when files a and b are the same (device and inode). */
static int nvtx_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int nvtx_init(void) {
  const char *v = getenv("GPUPROF_NVTX");
  if (v && strcmp(v, "0") == 0) {
    atomic_store(&nvtx_off, 1);
    return 0;
  }
  gpd_nvtx_ranges_init(gpd_shim_capture);
  Dl_info di;
  char self[PATH_MAX];
  if (!dladdr((void *)&gpd_nvtx_attach, &di) || !di.dli_fname || !realpath(di.dli_fname, self))
    return -ENOENT;
  const char *p = getenv("NVTX_INJECTION64_PATH");
  if (!p || !*p)
    return setenv("NVTX_INJECTION64_PATH", self, 0) == 0 ? 0 : -errno;
  if (!nvtx_same_file(p, self))
    GPD_INFO("NVTX_INJECTION64_PATH=%s is another tool's: NVTX ranges are not recorded", p);
  return 0;
}

static void nvtx_fork_child(void) { gpd_nvtx_ranges_atfork_child(); }

const gpd_backend_t gpd_backend_nvtx = {
    .name = "nvtx",
    .api = GPD_API_NONE,
    .init = nvtx_init,
    .fork_child = nvtx_fork_child,
};
