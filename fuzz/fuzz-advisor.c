/* fuzz-advisor.c - libFuzzer target: the advisor (analyzer/advisor*.c) on
 * nvdisasm-like text from a client's binary -- the operand decoder, the
 * blamer's slices over the CFG, the thread-index analysis and every
 * optimizer.
 *
 * Input: the first 64 bytes seed the samples (pc, reason, counts) and the
 * control words; the rest is nvdisasm text (every section advised). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "advisor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 64)
    return 0;
  const uint8_t *seed = data;
  data += 64;
  size -= 64;
  gpd_disasm_t *d;
  if (gpd_disasm_parse((const char *)data, size, &d) != 0)
    return 0;
  for (size_t i = 0; i < d->nsecs; i++) {
    const gpd_disasm_sec_t *s = &d->secs[i];
    gpd_advisor_psamp_t ps[32];
    uint64_t ctrl[64];
    for (size_t q = 0; q < 32; q++) {
      uint64_t pc = s->ninsns ? s->insns[(seed[q] * 7u + q) % s->ninsns].off : 0;
      if (seed[q] & 0x80)
        pc += seed[(q + 1) % 64];
      ps[q] = (gpd_advisor_psamp_t){pc, seed[32 + q] % (GPD_ADV__COUNT + 1), (double)(seed[q] & 63),
                                (double)(seed[(q + 5) % 64] & 63)};
    }
    for (size_t q = 0; q < 64; q++)
      ctrl[q] = (uint64_t)seed[q] << 41 | (uint64_t)seed[(q * 13) % 64] << 49;
    gpd_advisor_input_t in = {.sec = s, .ctrl = (seed[0] & 1) ? ctrl : NULL, .nctrl = 64, .s = ps,
                          .ns = 32,
                          .launch = {.sm = 90, .sm_count = 132, .blocks = seed[1], .threads = seed[2] * 4,
                                     .regs = seed[3], .smem_static = seed[4] * 512.0}};
    gpd_advice_t *a;
    if (gpd_advisor_run(&in, &a) == 0)
      gpd_advisor_free(a);
  }
  gpd_disasm_free(d);
  return 0;
}
