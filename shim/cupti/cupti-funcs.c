/* cupti-funcs.c - the table of libcupti entry points (cupti-funcs.h)
 * and its resolver: each CUPTI API's list looked up with dlsym in the
 * handle cupti-api.c dlopen'd.  Below cupti-api.c, cupti-pcsampling.c and
 * cupti-sass.c, which all call through the table; calls nothing of theirs.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "cupti-funcs.h"

gpd_cupti_fn_t gpd_cupti_fn;

/* Each list's names and their places in gpd_cupti_fn. */
static const struct cupti_sym_s {
  const char *name;
  size_t off;
} *const cupti_lists[] = {
#define X(n, a) {#n, offsetof(gpd_cupti_fn_t, n)},
    [GPD_CUPTI_API_CORE] = (const struct cupti_sym_s[]){GPD_CUPTI_CORE(X){NULL, 0}},
    [GPD_CUPTI_API_PCS] = (const struct cupti_sym_s[]){GPD_CUPTI_PCS(X){NULL, 0}},
    [GPD_CUPTI_API_SASS] = (const struct cupti_sym_s[]){GPD_CUPTI_SASS(X){NULL, 0}},
#undef X
};

#define X(n, a) +1
enum { CUPTI_LIST_MAX = 16 };
_Static_assert(0 GPD_CUPTI_CORE(X) <= CUPTI_LIST_MAX && 0 GPD_CUPTI_PCS(X) <= CUPTI_LIST_MAX &&
                   0 GPD_CUPTI_SASS(X) <= CUPTI_LIST_MAX,
               "gpd_cupti_resolve's buffer holds every list");
#undef X

const char *gpd_cupti_resolve(void *lib, gpd_cupti_api_t api) {
  const struct cupti_sym_s *l = cupti_lists[api];
  void *got[CUPTI_LIST_MAX];
  size_t n = 0;
  for (; l[n].name; n++)
    if ((got[n] = dlsym(lib, l[n].name)) == NULL)
      return l[n].name;
  for (size_t i = 0; i < n; i++)
    memcpy((char *)&gpd_cupti_fn + l[i].off, &got[i], sizeof got[i]);
  if (api == GPD_CUPTI_API_CORE) {
    void *cu = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    *(void **)&gpd_cupti_fn.cuDeviceGetAttribute = cu ? dlsym(cu, "cuDeviceGetAttribute") : NULL;
  }
  return NULL;
}
