/* gpu-analysis.h - instruction-level GPU analysis: structure recovery from
 * cubins (functions, source lines, instructions, CFG, loops, device calls),
 * vendor-neutral stall metrics, and GPU calling-context reconstruction from
 * PC samples (tree, or a directed calling-context graph when it would
 * explode).
 *
 * Everything here reads untrusted bytes (a cubin the daemon stored from a
 * client, nvdisasm text): every offset and length is checked, problems are
 * recorded as notes (gpd_cubin_t.notes) and never crash or abort.
 * Single-threaded objects: one thread at a time per object; distinct
 * objects may be used from distinct threads.
 */
#ifndef GPUPROF_GPU_ANALYSIS_H
#define GPUPROF_GPU_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof/metric.h"

/* ------------------------------------------------------------ stalls */

/* The vendor-neutral stalls: the GINST:STL_* metrics of the HPCToolkit
 * manual, chapter "GPU-accelerated applications", Table 8.7, whose names
 * live once in gpuprof/metric.h (GPD_STALL_METRICS, same order): the
 * metric id of stall s is GPD_M_GINST_STL_NONE + s. */
typedef enum gpd_stall_e {
  GPD_STALL_NONE, GPD_STALL_IFET, GPD_STALL_IDEP, GPD_STALL_GMEM,
  GPD_STALL_TMEM, GPD_STALL_SYNC, GPD_STALL_CMEM, GPD_STALL_PIPE,
  GPD_STALL_MTHR, GPD_STALL_NSEL, GPD_STALL_OTHR, GPD_STALL_SLP,
  GPD_STALL__COUNT,
  /* not a stall: the record is the exact execution count (warp-level
   * instructions executed, CUPTI SASS metric smsp__sass_inst_executed)
   * of the instruction at its pc, stored as the pseudo stall reason
   * GPD_SASS_EXEC_NAME (shim/cupti/cupti-sass.c) */
  GPD_STALL_EXEC_COUNT
} gpd_stall_t;
#define GPD_SASS_EXEC_NAME "sass:inst_executed"

/** The GINST:STL_* stall of a vendor stall-reason name (CUPTI's
 *  "smsp__pcsamp_warps_issue_stalled_long_scoreboard" or its short form
 *  "long_scoreboard"); unknown names give GPD_STALL_OTHR.  A name ending
 *  in "_not_issued" counts a subset of the samples of its base reason
 *  (CUPTI reports both): it gives GPD_STALL__COUNT, "not a stall of its
 *  own, do not add"; GPD_SASS_EXEC_NAME gives GPD_STALL_EXEC_COUNT.  The
 *  one mapping table lives in stall.c. */
gpd_stall_t gpd_stall_from_vendor(const char *name);
/** "GINST:STL_GMEM" ... for a stall; "GINST:STL_OTHR" for out of range. */
const char *gpd_stall_name(gpd_stall_t s);
const char *gpd_stall_desc(gpd_stall_t s);

/* ------------------------------------------------------------- cubins */

/** A function of a cubin: an STT_FUNC symbol in an executable section.
 *  With whole-program compilation a kernel's device functions are local
 *  symbols inside the kernel's own .text section ("$kernel$callee").
 *  Offsets are bytes from the start of the section. */
typedef struct gpd_cubin_func_s {
  char *name;         /* symbol name as stored (mangled, maybe "$k$f") */
  const char *callee; /* the mangled device function part of name */
  uint32_t section;   /* ELF section index */
  int kernel;         /* 1: a global entry (a kernel) */
  uint64_t lo, hi;    /* [lo, hi) in section bytes */
} gpd_cubin_func_t;

/** One row of a line table: from addr (section bytes) on, until the next
 *  row of the same section, code comes from file:line. */
typedef struct gpd_cubin_line_s {
  uint32_t section;
  uint32_t file; /* index into gpd_cubin_t.files */
  uint64_t addr;
  uint32_t line; /* 0: no line (end of a sequence) */
} gpd_cubin_line_t;

typedef struct gpd_cubin_s {
  gpd_cubin_func_t *funcs; /* sorted by (section, lo, hi desc) */
  size_t nfuncs;
  gpd_cubin_line_t *lines; /* sorted by (section, addr) */
  size_t nlines;
  char **files; /* file names of the line table, "dir/name" */
  size_t nfiles;
  char notes[512]; /* what could not be read, "" when all was fine */
} gpd_cubin_t;

/** Read a cubin (an ELF relocatable for EM_CUDA, 64-bit) from memory:
 *  functions from .symtab, source lines from .debug_line (DWARF 2-4, as
 *  nvcc -lineinfo / -G emit it; addresses relocated to their section).
 *  The bytes are not kept.  Returns 0 and *out, or -EINVAL (not a cubin:
 *  a note in errmsg), -ENOMEM.  A damaged line table or symbol is skipped
 *  with a note in (*out)->notes: the rest stays usable. */
int gpd_cubin_open(const void *data, size_t len, gpd_cubin_t **out, char *errmsg, size_t errlen);
void gpd_cubin_free(gpd_cubin_t *c);
/** The function symbol named `name` (exact), or NULL. */
const gpd_cubin_func_t *gpd_cubin_func_named(const gpd_cubin_t *c, const char *name);
/** The innermost function containing `off` bytes into `section`, or NULL. */
const gpd_cubin_func_t *gpd_cubin_func_at(const gpd_cubin_t *c, uint32_t section, uint64_t off);
/** Source line of `off` bytes into `section`: 0 and *file / *line, or
 *  -ENOENT (no line table, or no row covers it). */
int gpd_cubin_line_at(const gpd_cubin_t *c, uint32_t section, uint64_t off, const char **file,
                      uint32_t *line);
/** Display name of a function: the device function part of "$k$f". */
const char *gpd_cubin_func_display(const gpd_cubin_func_t *f);

/* ------------------------------------------------ instructions and CFG */

enum {
  GPD_INSN_BRANCH = 1, /* BRA/BRX/JMP/JMX/BRK/CONT...: may go to `target` */
  GPD_INSN_COND = 2,   /* guarded by a predicate: may also fall through */
  GPD_INSN_CALL = 4,   /* CALL: to function `callee` (section offset) */
  GPD_INSN_RETURN = 8, /* RET / EXIT: leaves the function */
  GPD_INSN_INDIRECT = 16, /* target not known (BRX/JMX with a register) */
};

typedef struct gpd_insn_s {
  uint64_t off;     /* bytes into the section */
  uint32_t flags;   /* GPD_INSN_* */
  uint64_t target;  /* branch target / callee entry, section bytes; UINT64_MAX unknown */
  char opcode[24];  /* "FFMA", "LDG.E.64" ... (truncated) */
  uint32_t line;    /* from nvdisasm -print-line-info when present, else 0 */
  int32_t file;     /* index into gpd_disasm_t.files or -1 */
  char *text;       /* the instruction as printed ("@!P0 LDG.E R4, [R2.64]"), ';' cut;
                       NULL when out of memory; freed by gpd_disasm_free */
} gpd_insn_t;

/** The disassembly of one section (one kernel with its device functions). */
typedef struct gpd_disasm_sec_s {
  char *name;  /* kernel name (".text." stripped) */
  gpd_insn_t *insns; /* sorted by off */
  size_t ninsns;
} gpd_disasm_sec_t;

typedef struct gpd_disasm_s {
  gpd_disasm_sec_t *secs;
  size_t nsecs;
  char **files;
  size_t nfiles;
  char notes[256];
} gpd_disasm_t;

/** Parse `nvdisasm` text (as `nvdisasm -c -g -print-line-info` or plain
 *  `nvdisasm` prints it: ".text.<kernel>:" sections, "/ *0040* /"
 *  instructions, ".L_x_N:" labels, "`(.L_x_N)" targets).  Unknown lines
 *  are skipped.  Returns 0, -ENOMEM, -EINVAL (no instruction at all). */
int gpd_disasm_parse(const char *text, size_t len, gpd_disasm_t **out);
void gpd_disasm_free(gpd_disasm_t *d);
const gpd_disasm_sec_t *gpd_disasm_section(const gpd_disasm_t *d, const char *kernel);

typedef struct gpd_block_s {
  uint64_t lo, hi; /* [lo, hi) section bytes */
  uint32_t *succ;
  uint32_t nsucc;
  int32_t loop;    /* innermost loop (index into gpd_gcfg_t.loops) or -1 */
} gpd_block_t;

typedef struct gpd_loop_s {
  uint32_t header;  /* block index */
  int32_t parent;   /* enclosing loop or -1 */
  uint64_t head_off; /* header block's first instruction */
  uint32_t depth;   /* 1 = outermost */
} gpd_loop_t;

/** Control-flow graph of one function [lo, hi) of a disassembled section,
 *  with the repairs of "Poster: complete CPU+GPU profile view in
 *  HPCToolkit" (blocks end at every branch *and call*; a block nothing
 *  reaches is linked by offset to the block that falls into it) and
 *  natural loops from dominators (Cooper, Harvey, Kennedy, "A simple,
 *  fast dominance algorithm", 2001).  Irreducible cycles are not loops. */
typedef struct gpd_gcfg_s {
  uint64_t lo, hi;
  gpd_block_t *blocks; /* sorted by lo; block 0 is the entry */
  size_t nblocks;
  gpd_loop_t *loops;   /* outer loops before inner ones */
  size_t nloops;
  uint64_t *calls;     /* offsets of call instructions */
  uint64_t *callees;   /* their targets (section bytes) */
  size_t ncalls;
} gpd_gcfg_t;

/** Build the CFG of [lo, hi) from `sec`.  0, -ENOMEM, -ENOENT (no
 *  instruction in range). */
int gpd_gcfg_build(const gpd_disasm_sec_t *sec, uint64_t lo, uint64_t hi, gpd_gcfg_t **out);
void gpd_gcfg_free(gpd_gcfg_t *g);
/** Block containing `off`, or -1. */
int32_t gpd_gcfg_block_at(const gpd_gcfg_t *g, uint64_t off);

/* ------------------------------------------ GPU calling-context graph */

/** Input of the reconstruction: a static call graph of one kernel.
 *  Functions 0..nfuncs-1 (the kernel is `root`); samples[f] = exclusive
 *  samples (or instructions) in f, call instructions included;
 *  edges: caller -> callee with the samples seen on that call
 *  instruction (HPCToolkit's call-edge weight). */
typedef struct gpd_gcall_s {
  uint32_t caller, callee;
  uint64_t call_off; /* the call instruction, section bytes */
  double weight;     /* call-instruction samples */
} gpd_gcall_t;

/** A node of the reconstructed GPU calling-context tree: a function (or a
 *  recursive group) under a call site, with its apportioned samples. */
typedef struct gpd_gctx_s {
  int32_t parent;    /* -1 for the kernel's root */
  uint32_t func;     /* function index (first member of an SCC) */
  int32_t scc;       /* >= 0: a recursive group (SCC id; several functions or a self call) */
  uint64_t call_off; /* the call site in the parent, 0 at the root */
  double fraction;   /* share of func's samples that belong here (0..1] */
  double samples;    /* exclusive samples apportioned here */
} gpd_gctx_t;

typedef struct gpd_gcct_s {
  gpd_gctx_t *nodes; /* pre-order: parents before children */
  size_t nnodes;
  uint32_t *scc_of;  /* per function: its SCC id */
  uint32_t nsccs;
  uint32_t *scc_size;
  size_t unreached;  /* functions with samples the root never reaches */
} gpd_gcct_t;

/** Reconstruct the approximate GPU calling-context tree of one kernel
 *  (Zhou et al., "Measurement and analysis of GPU-accelerated
 *  applications with HPCToolkit", Parallel Computing 2021, section 6.3,
 *  steps 1-4): unsampled call edges of sampled functions get weight one
 *  up through their callers, recursive groups (Tarjan SCCs) become one
 *  node, and each node's samples are split among its call sites by the
 *  call-site weights (gprof's equal-cost assumption).  Functions with
 *  samples that the root does not reach become extra roots (parent -1),
 *  counted in `unreached`.  Returns 0, -EINVAL, -ENOMEM, or -E2BIG when
 *  the tree would have more than `max_nodes` nodes: use gpd_dccg_build. */
int gpd_gcct_build(uint32_t nfuncs, uint32_t root, const double *samples,
                   const gpd_gcall_t *edges, size_t nedges, size_t max_nodes, gpd_gcct_t **out);
void gpd_gcct_free(gpd_gcct_t *t);

/** The directed calling-context graph (DCCG, "Efficiently representing
 *  CPU-GPU performance", 2025): one node per function (recursive groups
 *  merged), one edge per call site, with apportioned inclusive values,
 *  instead of one node per path.  Linear in functions + edges however
 *  many paths there are. */
typedef struct gpd_dccg_edge_s {
  uint32_t from, to; /* SCC ids */
  uint64_t call_off;
  double fraction;   /* share of `to`'s per-invocation cost through this edge */
  double inclusive;  /* inclusive samples of `to` apportioned to this edge */
} gpd_dccg_edge_t;

typedef struct gpd_dccg_s {
  uint32_t nnodes;        /* SCCs */
  uint32_t *scc_of;       /* per function */
  double *exclusive;      /* per SCC */
  double *inclusive;      /* per SCC: exclusive + what its callees get through it */
  gpd_dccg_edge_t *edges; /* external calls only */
  size_t nedges;
  double paths;           /* calling contexts the tree form would have (capped at 1e300) */
} gpd_dccg_t;

/** Build the DCCG of a static call graph (same input as gpd_gcct_build).
 *  Time and memory O(nfuncs + nedges).  0, -EINVAL, -ENOMEM. */
int gpd_dccg_build(uint32_t nfuncs, uint32_t root, const double *samples,
                   const gpd_gcall_t *edges, size_t nedges, gpd_dccg_t **out);
void gpd_dccg_free(gpd_dccg_t *g);

/* --------------------------------------- PC samples -> the GPU tree */

/** One aggregated PC sample of a kernel: `samples` warps seen at `pc`
 *  (bytes from the start of the kernel's function symbol, as CUPTI's
 *  pcOffset) in stall `stall` (GPD_STALL__COUNT: not counted;
 *  GPD_STALL_EXEC_COUNT: `samples` is the exact execution count of the
 *  instruction, not samples: it weighs call edges, never GINST). */
typedef struct gpd_pcs_s {
  uint64_t pc;
  uint32_t stall;
  double samples;
} gpd_pcs_t;

enum {
  GPD_GNODE_KERNEL = 0,
  GPD_GNODE_FUNC = 1,   /* a device function in a calling context */
  GPD_GNODE_LOOP = 2,
  GPD_GNODE_LINE = 3,
  GPD_GNODE_INSN = 4,
  GPD_GNODE_UNKNOWN = 5 /* samples that could not be placed */
};

/** A node of the GPU part of a profile below one kernel.  Values are
 *  exclusive samples (apportioned, so fractional); inclusive = subtree sum. */
typedef struct gpd_gnode_s {
  int32_t parent; /* -1 for the kernel node (node 0) */
  uint8_t kind;   /* GPD_GNODE_* */
  char label[160];
  double ginst;                    /* GINST: all samples */
  double stall[GPD_STALL__COUNT];  /* GINST:STL_* */
} gpd_gnode_t;

typedef struct gpd_gtree_s {
  gpd_gnode_t *nodes; /* parents before children */
  size_t nnodes;
  char notes[512]; /* what could not be placed or recovered, "" if nothing */
} gpd_gtree_t;

/** Attribute the PC samples of `kernel` (its mangled name, as CUPTI gives
 *  it) to kernel -> GPU calling context -> loop -> line -> instruction,
 *  from its cubin `c` and, when not NULL, nvdisasm output `d` of the same
 *  cubin (without it: device functions flat under the kernel, no loops,
 *  and a note says so).  Samples at offsets outside every function, or a
 *  kernel the cubin does not have, go to an UNKNOWN node with a note.
 *  max_nodes bounds the calling-context tree; beyond it each function is
 *  shown once (the graph form) with a note.  Call-edge weights are the
 *  exact execution counts of the call instructions when the input has
 *  GPD_STALL_EXEC_COUNT records for the kernel (a note says so), else the
 *  call instructions' samples (Zhou et al. 2021, section 6.3 step 1).
 *  0, -EINVAL, -ENOMEM. */
int gpd_gtree_attribute(const gpd_cubin_t *c, const gpd_disasm_t *d, const char *kernel,
                      const gpd_pcs_t *s, size_t n, size_t max_nodes, gpd_gtree_t **out);
void gpd_gtree_free(gpd_gtree_t *t);

#endif
