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

/* The GPU instruction stall metrics (Table 8.7, GINST:STL_*), in the
 * order of the analyzer's gpd_stall_t (analyzer/gpu-analysis.h); CUPTI's
 * reason names map onto them in analyzer/gpu-stall.c. */
#define GPD_STALL_METRICS(X)                                                                 \
  X(GINST_STL_NONE, "GINST:STL_NONE", GPD_UNIT_COUNT, "GPU instruction stalls: no stall")    \
  X(GINST_STL_IFET, "GINST:STL_IFET", GPD_UNIT_COUNT, "GPU instruction stalls: await availability of next instruction (fetch or branch delay)") \
  X(GINST_STL_IDEP, "GINST:STL_IDEP", GPD_UNIT_COUNT, "GPU instruction stalls: await satisfaction of instruction input dependence") \
  X(GINST_STL_GMEM, "GINST:STL_GMEM", GPD_UNIT_COUNT, "GPU instruction stalls: await completion of global memory access") \
  X(GINST_STL_TMEM, "GINST:STL_TMEM", GPD_UNIT_COUNT, "GPU instruction stalls: texture memory request queue full") \
  X(GINST_STL_SYNC, "GINST:STL_SYNC", GPD_UNIT_COUNT, "GPU instruction stalls: await completion of thread or memory synchronization") \
  X(GINST_STL_CMEM, "GINST:STL_CMEM", GPD_UNIT_COUNT, "GPU instruction stalls: await completion of constant or immediate memory access") \
  X(GINST_STL_PIPE, "GINST:STL_PIPE", GPD_UNIT_COUNT, "GPU instruction stalls: await completion of required compute resources") \
  X(GINST_STL_MTHR, "GINST:STL_MTHR", GPD_UNIT_COUNT, "GPU instruction stalls: global memory request queue full") \
  X(GINST_STL_NSEL, "GINST:STL_NSEL", GPD_UNIT_COUNT, "GPU instruction stalls: not selected for issue but ready") \
  X(GINST_STL_OTHR, "GINST:STL_OTHR", GPD_UNIT_COUNT, "GPU instruction stalls: other")       \
  X(GINST_STL_SLP, "GINST:STL_SLP", GPD_UNIT_COUNT, "GPU instruction stalls: sleep")

/* X(ENUM, "NAME", unit, description) */
#define GPD_METRIC_MAP(X)                                                            \
  X(GPUOP, "GPUOP", GPD_UNIT_NS, "Total GPU operation time: sum of GKER, GMEM, GMSET, GXCOPY, GSYNC") \
  X(GKER, "GKER", GPD_UNIT_NS, "GPU time: kernel execution")                        \
  X(GMEM, "GMEM", GPD_UNIT_NS, "GPU time: memory allocation/deallocation")          \
  X(GMSET, "GMSET", GPD_UNIT_NS, "GPU time: memory set")                             \
  X(GXCOPY, "GXCOPY", GPD_UNIT_NS, "GPU time: explicit data copy")                   \
  X(GSYNC, "GSYNC", GPD_UNIT_NS, "GPU time: synchronization")                        \
  X(GMEM_UNK, "GMEM:UNK", GPD_UNIT_BYTES, "GPU memory alloc/free: unknown memory kind") \
  X(GMEM_PAG, "GMEM:PAG", GPD_UNIT_BYTES, "GPU memory alloc/free: pageable memory")  \
  X(GMEM_PIN, "GMEM:PIN", GPD_UNIT_BYTES, "GPU memory alloc/free: pinned memory")    \
  X(GMEM_DEV, "GMEM:DEV", GPD_UNIT_BYTES, "GPU memory alloc/free: device memory")    \
  X(GMEM_ARY, "GMEM:ARY", GPD_UNIT_BYTES, "GPU memory alloc/free: array memory")     \
  X(GMEM_MAN, "GMEM:MAN", GPD_UNIT_BYTES, "GPU memory alloc/free: managed memory")   \
  X(GMEM_DST, "GMEM:DST", GPD_UNIT_BYTES, "GPU memory alloc/free: device static memory") \
  X(GMEM_MST, "GMEM:MST", GPD_UNIT_BYTES, "GPU memory alloc/free: managed static memory") \
  X(GMEM_COUNT, "GMEM:COUNT", GPD_UNIT_COUNT, "GPU memory alloc/free: count")        \
  X(GMSET_UNK, "GMSET:UNK", GPD_UNIT_BYTES, "GPU memory set: unknown memory kind")   \
  X(GMSET_PAG, "GMSET:PAG", GPD_UNIT_BYTES, "GPU memory set: pageable memory")       \
  X(GMSET_PIN, "GMSET:PIN", GPD_UNIT_BYTES, "GPU memory set: pinned memory")         \
  X(GMSET_DEV, "GMSET:DEV", GPD_UNIT_BYTES, "GPU memory set: device memory")         \
  X(GMSET_ARY, "GMSET:ARY", GPD_UNIT_BYTES, "GPU memory set: array memory")          \
  X(GMSET_MAN, "GMSET:MAN", GPD_UNIT_BYTES, "GPU memory set: managed memory")        \
  X(GMSET_DST, "GMSET:DST", GPD_UNIT_BYTES, "GPU memory set: device static memory")  \
  X(GMSET_MST, "GMSET:MST", GPD_UNIT_BYTES, "GPU memory set: managed static memory") \
  X(GMSET_COUNT, "GMSET:COUNT", GPD_UNIT_COUNT, "GPU memory set: count")             \
  X(GXCOPY_UNK, "GXCOPY:UNK", GPD_UNIT_BYTES, "GPU explicit memory copy: unknown kind") \
  X(GXCOPY_H2D, "GXCOPY:H2D", GPD_UNIT_BYTES, "GPU explicit memory copy: host to device") \
  X(GXCOPY_D2H, "GXCOPY:D2H", GPD_UNIT_BYTES, "GPU explicit memory copy: device to host") \
  X(GXCOPY_H2A, "GXCOPY:H2A", GPD_UNIT_BYTES, "GPU explicit memory copy: host to array") \
  X(GXCOPY_A2H, "GXCOPY:A2H", GPD_UNIT_BYTES, "GPU explicit memory copy: array to host") \
  X(GXCOPY_A2A, "GXCOPY:A2A", GPD_UNIT_BYTES, "GPU explicit memory copy: array to array") \
  X(GXCOPY_A2D, "GXCOPY:A2D", GPD_UNIT_BYTES, "GPU explicit memory copy: array to device") \
  X(GXCOPY_D2A, "GXCOPY:D2A", GPD_UNIT_BYTES, "GPU explicit memory copy: device to array") \
  X(GXCOPY_D2D, "GXCOPY:D2D", GPD_UNIT_BYTES, "GPU explicit memory copy: device to device") \
  X(GXCOPY_H2H, "GXCOPY:H2H", GPD_UNIT_BYTES, "GPU explicit memory copy: host to host") \
  X(GXCOPY_P2P, "GXCOPY:P2P", GPD_UNIT_BYTES, "GPU explicit memory copy: peer to peer") \
  X(GXCOPY_COUNT, "GXCOPY:COUNT", GPD_UNIT_COUNT, "GPU explicit memory copy: count") \
  X(GSYNC_UNK, "GSYNC:UNK", GPD_UNIT_NS, "GPU synchronizations: unknown kind")       \
  X(GSYNC_EVT, "GSYNC:EVT", GPD_UNIT_NS, "GPU synchronizations: event")              \
  X(GSYNC_STRE, "GSYNC:STRE", GPD_UNIT_NS, "GPU synchronizations: stream event wait") \
  X(GSYNC_STR, "GSYNC:STR", GPD_UNIT_NS, "GPU synchronizations: stream")             \
  X(GSYNC_CTX, "GSYNC:CTX", GPD_UNIT_NS, "GPU synchronizations: context")            \
  X(GSYNC_COUNT, "GSYNC:COUNT", GPD_UNIT_COUNT, "GPU synchronizations: count")       \
  X(GKER_STMEM, "GKER:STMEM", GPD_UNIT_MEAN, "GPU kernel: static memory (bytes)")    \
  X(GKER_DYMEM, "GKER:DYMEM", GPD_UNIT_MEAN, "GPU kernel: dynamic memory (bytes)")   \
  X(GKER_LMEM, "GKER:LMEM", GPD_UNIT_MEAN, "GPU kernel: local memory (bytes)")       \
  X(GKER_THR_REG, "GKER:THR_REG", GPD_UNIT_MEAN, "GPU kernel: thread register count") \
  X(GKER_BLK_THR, "GKER:BLK_THR", GPD_UNIT_MEAN, "GPU kernel: thread count per block") \
  X(GKER_BLK, "GKER:BLK", GPD_UNIT_MEAN, "GPU kernel: block count")                  \
  X(GKER_BLK_SM, "GKER:BLK_SM", GPD_UNIT_MEAN, "GPU kernel: block local memory (bytes)") \
  X(GKER_COUNT, "GKER:COUNT", GPD_UNIT_COUNT, "GPU kernel: launch count")            \
  X(GKER_OCC_THR, "GKER:OCC_THR", GPD_UNIT_MEAN, "GPU kernel: theoretical occupancy (fraction)") \
  X(CPUTIME, "CPUTIME", GPD_UNIT_NS, "CPU time: samples of each thread's CPU-time clock") \
  X(GINST, "GINST", GPD_UNIT_COUNT, "GPU instructions executed (PC samples)")       \
  X(GINST_STL_ANY, "GINST:STL_ANY", GPD_UNIT_COUNT, "GPU instruction stalls: any")  \
  GPD_STALL_METRICS(X)                                                              \
  X(GSAMP_TOT, "GSAMP:TOT", GPD_UNIT_COUNT, "GPU PC samples: measured")             \
  X(GSAMP_DRP, "GSAMP:DRP", GPD_UNIT_COUNT, "GPU PC samples: dropped")              \
  X(GSAMP_EXP, "GSAMP:EXP", GPD_UNIT_COUNT, "GPU PC samples: expected")

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
