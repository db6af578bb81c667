/* advisor.h - a GPA-style performance advisor: from PC samples with stall
 * reasons to ranked, estimated optimizations (Zhou, Meng, Sai, Mellor-
 * Crummey, "GPA: A GPU Performance Advisor Based on Instruction
 * Sampling", CGO 2021).  Files: advisor.c (the driver, gpd_advisor_run),
 * advisor-sass.c (SASS operands, control bits), advisor-tid.c
 * (thread-index analysis), advisor-blame.c (the blamer), advisor-opt.c
 * (code optimizers, ranking), advisor-occupancy.c (occupancy calculator,
 * parallel optimizers); advisor-internal.h is what they share.
 *
 *   instruction blamer (GPA section 4): def-use over recovered SASS
 *     (registers, predicates, uniform registers and the six scoreboard
 *     barriers SB0-SB5 as virtual registers), backward slicing until the
 *     defs' predicates cover the use's, the three pruning rules (opcode,
 *     dominating use, latency), and Eq. 1 apportioning;
 *   optimizers (GPA Table 2) with their estimators (Eqs. 2-10) and an
 *     occupancy calculator (NVIDIA's, see gpd_advisor_occupancy).
 *
 * Input is untrusted (a profile someone gave us, nvdisasm text of a
 * client's binary): every operand and count is bounded, nothing crashes.
 * Single-threaded objects.
 */
#ifndef GPUPROF_ADVISOR_H
#define GPUPROF_ADVISOR_H

#include <stddef.h>
#include <stdint.h>

#include "gpu-analysis.h"

/* ------------------------------------------------------ stall reasons */

/** The stall reasons the advisor tells apart: CUPTI's PC sampling reasons
 *  (the names its PC sampling API reports,
 *  "smsp__pcsamp_warps_issue_stalled_<name>"), finer than the
 *  GINST:STL_* metrics.  SELECTED = the sampled warp issued. */
typedef enum gpd_advisor_reason_e {
  GPD_ADV_SELECTED, GPD_ADV_NOT_SELECTED, GPD_ADV_LONG_SB, GPD_ADV_SHORT_SB, GPD_ADV_WAIT,
  GPD_ADV_BARRIER, GPD_ADV_MEMBAR, GPD_ADV_LG_THROTTLE, GPD_ADV_MIO_THROTTLE,
  GPD_ADV_TEX_THROTTLE, GPD_ADV_MATH_THROTTLE, GPD_ADV_NO_INSTR, GPD_ADV_IMC_MISS,
  GPD_ADV_BRANCH, GPD_ADV_DISPATCH, GPD_ADV_DRAIN, GPD_ADV_SLEEP, GPD_ADV_MISC,
  GPD_ADV_OTHER, GPD_ADV__COUNT
} gpd_advisor_reason_t;

/** Reason of a vendor name (full CUPTI name or its short form).  *latency
 *  = 1 for the "_not_issued" subsets: samples taken while the scheduler
 *  issued nothing (GPA's latency samples).  Unknown names: GPD_ADV_OTHER. */
gpd_advisor_reason_t gpd_advisor_reason_from_vendor(const char *name, int *latency);
/** CUPTI's short name of a reason; "divergent branch" for GPD_ADV__COUNT
 *  (a hotspot that is a branch, not a stall), "other" beyond. */
const char *gpd_advisor_reason_name(gpd_advisor_reason_t r);

/* ----------------------------------------------- SASS instruction model */

/* Resources for def-use: R0-R254, P0-P6, UR0-UR62, UP0-UP6 and the six
 * scoreboard barriers (GPA section 4: "virtual barrier registers").
 * RZ, PT, URZ, UPT are constants and never resources. */
enum {
  GPD_ADV_RES_R = 0, GPD_ADV_RES_P = 256, GPD_ADV_RES_UR = 264, GPD_ADV_RES_UP = 328,
  GPD_ADV_RES_SB = 336, GPD_ADV_NRES = 342
};

/** Latency classes (what an instruction is for the pruning rules). */
typedef enum gpd_advisor_class_e {
  GPD_ADV_FIXED,   /* fixed-latency arithmetic / moves */
  GPD_ADV_LONGOP,  /* long-latency arithmetic: MUFU, conversions, FP64 */
  GPD_ADV_GLOBAL,  /* global / generic / texture memory (long scoreboard) */
  GPD_ADV_LOCAL,   /* local memory: LDL, STL (register spills) */
  GPD_ADV_CONST,   /* LDC: constant memory */
  GPD_ADV_SHARED,  /* shared memory: LDS, STS, LDSM, ATOMS (short scoreboard) */
  GPD_ADV_MIO,     /* other variable latency: S2R, SHFL, ... (short scoreboard) */
  GPD_ADV_SYNC,    /* BAR, BSYNC, WARPSYNC, MEMBAR, DEPBAR */
  GPD_ADV_CONTROL  /* branches, calls, returns, NOP */
} gpd_advisor_class_t;

#define GPD_ADV_MAXDEF 8
#define GPD_ADV_MAXUSE 24

/** One instruction, operands decoded.  pred: the guard, -1 none, else a P
 *  or UP resource id; pred_neg: the guard is negated (@!P0). */
typedef struct gpd_advisor_insn_s {
  uint64_t off;
  uint16_t def[GPD_ADV_MAXDEF], use[GPD_ADV_MAXUSE];
  uint8_t ndef, nuse;
  int16_t pred;
  uint8_t pred_neg;
  uint8_t cls;        /* gpd_advisor_class_t */
  uint8_t store;      /* writes memory */
  uint8_t has_ctrl;   /* control bits known (below) */
  uint8_t wbar, rbar; /* scoreboard set on write / read: 0-5, 7 = none */
  uint8_t wait;       /* mask of scoreboards waited on (bits 0-5) */
  uint8_t stall;      /* the assembler's stall count (cycles) */
  uint8_t tid;        /* 0 none; 1 an index in thread.x units, 2 thread.x scaled */
  uint8_t divergent;  /* a branch on a predicate that depends on the thread index */
  uint32_t stride;    /* global or shared access: tid.x stride in bytes when more
                         than the element, UINT32_MAX when only known at run time,
                         else 0 */
  uint8_t same_addr;  /* a global atomic / reduction whose address is the same in
                         every lane (built from warp-uniform values only) */
  uint16_t lane_reg;  /* a compare (xSETP): the register operand whose value moves
                         most per lane, and its tid.x coefficient lane_coef (0: none
                         known; set by the thread-index analysis) */
  uint32_t lane_coef;
  char op[24];        /* opcode with modifiers */
} gpd_advisor_insn_t;

/** Decode one nvdisasm instruction text ("@!P0 LDG.E.64 R4, desc[UR4][R2.64]",
 *  the trailing ';' optional) into *out (off not set).  Unknown opcodes are
 *  FIXED-latency with their operands taken as first = def, rest = uses.
 *  0, or -EINVAL (empty / no opcode). */
int gpd_advisor_decode(const char *text, gpd_advisor_insn_t *out);

/** Apply Volta-to-Blackwell control bits (the high 64-bit word of a
 *  128-bit instruction: bits 41-44 stall, 45 yield, 46-48 write barrier,
 *  49-51 read barrier, 52-57 wait mask; Jia et al., "Dissecting the NVIDIA
 *  Volta GPU architecture via microbenchmarking", 2018, section 2.1): the
 *  barriers become defs of SBn, the wait mask uses of SBn. */
void gpd_advisor_apply_ctrl(gpd_advisor_insn_t *in, uint64_t hi_word);

/** Control words of a cubin's kernel section straight from its bytes
 *  (ELF section ".text.<kernel>", 16 bytes per instruction, sm_70 and
 *  later): *hi = malloc'd array of the high words, *n entries (entry k is
 *  the instruction at byte 16k); *sm = the compute capability x 10 from
 *  the ELF flags (0 unknown).  0, -ENOENT (no such section or an older
 *  encoding), -EINVAL (not an ELF), -ENOMEM. */
int gpd_advisor_cubin_ctrl(const void *data, size_t len, const char *kernel, uint64_t **hi, size_t *n,
                       uint32_t *sm);

/* ------------------------------------------------------------ input */

/** Samples of one instruction: total (all samples with this reason) and
 *  latency (the "_not_issued" subset) per reason. */
typedef struct gpd_advisor_psamp_s {
  uint64_t pc; /* bytes from the start of the kernel's function */
  uint32_t reason;
  double samples, latency;
} gpd_advisor_psamp_t;

/** A kernel's launch configuration (means over its launches; 0 unknown). */
typedef struct gpd_advisor_launch_s {
  uint32_t sm;       /* compute capability x 10: 70, 80, 86, 89, 90, 100 ... */
  uint32_t sm_count; /* SMs of the device */
  double blocks, threads, regs, smem_static, smem_dynamic, lmem;
} gpd_advisor_launch_t;

typedef struct gpd_advisor_input_s {
  const gpd_disasm_sec_t *sec; /* the kernel's section (required) */
  const gpd_cubin_t *cubin;    /* functions, lines (may be NULL) */
  uint32_t section;            /* ELF section index of sec in cubin */
  uint64_t kernel_lo;          /* the kernel symbol's offset in the section */
  const uint64_t *ctrl;        /* high words per 16-byte slot, or NULL */
  size_t nctrl;
  const gpd_advisor_psamp_t *s;
  size_t ns;
  gpd_advisor_launch_t launch;
} gpd_advisor_input_t;

/* ----------------------------------------------------------- output */

/** An edge after pruning with what Eq. 1 gave it. */
typedef struct gpd_advisor_blame_s {
  uint32_t def, use; /* instruction indexes (def == use: the stall stays where it was seen) */
  uint32_t dist;     /* instructions on the longest path def -> use */
  uint32_t reason;
  double samples, latency; /* apportioned */
} gpd_advisor_blame_t;

typedef enum gpd_advisor_opt_e {
  GPD_OPT_REGISTER_REUSE, GPD_OPT_STRENGTH_REDUCTION, GPD_OPT_WARP_BALANCE,
  GPD_OPT_MEMORY_TRANSACTION, GPD_OPT_COALESCING, GPD_OPT_FUNCTION_SPLIT,
  GPD_OPT_LOOP_UNROLLING, GPD_OPT_CODE_REORDER, GPD_OPT_FUNCTION_INLINING,
  GPD_OPT_BLOCK_INCREASE, GPD_OPT_THREAD_INCREASE, GPD_OPT_OCCUPANCY, GPD_OPT_FAST_MATH,
  GPD_OPT__COUNT
} gpd_advisor_opt_t;

#define GPD_ADV_MAXHOT 8

/** A hotspot: def and use instructions with the samples of their edge. */
typedef struct gpd_advisor_hot_s {
  uint32_t def, use, dist;
  uint32_t reason; /* gpd_advisor_reason_t of the stall; GPD_ADV__COUNT: def is a divergent
                      branch, use the first instruction of its shorter side */
  double samples;
} gpd_advisor_hot_t;

typedef struct gpd_advisor_suggest_s {
  uint32_t opt;     /* gpd_advisor_opt_t */
  double matched;   /* M (stall samples) or M_L (latency samples) */
  double speedup;   /* estimate */
  int32_t loop;     /* the scope for loop unrolling (index into cfg loops), -1 */
  gpd_advisor_hot_t hot[GPD_ADV_MAXHOT];
  size_t nhot;
  char why[320];
} gpd_advisor_suggest_t;

typedef struct gpd_advice_s {
  gpd_advisor_insn_t *insns; /* the kernel section's instructions, decoded */
  size_t ninsns;
  double *samples, *latency, *issued; /* per instruction: totals and SELECTED */
  double T, A, L;        /* all, active, latency samples of the kernel */
  gpd_advisor_blame_t *blame;
  size_t nblame;
  double unplaced;       /* samples at no instruction */
  double occupancy, occupancy_new; /* fractions of max warps; 0 unknown */
  char limiter[32];      /* "registers", "shared memory", "blocks per SM", "warps" */
  gpd_advisor_suggest_t sugg[GPD_OPT__COUNT]; /* ranked, speedup descending */
  size_t nsugg;
  int have_ctrl;
  char notes[512];
} gpd_advice_t;

/** Analyze one kernel: blame, optimizers, estimates.  0, -EINVAL (no
 *  section), -ENOMEM.  Samples outside the section count in `unplaced`
 *  with a note, never placed on a guess. */
int gpd_advisor_run(const gpd_advisor_input_t *in, gpd_advice_t **out);
void gpd_advisor_free(gpd_advice_t *a);

/** Name and hints of an optimizer, as the report prints them. */
const char *gpd_advisor_opt_name(gpd_advisor_opt_t o);
const char *gpd_advisor_opt_hint(gpd_advisor_opt_t o);

/* ------------------------------------------------------- occupancy */

/** Occupancy of a launch: resident blocks per SM from the limits of
 *  compute capability `sm` (CUDA C++ Programming Guide, "Technical
 *  Specifications per Compute Capability"; the method of NVIDIA's
 *  cuda_occupancy.h: registers allocated per warp in units of 256 over
 *  four sub-partitions, shared memory in units of 128 bytes plus 1 KiB
 *  reserved per block on sm_80+).  *warps = resident warps per SM,
 *  *max_warps its limit, limiter names the binding limit.  0, -EINVAL
 *  (threads 0 or above 1024). */
int gpd_advisor_occupancy(uint32_t sm, double threads, double regs, double smem, uint32_t *blocks,
                      uint32_t *warps, uint32_t *max_warps, const char **limiter);

#endif
