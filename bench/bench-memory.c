/* bench-memory.c - daemon memory per calling-context node (issue: "a
 * daemon that holds a node's contexts in little memory", target <= 100
 * bytes per CCT node).
 *
 * Builds profiles in this process exactly as the monitor does
 * (gpd_profile_ingest of validated records): one module, 50 kernel names,
 * N NODE records shaped like bench-top's (a chain of 6 frames, then a
 * binary tree; call sites "100 functions x 100 call sites"), and one
 * INVOKE + ACTIVITY pair at every node, so each context gets a
 * <gpu kernel> placeholder and a kernel node (3 N CCT nodes).  Measures the
 * heap bytes in use (mallinfo2: arena + mmapped) and the process's RSS growth per CCT node,
 * and what the profile itself accounts for (gpd_profile_bytes), at 1 K,
 * 10 K and 100 K contexts per process and for 64 processes x 10 K.
 * Baseline in the same run: the bytes of the records the shim sent per
 * node (64-byte NODE, 64-byte INVOKE, 128-byte ACTIVITY).
 *
 *   bench-memory [--procs 64]
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "bench-kernels.h"
#include "daemon-client-lib.h"
#include "gpuprof/metric.h"

#define CHAIN 6u
#define KERNELS 50u

static uint64_t corr_n;

static long rss_kb(void) {
  char line[256];
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0)
      v = atol(line + 6);
  if (f)
    fclose(f);
  return v;
}

static uint32_t node_parent(uint32_t i) {
  if (i <= CHAIN)
    return i - 1;
  uint32_t j = i - CHAIN;
  return j == 1 ? CHAIN : (j / 2) + CHAIN;
}

/* One process's records into p; returns the bytes of records sent. */
static uint64_t build(gpd_profile_t *p, uint32_t nodes) {
  uint64_t bytes = 0;
  bench_kernel_names(p, "/nonexistent/bench-memory-app", KERNELS);
  for (uint32_t i = 1; i <= nodes; i++) {
    _Alignas(64) gpd_rec_node_t r;
    uint32_t f = i % 100, cs = (i / 100) % 100;
    gpd_dclient_node_init(&r, i, node_parent(i), 1,
                          0x1000 + 0x1000ull * f + 0x10ull * cs + 0x100000ull * (i / 10000));
    gpd_profile_ingest(p, &r, sizeof r);
    bytes += sizeof r;
  }
  for (uint32_t i = 1; i <= nodes; i++)
    bytes += bench_kernel_pair(p, i, ++corr_n, KERNELS);
  gpd_profile_retry(p);
  return bytes;
}

static void row(unsigned procs, uint32_t nodes) {
  malloc_trim(0);
  struct mallinfo2 m0 = mallinfo2();
  size_t h0 = m0.uordblks + m0.hblkhd;
  long r0 = rss_kb();
  gpd_profile_t *p = calloc(procs, sizeof *p);
  uint64_t cct = 0, rec = 0, acct = 0;
  double launches = 0;
  for (unsigned k = 0; k < procs; k++) {
    gpd_profile_init(&p[k], k + 1);
    rec += build(&p[k], nodes);
    cct += p[k].nnodes;
    acct += gpd_profile_bytes(&p[k]);
  }
  struct mallinfo2 m1 = mallinfo2();
  size_t h1 = m1.uordblks + m1.hblkhd;
  long r1 = rss_kb();
  for (unsigned k = 0; k < procs; k++)
    for (uint32_t i = 0; i < p[k].nnodes; i++)
      launches += gpd_profile_node_metric(&p[k], &p[k].nodes[i], GPD_M_GKER_COUNT);
  printf("| %4u x %6u | %9llu | %8.1f | %8.1f | %8.1f | %8.1f | %7.1f MiB | %s |\n", procs, nodes,
         (unsigned long long)cct, (double)(h1 - h0) / (double)cct, (double)(r1 - r0) * 1024.0 / (double)cct,
         (double)acct / (double)cct, (double)rec / (double)cct, (double)(r1 - r0) / 1024.0,
         launches == (double)procs * nodes ? "exact" : "MISMATCH");
  for (unsigned k = 0; k < procs; k++)
    gpd_profile_free(&p[k]);
  free(p);
}

int main(int argc, char **argv) {
  unsigned procs = 64;
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--procs") == 0)
      procs = (unsigned)atoi(argv[++i]);
  printf("daemon memory per CCT node (profiles built by gpd_profile_ingest; contexts x 3 CCT\n"
         "nodes: frame, <gpu kernel>, kernel); baseline: record bytes the shim sent per node\n");
  printf("| %-13s | %9s | %8s | %8s | %8s | %8s | %11s | %s |\n", "procs x ctx", "CCT nodes",
         "heap B/n", "RSS B/n", "acct B/n", "recs B/n", "RSS growth", "check");
  printf("|---------------|-----------|----------|----------|----------|----------|-------------|-------|\n");
  row(1, 1000);
  row(1, 10000);
  row(1, 100000);
  row(procs, 10000);
  printf("target: <= 100 bytes per CCT node\n");
  return 0;
}
