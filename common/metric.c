/* metric.c - the metric table of seed 003 Tables 8.1-8.6 and the
 * attribution rule for one activity (metric.h). */
#include "gpuprof/metric.h"

#include <string.h>

#include "gpuprof/record.h"

static const gpd_metric_desc_t metric_table[GPD_M__COUNT] = {
#define GPD_METRIC_DESC(e, name, unit, desc) {name, unit, desc},
  GPD_METRIC_MAP(GPD_METRIC_DESC)
#undef GPD_METRIC_DESC
};

/* The per-kind metrics are laid out in the order of the record.h enums. */
_Static_assert(GPD_M_GXCOPY_P2P - GPD_M_GXCOPY_UNK == GPD_COPY_P2P, "copy order");
_Static_assert(GPD_M_GXCOPY_COUNT - GPD_M_GXCOPY_UNK == GPD_COPY_MAX, "copy count");
_Static_assert(GPD_M_GMEM_COUNT - GPD_M_GMEM_UNK == GPD_MEM_MAX, "mem order");
_Static_assert(GPD_M_GMSET_COUNT - GPD_M_GMSET_UNK == GPD_MEM_MAX, "mset order");
_Static_assert(GPD_M_GSYNC_COUNT - GPD_M_GSYNC_UNK == GPD_SYNC_MAX, "sync order");

const char *gpd_metric_unit_name(gpd_unit_t u) {
  switch (u) {
  case GPD_UNIT_NS: return "ns";
  case GPD_UNIT_BYTES: return "bytes";
  case GPD_UNIT_COUNT: return "count";
  default: return "mean";
  }
}

const gpd_metric_desc_t *gpd_metric_desc(unsigned id) { return id < GPD_M__COUNT ? &metric_table[id] : NULL; }

int gpd_metric_by_name(const char *name) {
  if (!name)
    return -1;
  for (unsigned i = 0; i < GPD_M__COUNT; i++)
    if (strcmp(metric_table[i].name, name) == 0)
      return (int)i;
  return -1;
}

int gpd_metric_copy_bytes(unsigned k) { return k < GPD_COPY_MAX ? (int)(GPD_M_GXCOPY_UNK + k) : -1; }
int gpd_metric_mem_bytes(unsigned k) { return k < GPD_MEM_MAX ? (int)(GPD_M_GMEM_UNK + k) : -1; }
int gpd_metric_mset_bytes(unsigned k) { return k < GPD_MEM_MAX ? (int)(GPD_M_GMSET_UNK + k) : -1; }
int gpd_metric_sync_time(unsigned k) { return k < GPD_SYNC_MAX ? (int)(GPD_M_GSYNC_UNK + k) : -1; }

/* One op family (COPY, MEMSET, MEM, SYNC) of the rule below: total += d,
 * the kind's metric k (unk when k < 0) += amount, count += 1. */
static void family_add(double *v, unsigned total, int k, unsigned unk, unsigned count, double d,
                       double amount) {
  v[total] += d;
  v[k >= 0 ? (unsigned)k : unk] += amount;
  v[count] += 1;
}

/* Rule (seed 003 Tables 8.1-8.6):
 *   d = end - start (0 when end < start: clocks that disagree never give
 *   a negative or huge time);
 *   KERNEL: GKER += d, GKER:COUNT += 1, sums of the characteristics,
 *           GKER:BLK_SM += static + dynamic smem, GKER:OCC_THR +=
 *           min(occ_permille, 1000) / 1000;
 *   COPY:   GXCOPY += d, GXCOPY:<kind> += bytes, GXCOPY:COUNT += 1;
 *   MEMSET: GMSET += d, GMSET:<mem> += bytes, GMSET:COUNT += 1;
 *   ALLOC, FREE: GMEM += d, GMEM:<mem> += bytes, GMEM:COUNT += 1;
 *   SYNC:   GSYNC += d, GSYNC:<kind> += d, GSYNC:COUNT += 1;
 *   every valid op: GPUOP += d.  An out-of-range subkind counts as UNK; an
 *   unknown op adds nothing. */
void gpd_metric_accumulate(double *v, const struct gpd_rec_activity_s *a) {
  double d = a->end >= a->start ? (double)(a->end - a->start) : 0.0;
  double bytes = (double)a->bytes;
  switch (a->op) {
  case GPD_OP_KERNEL:
    v[GPD_M_GKER] += d;
    v[GPD_M_GKER_COUNT] += 1;
    v[GPD_M_GKER_STMEM] += a->static_smem;
    v[GPD_M_GKER_DYMEM] += a->dynamic_smem;
    v[GPD_M_GKER_LMEM] += a->local_mem;
    v[GPD_M_GKER_THR_REG] += a->regs_per_thread;
    v[GPD_M_GKER_BLK_THR] += a->block_threads;
    v[GPD_M_GKER_BLK] += a->blocks;
    v[GPD_M_GKER_BLK_SM] += (double)a->static_smem + (double)a->dynamic_smem;
    v[GPD_M_GKER_OCC_THR] += (a->occ_permille > 1000 ? 1000 : a->occ_permille) / 1000.0;
    break;
  case GPD_OP_COPY:
    family_add(v, GPD_M_GXCOPY, gpd_metric_copy_bytes(a->subkind), GPD_M_GXCOPY_UNK, GPD_M_GXCOPY_COUNT, d,
               bytes);
    break;
  case GPD_OP_MEMSET:
    family_add(v, GPD_M_GMSET, gpd_metric_mset_bytes(a->subkind), GPD_M_GMSET_UNK, GPD_M_GMSET_COUNT, d,
               bytes);
    break;
  case GPD_OP_ALLOC:
  case GPD_OP_FREE:
    family_add(v, GPD_M_GMEM, gpd_metric_mem_bytes(a->subkind), GPD_M_GMEM_UNK, GPD_M_GMEM_COUNT, d,
               bytes);
    break;
  case GPD_OP_SYNC:
    family_add(v, GPD_M_GSYNC, gpd_metric_sync_time(a->subkind), GPD_M_GSYNC_UNK, GPD_M_GSYNC_COUNT, d,
               d);
    break;
  default:
    return;
  }
  v[GPD_M_GPUOP] += d;
}
