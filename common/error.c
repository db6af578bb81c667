/* error.c - names of gpuprof error codes (error.h). */
#include "gpuprof/error.h"

#include <string.h>

static const char *const gpd_err_msgs[] = {
#define GPD_ERR_MSG(name, msg) msg,
  GPD_ERRNO_MAP(GPD_ERR_MSG)
#undef GPD_ERR_MSG
};

const char *gpd_strerror(int err) {
  if (err == 0)
    return "success";
  if (err > GPD_E__BASE && err < GPD_E__END)
    return gpd_err_msgs[err - GPD_E__BASE - 1];
  if (err < 0 && err > -4096) {
    /* strerrordesc_np: static strings, thread-safe (glibc >= 2.32). */
    const char *s = strerrordesc_np(-err);
    return s ? s : "unknown error";
  }
  return "unknown error";
}
