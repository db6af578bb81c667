/* fuzz-cubin.c - libFuzzer target: the cubin reader (ELF symbols and the
 * DWARF line program, analyzer/cubin.c) and the nvdisasm text parser with
 * CFG and loop recovery (analyzer/disasm.c, gcfg.c) on arbitrary
 * bytes -- the GPU binaries a client uploads to the daemon.
 *
 * Input: byte 0 even: the rest is a cubin (every function's lines are
 * looked up); odd: the rest is nvdisasm text (every section's CFG built). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gpu-analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int text = data[0] & 1;
  data++;
  size--;
  if (!text) {
    char err[256];
    gpd_cubin_t *c;
    if (gpd_cubin_open(data, size, &c, err, sizeof err) == 0) {
      for (size_t i = 0; i < c->nfuncs; i++) {
        const char *f;
        uint32_t l;
        gpd_cubin_line_at(c, c->funcs[i].section, c->funcs[i].lo, &f, &l);
        (void)gpd_cubin_func_at(c, c->funcs[i].section, c->funcs[i].hi - 1);
      }
      gpd_cubin_free(c);
    }
    return 0;
  }
  gpd_disasm_t *d;
  if (gpd_disasm_parse((const char *)data, size, &d) == 0) {
    for (size_t i = 0; i < d->nsecs; i++) {
      const gpd_disasm_sec_t *s = &d->secs[i];
      gpd_gcfg_t *g;
      if (s->ninsns && gpd_gcfg_build(s, s->insns[0].off, s->insns[s->ninsns - 1].off + 16, &g) == 0)
        gpd_gcfg_free(g);
    }
    gpd_disasm_free(d);
  }
  return 0;
}
