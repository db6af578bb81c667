/* metric.h - the vendor-neutral metrics of seed 003 (HPCToolkit manual,
 * chapter "GPU-accelerated applications", Tables 8.1-8.6).
 *
 * Ids are stable: they are stored in profiles and sent on the wire.  Add
 * new metrics only at the end.  Units: time metrics are stored in ns and
 * shown in seconds (the tables' "(sec)"); byte metrics in bytes; COUNT in
 * operations.  Kernel characteristics (GKER:THR_REG ... GKER:OCC_THR) are
 * accumulated as sums over launches; the report shows them divided by
 * GKER:COUNT (per-launch mean) -- see gpd_metric_is_mean().
 *
 * The daemon's metric pool keeps a 64-bit mask of the ids a node holds
 * (daemon/profile.c), so every metric the daemon attributes must have an
 * id below 64.  The metrics from GINST on are computed by the CLI from the
 * pcsample tables and never stored (no stored row names their ids), so
 * CPUTIME (HPCToolkit's hpcrun event of the same name: CPU time from
 * samples of each thread's CPU-time clock, shown in seconds) went in before
 * them, at id 51; metrics the daemon never holds go at the end.
 */
#ifndef GPUPROF_METRIC_H
#define GPUPROF_METRIC_H

#include <stdint.h>

typedef enum gpd_unit_e { GPD_UNIT_NS = 0, GPD_UNIT_BYTES = 1, GPD_UNIT_COUNT = 2, GPD_UNIT_MEAN = 3 } gpd_unit_t;

/* A sub-metric FAM:SUB of family FAM: its enum FAM_SUB, its name, its
 * unit GPD_UNIT_<unit>, and its description: the family's prefix
 * GPD_METRIC_FAM_<FAM> followed by what. */
#define GPD_METRIC_SUB(X, fam, sub, unit, what) X(fam##_##sub, #fam ":" #sub, GPD_UNIT_##unit, GPD_METRIC_FAM_##fam what)
#define GPD_METRIC_FAM_GMEM "GPU memory alloc/free: "
#define GPD_METRIC_FAM_GMSET "GPU memory set: "
#define GPD_METRIC_FAM_GXCOPY "GPU explicit memory copy: "
#define GPD_METRIC_FAM_GSYNC "GPU synchronizations: "
#define GPD_METRIC_FAM_GKER "GPU kernel: "
#define GPD_METRIC_FAM_GINST "GPU instruction stalls: "
#define GPD_METRIC_FAM_GSAMP "GPU PC samples: "

/* The GPU instruction stall metrics (Table 8.7, GINST:STL_*), in the
 * order of the analyzer's gpd_stall_t (analyzer/gpu-analysis.h); CUPTI's
 * reason names map onto them in analyzer/stall.c. */
#define GPD_STALL_METRICS(X)                                                                 \
  GPD_METRIC_SUB(X, GINST, STL_NONE, COUNT, "no stall")                                                 \
  GPD_METRIC_SUB(X, GINST, STL_IFET, COUNT, "await availability of next instruction (fetch or branch delay)") \
  GPD_METRIC_SUB(X, GINST, STL_IDEP, COUNT, "await satisfaction of instruction input dependence")       \
  GPD_METRIC_SUB(X, GINST, STL_GMEM, COUNT, "await completion of global memory access")                 \
  GPD_METRIC_SUB(X, GINST, STL_TMEM, COUNT, "texture memory request queue full")                        \
  GPD_METRIC_SUB(X, GINST, STL_SYNC, COUNT, "await completion of thread or memory synchronization")     \
  GPD_METRIC_SUB(X, GINST, STL_CMEM, COUNT, "await completion of constant or immediate memory access")  \
  GPD_METRIC_SUB(X, GINST, STL_PIPE, COUNT, "await completion of required compute resources")           \
  GPD_METRIC_SUB(X, GINST, STL_MTHR, COUNT, "global memory request queue full")                         \
  GPD_METRIC_SUB(X, GINST, STL_NSEL, COUNT, "not selected for issue but ready")                         \
  GPD_METRIC_SUB(X, GINST, STL_OTHR, COUNT, "other")                                                    \
  GPD_METRIC_SUB(X, GINST, STL_SLP, COUNT, "sleep")

/* X(ENUM, "NAME", unit, description) */
#define GPD_METRIC_MAP(X)                                                            \
  X(GPUOP, "GPUOP", GPD_UNIT_NS, "Total GPU operation time: sum of GKER, GMEM, GMSET, GXCOPY, GSYNC") \
  X(GKER, "GKER", GPD_UNIT_NS, "GPU time: kernel execution")                        \
  X(GMEM, "GMEM", GPD_UNIT_NS, "GPU time: memory allocation/deallocation")          \
  X(GMSET, "GMSET", GPD_UNIT_NS, "GPU time: memory set")                             \
  X(GXCOPY, "GXCOPY", GPD_UNIT_NS, "GPU time: explicit data copy")                   \
  X(GSYNC, "GSYNC", GPD_UNIT_NS, "GPU time: synchronization")                        \
  GPD_METRIC_SUB(X, GMEM, UNK, BYTES, "unknown memory kind")                                            \
  GPD_METRIC_SUB(X, GMEM, PAG, BYTES, "pageable memory")                                                \
  GPD_METRIC_SUB(X, GMEM, PIN, BYTES, "pinned memory")                                                  \
  GPD_METRIC_SUB(X, GMEM, DEV, BYTES, "device memory")                                                  \
  GPD_METRIC_SUB(X, GMEM, ARY, BYTES, "array memory")                                                   \
  GPD_METRIC_SUB(X, GMEM, MAN, BYTES, "managed memory")                                                 \
  GPD_METRIC_SUB(X, GMEM, DST, BYTES, "device static memory")                                           \
  GPD_METRIC_SUB(X, GMEM, MST, BYTES, "managed static memory")                                          \
  GPD_METRIC_SUB(X, GMEM, COUNT, COUNT, "count")                                                        \
  GPD_METRIC_SUB(X, GMSET, UNK, BYTES, "unknown memory kind")                                           \
  GPD_METRIC_SUB(X, GMSET, PAG, BYTES, "pageable memory")                                               \
  GPD_METRIC_SUB(X, GMSET, PIN, BYTES, "pinned memory")                                                 \
  GPD_METRIC_SUB(X, GMSET, DEV, BYTES, "device memory")                                                 \
  GPD_METRIC_SUB(X, GMSET, ARY, BYTES, "array memory")                                                  \
  GPD_METRIC_SUB(X, GMSET, MAN, BYTES, "managed memory")                                                \
  GPD_METRIC_SUB(X, GMSET, DST, BYTES, "device static memory")                                          \
  GPD_METRIC_SUB(X, GMSET, MST, BYTES, "managed static memory")                                         \
  GPD_METRIC_SUB(X, GMSET, COUNT, COUNT, "count")                                                       \
  GPD_METRIC_SUB(X, GXCOPY, UNK, BYTES, "unknown kind")                                                 \
  GPD_METRIC_SUB(X, GXCOPY, H2D, BYTES, "host to device")                                               \
  GPD_METRIC_SUB(X, GXCOPY, D2H, BYTES, "device to host")                                               \
  GPD_METRIC_SUB(X, GXCOPY, H2A, BYTES, "host to array")                                                \
  GPD_METRIC_SUB(X, GXCOPY, A2H, BYTES, "array to host")                                                \
  GPD_METRIC_SUB(X, GXCOPY, A2A, BYTES, "array to array")                                               \
  GPD_METRIC_SUB(X, GXCOPY, A2D, BYTES, "array to device")                                              \
  GPD_METRIC_SUB(X, GXCOPY, D2A, BYTES, "device to array")                                              \
  GPD_METRIC_SUB(X, GXCOPY, D2D, BYTES, "device to device")                                             \
  GPD_METRIC_SUB(X, GXCOPY, H2H, BYTES, "host to host")                                                 \
  GPD_METRIC_SUB(X, GXCOPY, P2P, BYTES, "peer to peer")                                                 \
  GPD_METRIC_SUB(X, GXCOPY, COUNT, COUNT, "count")                                                      \
  GPD_METRIC_SUB(X, GSYNC, UNK, NS, "unknown kind")                                                     \
  GPD_METRIC_SUB(X, GSYNC, EVT, NS, "event")                                                            \
  GPD_METRIC_SUB(X, GSYNC, STRE, NS, "stream event wait")                                               \
  GPD_METRIC_SUB(X, GSYNC, STR, NS, "stream")                                                           \
  GPD_METRIC_SUB(X, GSYNC, CTX, NS, "context")                                                          \
  GPD_METRIC_SUB(X, GSYNC, COUNT, COUNT, "count")                                                       \
  GPD_METRIC_SUB(X, GKER, STMEM, MEAN, "static memory (bytes)")                                         \
  GPD_METRIC_SUB(X, GKER, DYMEM, MEAN, "dynamic memory (bytes)")                                        \
  GPD_METRIC_SUB(X, GKER, LMEM, MEAN, "local memory (bytes)")                                           \
  GPD_METRIC_SUB(X, GKER, THR_REG, MEAN, "thread register count")                                       \
  GPD_METRIC_SUB(X, GKER, BLK_THR, MEAN, "thread count per block")                                      \
  GPD_METRIC_SUB(X, GKER, BLK, MEAN, "block count")                                                     \
  GPD_METRIC_SUB(X, GKER, BLK_SM, MEAN, "block local memory (bytes)")                                   \
  GPD_METRIC_SUB(X, GKER, COUNT, COUNT, "launch count")                                                 \
  GPD_METRIC_SUB(X, GKER, OCC_THR, MEAN, "theoretical occupancy (fraction)")                            \
  X(CPUTIME, "CPUTIME", GPD_UNIT_NS, "CPU time: samples of each thread's CPU-time clock") \
  X(GINST, "GINST", GPD_UNIT_COUNT, "GPU instructions executed (PC samples)")       \
  GPD_METRIC_SUB(X, GINST, STL_ANY, COUNT, "any")                                                       \
  GPD_STALL_METRICS(X)                                                              \
  GPD_METRIC_SUB(X, GSAMP, TOT, COUNT, "measured")                                                      \
  GPD_METRIC_SUB(X, GSAMP, DRP, COUNT, "dropped")                                                       \
  GPD_METRIC_SUB(X, GSAMP, EXP, COUNT, "expected")

typedef enum gpd_metric_e {
#define GPD_METRIC_ENUM(e, name, unit, desc) GPD_M_##e,
  GPD_METRIC_MAP(GPD_METRIC_ENUM)
#undef GPD_METRIC_ENUM
  GPD_M__COUNT
} gpd_metric_t;

/* Ids the daemon attributes fit its 64-bit pool masks (see above). */
_Static_assert(GPD_M_CPUTIME < 64, "daemon metric ids < 64");

/** Metric descriptor. */
typedef struct gpd_metric_desc_s {
  const char *name; /* "GXCOPY:H2D" */
  gpd_unit_t unit;
  const char *desc;
} gpd_metric_desc_t;

/** Descriptor of metric id, NULL if id >= GPD_M__COUNT. */
const gpd_metric_desc_t *gpd_metric_desc(unsigned id);
/** Unit as stored in metric_desc.unit: "ns", "bytes", "count", "mean". */
const char *gpd_metric_unit_name(gpd_unit_t u);
/** Id of a metric name, or -1. */
int gpd_metric_by_name(const char *name);
/** Metric ids for copy / mem / memset / sync subkinds (record.h enums);
 *  -1 when out of range. */
int gpd_metric_copy_bytes(unsigned copy_kind);
int gpd_metric_mem_bytes(unsigned mem_kind);
int gpd_metric_mset_bytes(unsigned mem_kind);
int gpd_metric_sync_time(unsigned sync_kind);

/** Accumulate one validated ACTIVITY into a dense metric vector
 *  v[GPD_M__COUNT] (the attribution rule, used by the daemon for every
 *  matched activity): time (end-start) to the op's time metric and GPUOP,
 *  bytes to the subkind byte metric, 1 to the op's COUNT, and for kernels
 *  the characteristics (sums; shown as means over GKER:COUNT).  GKER:OCC_THR
 *  is accumulated as a fraction (occ_permille / 1000). */
struct gpd_rec_activity_s;
void gpd_metric_accumulate(double *v, const struct gpd_rec_activity_s *a);

#endif
