/* gpubin-send: hands two GPU binaries to the shim the way the CUPTI back
 * end does at module load (gpd_shim_gpubin), one of them twice, and writes
 * their bytes to OUTDIR/big.bin and OUTDIR/small.bin for comparison.
 *   gpubin-send OUTDIR        (linked with libgpuprof.so) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

static int save(const char *dir, const char *name, const unsigned char *p, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, n, f) != n)
    return -1;
  return fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  size_t nbig = (5u << 20) / 2 + 123, nsmall = 4096; /* 2.5 MiB: three 1 MiB chunks */
  unsigned char *big = malloc(nbig), *small = malloc(nsmall);
  if (!big || !small)
    return 1;
  unsigned x = 12345;
  for (size_t i = 0; i < nbig; i++)
    big[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
  memset(small, 0x7f, nsmall);
  if (save(argv[1], "big.bin", big, nbig) || save(argv[1], "small.bin", small, nsmall))
    return 1;
  int r1 = gpd_shim_gpubin(big, nbig, "cubin");
  int r2 = gpd_shim_gpubin(small, nsmall, "cubin");
  int r3 = gpd_shim_gpubin(big, nbig, "cubin"); /* same content: sent once */
  printf("gpubin %d %d %d\n", r1, r2, r3);
  free(big);
  free(small);
  return r1 || r2 || r3;
}
