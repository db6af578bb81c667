/* opencl-layer.c - the shim as an OpenCL ICD loader layer (Khronos
 * cl_loader_layers: clGetLayerInfo + clInitLayer; ocl-icd >= 2.3 and the
 * Khronos loader load the layers named in OPENCL_LAYERS).
 *
 * Why: a program that reaches OpenCL through a private handle
 * (dlopen(RTLD_LOCAL) + dlsym, Python's ctypes.CDLL, framework loaders)
 * never calls the shim's interposed symbols.  Every such call still goes
 * through the loader's dispatch, and a layer sits in that dispatch.
 *
 *   constructor   appends the shim's own path to OPENCL_LAYERS (before any
 *                 loader can have read it; the user's layers are kept, ours
 *                 goes last = outermost, so it sees the application's calls
 *                 as made)
 *   clInitLayer   the loader hands us the next dispatch table (the driver's
 *                 or an inner layer's); our table points the recorded calls
 *                 at layer_<name>, which run gpd_ocl_call_<name> with that
 *                 next table; all other entries stay NULL (the loader
 *                 passes them through)
 *
 * Interposition stays for what a layer cannot see (a loader without layer
 * support, a program linked against a vendor libOpenCL): an interposed
 * symbol whose next definition lives in the loader that installed this
 * layer passes the call through untouched and the layer records it
 * (gpd_ocl_layer_covers); otherwise it records the call itself.  The
 * shim's reentrancy guard makes the layer pass through a call the
 * interposed symbol is already recording, so no call is counted twice.
 *
 * Thread rules: the constructor runs before the application's threads and
 * the shim's connection thread (priority 101); clInitLayer runs once under
 * the loader's initialization lock; the rest is lock-free reads of values
 * published with release stores.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_layer.h>

#include "gpuprof/log.h"
#include "opencl.h"

#define OCL_LAYER_NAME "gpuprof"
#define OCL_LAYERS_MAX 8192 /* longest OPENCL_LAYERS value we extend */

static cl_icd_dispatch layer_dispatch; /* ours: recorded calls only */
static const char *layer_why = "the ICD loader did not load it (no OPENCL_LAYERS support?)";
static int layer_off; /* GPUPROF_OPENCL_LAYER=0: refuse even an inherited OPENCL_LAYERS entry */
static int layer_log_fallback, layer_log_second;

/* ------------------------------------------------------- dispatch entries */

#define GPD_OCL_CALL(ret, name, params, args)                              \
  static ret CL_API_CALL layer_##name params {                             \
    return gpd_ocl_call_##name(&gpd_ocl_layer_next, GPD_OCL_UNPAREN args); \
  }
#include "opencl-calls.h"
#undef GPD_OCL_CALL

/* Index of dispatch member `m` (entries are pointers, in ICD order). */
#define OCL_DISPATCH_INDEX(m) (offsetof(cl_icd_dispatch, m) / sizeof(void *))

/* Entries our table must have: one past the highest recorded call. */
static cl_uint layer_entries_needed(void) {
  size_t n = 0;
#define GPD_OCL_CALL(ret, name, params, args) \
  if (OCL_DISPATCH_INDEX(name) + 1 > n)       \
    n = OCL_DISPATCH_INDEX(name) + 1;
#include "opencl-calls.h"
#undef GPD_OCL_CALL
  return (cl_uint)n;
}

/* ------------------------------------------------------------ layer API */

/** cl_loader_layers: CL_LAYER_API_VERSION (cl_layer_api_version, 100) or
 *  CL_LAYER_NAME (NUL-terminated string).  CL_INVALID_VALUE for another
 *  name or a too small buffer.  Any thread. */
GPD_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name, size_t param_value_size,
                                                          void *param_value, size_t *param_value_size_ret) {
  cl_layer_api_version version = CL_LAYER_API_VERSION_100;
  const void *src;
  size_t size;
  switch (param_name) {
  case CL_LAYER_API_VERSION:
    src = &version;
    size = sizeof version;
    break;
  case CL_LAYER_NAME:
    src = OCL_LAYER_NAME;
    size = sizeof OCL_LAYER_NAME;
    break;
  default:
    return CL_INVALID_VALUE;
  }
  if (param_value) {
    if (param_value_size < size)
      return CL_INVALID_VALUE;
    memcpy(param_value, src, size);
  }
  if (param_value_size_ret)
    *param_value_size_ret = size;
  return CL_SUCCESS;
}

/** cl_loader_layers: install the layer above `target_dispatch` (which has
 *  `num_entries` entries and stays valid for the life of the process).
 *  Returns CL_SUCCESS with *layer_dispatch_ret = our table (entries we do
 *  not record are NULL: the loader fills them from the target), or
 *  CL_INVALID_VALUE (bad arguments, a target too short or without the
 *  event calls the back end needs) or CL_INVALID_OPERATION (shim disabled,
 *  GPUPROF_OPENCL_LAYER=0, or a layer already installed by another loader: one next table only).
 *  Called by the loader once, under its initialization lock. */
GPD_EXPORT CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries, const cl_icd_dispatch *target_dispatch,
                                                       cl_uint *num_entries_ret,
                                                       const cl_icd_dispatch **layer_dispatch_ret) {
  /* The caller is the loader: its module is the one whose exported cl*
   * definitions reach this layer. */
  void *caller = __builtin_return_address(0);
  if (!target_dispatch || !num_entries_ret || !layer_dispatch_ret || num_entries < layer_entries_needed())
    return CL_INVALID_VALUE;
  if (layer_off || atomic_load(&gpd_shim__g.disabled))
    return CL_INVALID_OPERATION;
  if (atomic_load(&gpd_ocl__layer_base)) {
    GPD_LOG_ONCE(layer_log_second, GPD_LOG_WARN,
                 "OpenCL: a second ICD loader asked for the gpuprof layer; refused (interposition only there)");
    return CL_INVALID_OPERATION;
  }
  Dl_info info;
  if (!dladdr(caller, &info) || !info.dli_fbase)
    return CL_INVALID_VALUE;
  /* Next table: only the entries the loader has. */
#define GPD_OCL_FN(ret, name, args)                                                                          \
  gpd_ocl_layer_next.name =                                                                                  \
      OCL_DISPATCH_INDEX(name) < num_entries ? (ret(CL_API_CALL *) args)target_dispatch->name : NULL;
#include "opencl-fns.h"
#undef GPD_OCL_FN
  if (!gpd_ocl_layer_next.clSetEventCallback || !gpd_ocl_layer_next.clGetEventProfilingInfo ||
      !gpd_ocl_layer_next.clRetainEvent || !gpd_ocl_layer_next.clReleaseEvent)
    return CL_INVALID_VALUE;
  memset(&layer_dispatch, 0, sizeof layer_dispatch);
#define GPD_OCL_CALL(ret, name, params, args) layer_dispatch.name = layer_##name;
#include "opencl-calls.h"
#undef GPD_OCL_CALL
  *num_entries_ret = (cl_uint)(sizeof layer_dispatch / sizeof(void *));
  *layer_dispatch_ret = &layer_dispatch;
  atomic_store_explicit(&gpd_ocl__layer_base, (uintptr_t)info.dli_fbase, memory_order_release);
  GPD_INFO("OpenCL: loader layer installed by %s", info.dli_fname ? info.dli_fname : "?");
  return CL_SUCCESS;
}

/* -------------------------------------------------------- back-end side */

int gpd_ocl_layer_covers(void) {
  uintptr_t lb = atomic_load_explicit(&gpd_ocl__layer_base, memory_order_acquire);
  if (lb && lb == gpd_ocl_next_base())
    return 1;
  if (gpd_shim_active())
    GPD_LOG_ONCE(layer_log_fallback, GPD_LOG_WARN, "OpenCL: loader layer not in use (%s); recording by interposition",
                 lb ? "it was installed by another ICD loader" : layer_why);
  return 0;
}

/* ----------------------------------------------------------- constructor */

/* Does the ':'-separated list `list` name `self` (same string, or a path
 * that resolves to it)? */
static int layers_has(const char *list, const char *self) {
  char entry[PATH_MAX], real[PATH_MAX];
  const char *p = list;
  while (*p) {
    size_t n = strcspn(p, ":");
    if (n > 0 && n < sizeof entry) {
      memcpy(entry, p, n);
      entry[n] = '\0';
      if (strcmp(entry, self) == 0 || (realpath(entry, real) && strcmp(real, self) == 0))
        return 1;
    }
    p += n;
    if (*p == ':')
      p++;
  }
  return 0;
}

/* Name the shim in OPENCL_LAYERS, appended to the user's value.  Runs
 * before shim_ctor (priority 101), so before the connection thread exists
 * (setenv is not safe against concurrent getenv) and before the
 * application can have initialized a loader.  Logging is not set up yet:
 * a reason to stay off is kept in layer_why and logged on fallback. */
__attribute__((constructor(101))) static void ocl_layer_ctor(void) {
  const char *dis = getenv("GPUPROF_DISABLE");
  if (dis && *dis && strcmp(dis, "0") != 0)
    return;
  const char *knob = getenv("GPUPROF_OPENCL_LAYER");
  if (knob && strcmp(knob, "0") == 0) {
    layer_why = "GPUPROF_OPENCL_LAYER=0";
    layer_off = 1;
    return;
  }
  Dl_info info;
  char self[PATH_MAX];
  if (!dladdr((void *)&ocl_layer_ctor, &info) || !info.dli_fname || !*info.dli_fname) {
    layer_why = "the shim cannot find its own path";
    return;
  }
  if (!realpath(info.dli_fname, self))
    snprintf(self, sizeof self, "%s", info.dli_fname);
  if (strchr(self, ':')) {
    layer_why = "the shim's path contains ':' and cannot be named in OPENCL_LAYERS";
    return;
  }
  const char *cur = getenv("OPENCL_LAYERS");
  if (cur && layers_has(cur, self))
    return; /* inherited from a parent that was profiled */
  size_t clen = cur ? strlen(cur) : 0;
  if (clen + strlen(self) + 2 > OCL_LAYERS_MAX) {
    layer_why = "OPENCL_LAYERS is too long to extend";
    return;
  }
  size_t vn = clen + strlen(self) + 2;
  char *val = malloc(vn);
  if (!val) {
    layer_why = "out of memory";
    return;
  }
  snprintf(val, vn, "%s%s%s", clen ? cur : "", clen ? ":" : "", self);
  if (setenv("OPENCL_LAYERS", val, 1) != 0)
    layer_why = "setenv(OPENCL_LAYERS) failed";
  free(val);
}
