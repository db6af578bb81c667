/* fuzz-frame.c - libFuzzer target: the frame decoder and the protobuf
 * payload decoder on arbitrary client bytes (the daemon's socket input).
 *
 * Input: byte 0 picks the feed chunk size (1..256), the rest is the
 * stream.  Every complete payload is unpacked as gpuprof.Msg and freed. */
#include <stddef.h>
#include <stdint.h>

#include "gpuprof.pb-c.h"
#include "gpuprof/error.h"
#include "gpuprof/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gpd_frame_dec_t d;
  if (size < 1)
    return 0;
  size_t chunk = (size_t)data[0] + 1;
  data++;
  size--;
  gpd_frame_dec_init(&d, 1u << 16);
  while (size > 0) {
    size_t n = size < chunk ? size : chunk;
    int rc = gpd_frame_dec_feed(&d, data, n);
    data += n;
    size -= n;
    if (rc < 0) {
      if (rc != GPD_EFRAMETOOBIG && rc != -12 /* ENOMEM */)
        __builtin_trap();
      break;
    }
    /* never more than one frame in progress plus this feed */
    if (d.len - d.off > (size_t)d.max + GPD_FRAME_HDR + n)
      __builtin_trap();
    const uint8_t *p;
    size_t pn;
    while ((rc = gpd_frame_dec_next(&d, &p, &pn)) == 1) {
      if (pn > d.max)
        __builtin_trap();
      Gpuprof__Msg *m = gpuprof__msg__unpack(NULL, pn, p);
      if (m)
        gpuprof__msg__free_unpacked(m, NULL);
    }
    if (rc < 0)
      break;
  }
  gpd_frame_dec_free(&d);
  return 0;
}
