/* ompt-translate.c - OMPT's target vocabulary -> the vendor-neutral one
 * (gpuprof/record.h): data operations to ops and copy/memory kinds,
 * construct kinds to context labels, a launch to a kernel name. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ompt.h"

unsigned gpd_ompt_data_op(ompt_target_data_op_t t, unsigned *subkind) {
  switch ((int)t) {
  case ompt_target_data_alloc:
  case ompt_target_data_alloc_async:
    *subkind = GPD_MEM_DEV;
    return GPD_OP_ALLOC;
  case ompt_target_data_delete:
  case ompt_target_data_delete_async:
    *subkind = GPD_MEM_DEV;
    return GPD_OP_FREE;
  case ompt_target_data_transfer_to_device:
  case ompt_target_data_transfer_to_device_async:
    *subkind = GPD_COPY_H2D;
    return GPD_OP_COPY;
  case ompt_target_data_transfer_from_device:
  case ompt_target_data_transfer_from_device_async:
    *subkind = GPD_COPY_D2H;
    return GPD_OP_COPY;
  default: /* associate, disassociate: no device work */
    *subkind = 0;
    return GPD_OP_NONE;
  }
}

const char *gpd_ompt_label(ompt_target_t kind) {
  switch ((int)kind) {
  case ompt_target_enter_data:
  case ompt_target_enter_data_nowait:
    return "<omp target enter data>";
  case ompt_target_exit_data:
  case ompt_target_exit_data_nowait:
    return "<omp target exit data>";
  case ompt_target_update:
  case ompt_target_update_nowait:
    return "<omp target update>";
  default:
    return "<omp target>";
  }
}

/* Field k (0-based) of psource ";file;function;line;column;;": its start
 * and length in *len, or NULL. */
static const char *psource_field(const char *ps, int k, size_t *len) {
  if (!ps || ps[0] != ';')
    return NULL;
  const char *f = ps + 1;
  for (int i = 0; i < k; i++) {
    f = strchr(f, ';');
    if (!f)
      return NULL;
    f++;
  }
  const char *e = strchr(f, ';');
  if (!e)
    return NULL;
  *len = (size_t)(e - f);
  return f;
}

void gpd_ompt_kernel_name(const char *psource, const void *codeptr_ra, char *buf, size_t n) {
  size_t flen = 0, llen = 0;
  const char *file = psource_field(psource, 0, &flen);
  const char *line = psource_field(psource, 2, &llen);
  if (file && line && flen > 0 && llen > 0 && llen < 12 && strncmp(file, "unknown", flen) != 0 &&
      strspn(line, "0123456789") >= llen && !(llen == 1 && line[0] == '0')) {
    const char *slash = memrchr(file, '/', flen);
    if (slash) {
      flen -= (size_t)(slash + 1 - file);
      file = slash + 1;
    }
    snprintf(buf, n, "omp target region @ %.*s:%.*s", (int)flen, file, (int)llen, line);
    return;
  }
  Dl_info di;
  if (codeptr_ra && dladdr(codeptr_ra, &di) && di.dli_fname && di.dli_fbase) {
    const char *base = strrchr(di.dli_fname, '/');
    snprintf(buf, n, "omp target region @ %s+0x%lx", base ? base + 1 : di.dli_fname,
             (unsigned long)((uintptr_t)codeptr_ra - (uintptr_t)di.dli_fbase));
    return;
  }
  snprintf(buf, n, "omp target region");
}
