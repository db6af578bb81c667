/* cct.h - calling-context-tree vocabulary shared by the daemon and the CLI:
 * node kinds (the values of gpuprof.NodeKind in proto/gpuprof.proto), the
 * label of the unknown context, and one sparse metric value. */
#ifndef GPUPROF_CCT_H
#define GPUPROF_CCT_H

#include <stdint.h>

/* Node kinds: the values of gpuprof.NodeKind (proto). */
enum { GPD_NODE_ROOT = 0, GPD_NODE_FRAME = 1, GPD_NODE_PLACEHOLDER = 2,
       GPD_NODE_KERNEL = 3, GPD_NODE_UNKNOWN = 4, GPD_NODE_PYTHON = 5 };
/* The GPU part below a kernel (PC samples, cli/report-gpu.c): report-side
 * kinds only, never stored or sent. */
enum { GPD_NODE_GPU_FUNC = 6, GPD_NODE_GPU_LOOP = 7, GPD_NODE_GPU_LINE = 8, GPD_NODE_GPU_INSN = 9,
       GPD_NODE_GPU_STALL = 10 /* live tree --gpu-detail: one stall reason (cli/live.c) */,
       /* a framework operator (`aten::mm`) made by the CLI's operator view
        * from PyTorch's dispatcher frames (cli/fold.c): report-side only */
       GPD_NODE_OPERATOR = 11 };

#define GPD_UNKNOWN_LABEL "<unknown context>"

/** One sparse metric value: id is a gpd_metric_t (metric.h), v in the
 *  metric's unit (ns, bytes, count; MEAN metrics hold sums over launches). */
typedef struct gpd_mval_s {
  uint32_t id;
  double v;
} gpd_mval_t;

#endif
