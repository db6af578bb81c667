/* test-cut - where a captured path ends.  Part 1: the cut rule over
 * synthetic frame lists (gpd_shim__cut_ranges).  Part 2: a real program:
 * libcapvendor.so, registered as a vendor after the shim started, runs
 * vendor -> libc -> vendor code below its API before capturing (or calls
 * back into the user); the leaf must be the user's call of the API (or
 * the callback's call site, below the vendor frames it came through).
 * Usage: test-cut DIR (where libcapvendor.so is). */
#include <dlfcn.h>
#include <limits.h>

#include "drain.h"
#include "module.h"
#include "shim.h"

int gpd_shim__cut_ranges(const uintptr_t *ips, int n, const gpd_module_range_t *r, int nr);

#define NOINLINE __attribute__((noinline))
static dr_t D;

/* ---------------------------------------------------------------- rule */

enum { S = 0x10000, V = 0x20000, V2 = 0x30000, G = 0x40000, U = 0x50000 };
static const gpd_module_range_t R[] = {
    {S, S + 0x1000, GPD_MODCLS_SHIM},   {V, V + 0x1000, GPD_MODCLS_VENDOR},
    {V2, V2 + 0x1000, GPD_MODCLS_VENDOR}, {G, G + 0x1000, GPD_MODCLS_GLUE},
};

static int cut(const uintptr_t *ips, int n) { return gpd_shim__cut_ranges(ips, n, R, 4); }
#define CUT(want, ...)                                                                   \
  do {                                                                                   \
    const uintptr_t f_[] = {__VA_ARGS__};                                                \
    int n_ = (int)(sizeof f_ / sizeof f_[0]), got_ = cut(f_, n_);                        \
    DR_CHECK(got_ == (want), "frames %s: cut %d, want %d", #__VA_ARGS__, got_, (want));  \
  } while (0)

static void rule(void) {
  DR_CHECK(cut(NULL, 0) == 0, "empty");
  CUT(0, U + 1, U + 2);                                  /* nothing to cut */
  CUT(2, S + 1, S + 2, U + 1, U + 2);                    /* the shim's own frames */
  /* The H100 path: shim, CUPTI x5, driver, runtime, then the user. */
  CUT(8, S + 1, V + 1, V + 2, V + 3, V + 4, V + 5, V2 + 1, V2 + 2, U + 1, U + 2);
  CUT(5, S + 1, V + 1, G + 1, G + 2, V2 + 1, U + 1);     /* libc between vendor frames */
  CUT(2, S + 1, V + 1, G + 1, U + 1);                    /* glue above the last vendor frame stays */
  CUT(1, S + 1, U + 1, V + 1, U + 2);                    /* a user callback below the vendor */
  CUT(3, S + 1, V + 1, V2 + 1);                          /* vendor all the way: nothing left */
  CUT(2, G + 1, S + 1, U + 1);                           /* glue first, then the shim: one run */
  /* A return address just past a module's end is a call from its last
   * bytes: classified by ip - 1. */
  CUT(2, S + 1, V + 0x1000, U + 1);
  CUT(1, S + 1, V + 0x1001, U + 1);
}

/* -------------------------------------------------------- real program */

static const char *fn_of(uint32_t id, uint32_t *parent) {
  const gpd_rec_node_t *n = dr_node(&D, id);
  if (!n)
    DR_FAIL("node %u never announced", id);
  *parent = n->parent;
  const gpd_rec_module_t *m = dr_module(&D, n->module, NULL);
  Dl_info info;
  if (!dladdr((void *)(uintptr_t)(n->offset + (m ? m->base : 0)), &info) || !info.dli_sname)
    return "?";
  return info.dli_sname;
}

static uint32_t (*api)(int, uint32_t (*)(void));

NOINLINE uint32_t user_cb(void) {
  uint32_t id = gpd_shim_capture();
  __asm__ volatile("" ::: "memory");
  return id;
}
NOINLINE uint32_t user_calls_api(int mode) {
  uint32_t id = api(mode, user_cb);
  __asm__ volatile("" ::: "memory");
  return id;
}

int main(int argc, char **argv) {
  DR_CHECK(argc == 2, "usage: test-cut DIR");
  rule();
  dr_attach(&D, 8, 4096);
  /* Registered before the library is loaded: the shim's table does not
   * know it at the first capture (as with CUDA's libraries). */
  gpd_shim_vendor_module("libcapvendor");
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/libcapvendor.so", argv[1]);
  void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  DR_CHECK(h, "dlopen %s: %s", p, dlerror());
  *(void **)&api = dlsym(h, "capvendor_api");
  DR_CHECK(api, "dlsym capvendor_api");

  uint32_t par, id = user_calls_api(0);
  dr_drain(&D);
  DR_CHECK(id, "capture below the API returned 0");
  const char *f = fn_of(id, &par);
  DR_CHECK(strcmp(f, "user_calls_api") == 0, "path ends in %s, want the user's call of the API", f);
  DR_CHECK(strcmp(fn_of(par, &par), "main") == 0, "parent of the API call site");

  /* A user callback below the vendor: kept, with the vendor frame above. */
  uint32_t cb = user_calls_api(1);
  dr_drain(&D);
  f = fn_of(cb, &par);
  DR_CHECK(strcmp(f, "user_cb") == 0, "callback path ends in %s", f);
  const gpd_rec_node_t *vn = dr_node(&D, par);
  DR_CHECK(vn, "callback's parent announced");
  int mi = -1;
  DR_CHECK(dr_module(&D, vn->module, &mi) && strstr(D.mod_path[mi], "libcapvendor.so"),
           "callback's parent must be the vendor's call of it");
  DR_CHECK(strcmp(fn_of(par, &par), "capvendor_api") == 0, "vendor frame name");
  DR_CHECK(strcmp(fn_of(par, &par), "user_calls_api") == 0, "vendor frame's parent");

  /* No node of the process lies in the vendor library except that one. */
  int in_vendor = 0;
  for (int i = 0; i < D.nnodes; i++) {
    int k = -1;
    if (dr_module(&D, D.nodes[i].module, &k) && strstr(D.mod_path[k], "libcapvendor.so"))
      in_vendor++;
  }
  DR_CHECK(in_vendor == 1, "%d nodes in the vendor library, want 1", in_vendor);
  DR_CHECK(D.bad == 0, "%d bad records", D.bad);
  printf("test-cut: ok\n");
  return 0;
}
