/* cli.h - private interfaces of the gpuprof command-line client.
 *
 * One in-memory calling-context tree (gpd_tree_t) is built either from
 * saved profiles (load.c) or from a live TreeReply (live.c); one
 * text renderer (render.c) and one JSON writer (json.c) print it.
 * Everything here runs on the CLI's single thread.
 */
#ifndef GPD_CLI_H
#define GPD_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuprof/cct.h"
#include "gpuprof.pb-c.h"

/* Exit codes (docs/CLI.md). */
#define GPD_EXIT_OK 0
#define GPD_EXIT_FAIL 1     /* an Error reply, an unreadable profile */
#define GPD_EXIT_NODAEMON 2 /* no gpuprofd at the socket / cannot start one */
#define GPD_EXIT_USAGE 64   /* EX_USAGE */

/* Mirrors daemon/config.h GPD_DEFAULT_SOCKET (the CLI does not link the daemon). */
#define GPD_CLI_DEFAULT_SOCKET "/run/gpuprofd/gpuprofd.sock"



/** Sparse metric vector, sorted by id. */
typedef struct gpd_mvec_s {
  gpd_mval_t *v;
  uint32_t n, cap;
} gpd_mvec_t;

/** Add x to metric id (inserting it). 0 or -ENOMEM. */
int gpd_tree_mvec_add(gpd_mvec_t *m, uint32_t id, double x);
/** Value of metric id (0 when absent). */
double gpd_tree_mvec_get(const gpd_mvec_t *m, uint32_t id);
/** Value as shown: MEAN metrics divided by GKER:COUNT of the same vector. */
double gpd_tree_mvec_shown(const gpd_mvec_t *m, uint32_t id);
void gpd_tree_mvec_free(gpd_mvec_t *m);

/** One source frame of a FRAME context (outermost first). */
typedef struct gpd_tframe_s {
  char *function, *file;
  uint32_t line;
  int inlined;
} gpd_tframe_t;

typedef struct gpd_tnode_s {
  uint64_t id, parent_id; /* Merkle ids; parent_id 0 for the root */
  int kind;               /* GPD_NODE_* */
  char *label, *module, *raw_name;
  uint64_t offset;
  gpd_tframe_t *frames;
  uint32_t nframes;
  gpd_mvec_t excl, incl;
  size_t parent; /* index; SIZE_MAX for the root / unlinked */
  size_t *kids;
  uint32_t nkids, kcap;
} gpd_tnode_t;

typedef struct gpd_tbackend_s {
  char *api, *reason;
  int enabled, code;
} gpd_tbackend_t;

typedef struct gpd_tproc_s {
  uint64_t profile_id;
  int pid, rank, local_rank, running;
  uint32_t uid, gid, rings;
  uint64_t records, drops, start_ns, end_ns;
  char *exe, *job_id, *step_id, *hostname, *state, *error, *source;
  int job_claimed; /* job_id only claimed by the process (Process.job_claimed) */
  char *pcs_state; /* live: Process.pcs_state (busy text; "PC samples estimated from N rotating
                    * windows (X s of Y s)...", daemon/pcrotate.c), NULL or "" none */
  gpd_tbackend_t *backends;
  uint32_t nbackends;
} gpd_tproc_t;

typedef struct gpd_tgpubin_s {
  char *hash, *kind, *path;
  uint64_t size;
} gpd_tgpubin_t;

/** The tree plus what describes it (processes, back ends, GPU binaries). */
typedef struct gpd_tree_s {
  gpd_tnode_t *nodes;
  size_t n, cap;
  size_t root;        /* index of the root after gpd_tree_finish */
  size_t *map;        /* open addressing: id -> index + 1 */
  size_t map_cap;     /* power of two */
  int have_incl;      /* 1: incl came from a reply; do not recompute */
  gpd_tproc_t *procs;
  size_t nprocs;
  gpd_tgpubin_t *gpubins;
  size_t ngpubins;
  size_t nhidden;     /* processes left out: never used a GPU API (--all) */
} gpd_tree_t;

void gpd_tree_init(gpd_tree_t *t);
void gpd_tree_free(gpd_tree_t *t);
/** Index of the node with this id, or -1. */
long gpd_tree_find(const gpd_tree_t *t, uint64_t id);
/** Add a node (or return the existing one with the same id, filling empty
 *  strings).  Strings are copied; NULL = "".  Returns the index >= 0 or
 *  -ENOMEM. */
long gpd_tree_node_add(gpd_tree_t *t, uint64_t id, uint64_t parent_id, int kind, const char *label,
                       const char *module, uint64_t offset, const char *raw_name);
/** Append a source frame to node idx (outermost first); the first frame of
 *  a FRAME node (its physical function, when known) becomes its label.
 *  0 or -ENOMEM. */
int gpd_tree_frame_add(gpd_tree_t *t, size_t idx, const char *function, const char *file, uint32_t line,
                       int inlined);
/** Add new process / gpubin records (zeroed, strings NULL).  NULL on ENOMEM. */
gpd_tproc_t *gpd_tree_proc_new(gpd_tree_t *t);
gpd_tbackend_t *gpd_tree_backend_new(gpd_tproc_t *p);
gpd_tgpubin_t *gpd_tree_gpubin_new(gpd_tree_t *t);
/** Link children to parents (nodes whose parent is missing hang below the
 *  root; a synthetic root is made when there is no single parentless
 *  node), compute inclusive metrics by summing subtrees (unless
 *  have_incl), and sort children by inclusive `sort_metric`, descending.
 *  0 or -ENOMEM. */
int gpd_tree_finish(gpd_tree_t *t, unsigned sort_metric);
/** Copy a string, NULL -> "". Never returns NULL (aborts on ENOMEM: CLI only). */
char *gpd_cli_strdup(const char *s);

/* ---- opts.c: terminal ---- */
/** Characters per line for output cut to fit: stdout's terminal width,
 *  else $COLUMNS, else 160 (a file or a pipe). */
unsigned gpd_cli_width(void);
/** Call path s ("a > b > ... > z", outermost first) rewritten in place
 *  innermost first ("z < ... < b < a"), so that rows cut to a terminal
 *  still differ where paths differ, and cut to at most width bytes
 *  (0: whole): when the whole does not fit, call sites lose their
 *  directories ("f (a/b/c.c:3)" becomes "f (c.c:3)", as perf shows a
 *  source line), then as many innermost frames as fit, then " < ..."; when the
 *  innermost frame alone is too long, its start and end (a call site's
 *  file and line) around "..." (cut at UTF-8 character boundaries).
 *  The result is never longer than s. */
void gpd_cli_path_fit(char *s, unsigned width);

/* ---- step.c ---- */
/** Begin / end a step of a long command (name: what it does, e.g.
 *  "idleness blame").  When stderr is a terminal and the step runs over
 *  2 s, a progress line "gpuprof: NAME... N s" is kept up to date and
 *  replaced by the step's time at its end; with GPUPROF_TIMINGS=1 every
 *  step's time goes to stderr as "gpuprof: timing NAME S s".  Uses
 *  SIGALRM while a step runs.  One step at a time. */
void gpd_cli_step_begin(const char *name);
void gpd_cli_step_end(void);

/* ---- text.c: what reaches a terminal ---- */
/** Length (1..4) of the well-formed UTF-8 sequence at p[0..n), 0 when p[0]
 *  does not start one, -1 when n cuts a sequence that is well-formed so
 *  far.  n >= 1. */
int gpd_text_utf8(const unsigned char *p, size_t n);
/** The one output rule of the CLI: copy in[0..n) to out (room for 4 * n
 *  bytes; not terminated), every C0 control but tab and newline, DEL,
 *  every C1 control and every byte outside a well-formed UTF-8 sequence
 *  written as \xNN.  used NULL: the input is complete; else a sequence cut
 *  at the end is left unconsumed and *used says how far it got.  Returns
 *  the output length. */
size_t gpd_text_sanitize(char *out, const char *in, size_t n, size_t *used);
/** s as one table cell: copied into buf[n] (truncated) with newline and
 *  tab written as \\x0a and \\x09 (the stdio filter keeps those two, so a
 *  value cannot start a forged line or shift columns).  Returns buf. */
const char *gpd_text_line(char *buf, size_t n, const char *s);
/** Sanitized copy of s (NULL -> ""); never NULL (aborts on ENOMEM). */
char *gpd_text_dup(const char *s);
/** Replace stdout and stderr by streams that pass gpd_text_sanitize (once,
 *  at start; main.c).  0 or -ENOMEM. */
int gpd_text_stdio(void);
/** The unfiltered standard output (binary output: pprof); NULL before
 *  gpd_text_stdio.  Flush stdout before writing to it. */
extern FILE *gpd_text_raw_stdout;

/** A job id as text shows it: "-" when empty, "J(claimed)" when the
 *  process only claimed it (gpuprofd found no job cgroup; daemon/job.h),
 *  else J.  Returns buf or a constant. */
const char *gpd_cli_job(char *buf, size_t n, const char *job, int claimed);

/* ---- render.c ---- */
typedef struct gpd_render_opts_s {
  unsigned metric; /* sort / first-column metric, default GPD_M_GPUOP */
  unsigned depth;  /* 0: unlimited */
  int flat;
  int long_names;  /* 1: kernels' full names in the summaries (default: short, gpd_render_short_name) */
  int wide;        /* 1: every row of a summary and whole call paths (default: cut to the terminal) */
} gpd_render_opts_t;

/** Tree (or flat profile) as text, then processes, back ends, gpubins. */
void gpd_render_tree(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o);
void gpd_render_flat(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o);
void gpd_render_procs(FILE *f, const gpd_tree_t *t);
/** `ps` table; all = 0 leaves out processes that never used a GPU API (no
 *  back end reported) and says how many. */
void gpd_render_ps(FILE *f, const Gpuprof__PsReply *r, int all);
/** Top table; ginst: GINST per entry (PC samples, gpd_live_ginst) shown
 *  as a column, or NULL when no process has PC samples. */
void gpd_render_top(FILE *f, const Gpuprof__TopReply *r, unsigned metric, double total, const double *ginst);
/** GINST of a kernel's stall reasons (StallSamples; SASS execution counts
 *  and "_not_issued" subsets are not counted). */
double gpd_live_ginst(Gpuprof__StallSamples *const *s, size_t n);
/** Sum of the GPU operation counts (kernels, copies, allocations, memsets,
 *  synchronizations) in m. */
double gpd_render_op_count(const gpd_mvec_t *m);
/** v as a percentage of total ("12.3%"), "-" when total is not positive. */
void gpd_render_pct(char *buf, size_t n, double v, double total);
/** "%.4g"-style value in the unit of metric id (seconds for ns). */
void gpd_render_value(char *buf, size_t n, unsigned id, double v);
/** Display name of a node as the tree shows it, without metrics: a CPU
 *  frame's physical function and file:line (module+0xoffset when it has
 *  no symbol), a placeholder (`<gpu kernel>`), a kernel's demangled name. */
void gpd_render_node_name(char *buf, size_t n, const gpd_tnode_t *nd);
/** A kernel's short name: its return type, template argument lists and
 *  argument list left out ("void ns::k<4, F<float> >(int, F<float>)" ->
 *  "ns::k"); the name itself when nothing is left. */
void gpd_render_short_name(char *buf, size_t n, const char *name);
/** (render-summary.c) The first tables of `report` (as `nsys stats` has them): kernels by
 *  GKER (time, %, count, average, name) and the other GPU operations
 *  (copies, memsets, allocations, synchronizations: host waits) by GPUOP,
 *  each aggregated by name over the whole tree, 20 rows unless o->wide. */
void gpd_render_summaries(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o);
/** Human byte count, e.g. "1.50 MiB". */
void gpd_render_bytes(char *buf, size_t n, double bytes);
/** Record summary (stderr of `gpuprof record`). */
void gpd_render_summary(FILE *f, const gpd_tree_t *t, const char *path);

/* ---- json.c ---- */
/** Write s as a JSON string literal (quotes included). */
void gpd_json_str(FILE *f, const char *s);
/** Tree + processes + back ends + gpubins as one JSON document. */
void gpd_json_tree(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o);
/** gpd_json_tree without the object's closing "}\n": the caller adds
 *  members (",\"name\":...") and closes it. */
void gpd_json_tree_open(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o);

/* ---- load.c ---- */
/** Load one profile file into t (adds to what is there: contexts are
 *  merged by id and metrics summed over profiles).  pid > 0 keeps only the
 *  profiles of that pid; all = 1 also lists processes that never used a
 *  GPU API (no back end reported, no metric), else they only count in
 *  t->nhidden.  PC samples as gpd_report_gpu_opts says.  0, or < 0 (-errno,
 *  GPD_ESTORE, GPD_EBADVERSION) with a message naming the file in err. */
int gpd_load_file(gpd_tree_t *t, const char *path, int pid, int all, char *err, size_t errn);

/* ---- report.c ---- */
int gpd_cmd_report(int argc, char **argv);

/* ---- report-stats.c ---- */
/** `report --stats`: the `top` most imbalanced heavy contexts of metric
 *  in merged file path (labels from t).  0, or < 0 with err set (not a
 *  merged file). */
int gpd_report_stats(FILE *f, const gpd_tree_t *t, const char *path, unsigned metric, unsigned top, char *err,
                     size_t errn);

/* ---- report-gpu.c: PC samples below the kernels ---- */
typedef struct gpd_report_gpu_opts_s {
  int enabled; /* 0: the loader ignores PC samples (other users of it) */
  int detail;  /* 1: GPU nodes below kernels; 0: collapsed into the kernel */
  int flat;    /* labels for the flat view (functions without call sites) */
} gpd_report_gpu_opts_t;
/** Options the loader (load.c) uses for PC samples: report.c and advise.c
 *  set them. */
extern gpd_report_gpu_opts_t gpd_report_gpu_opts;
struct sqlite3;
struct gpd_cubin_s;
struct gpd_disasm_s;
/** Add the PC samples of the profiles in `db` (file `path`) to the tree:
 *  GINST and GINST:STL_* below (or, collapsed, on) each kernel node,
 *  GSAMP:* on the root.  Problems become notes (gpd_report_gpu_notes),
 *  never errors; returns 0 or -ENOMEM. */
int gpd_report_gpu_load(gpd_tree_t *t, struct sqlite3 *db, const char *path, int pid,
                        const gpd_report_gpu_opts_t *o);
/** Lines of notes gathered so far ("" when none). */
const char *gpd_report_gpu_notes(void);
/** GPU binary `hash` (32 hex digits) of the profile folder `dir`
 *  (dir/gpubins/<hash>.gpubin): the parsed cubin, nvdisasm's text of it
 *  parsed (a saved <hash>.nvdisasm, else nvdisasm run on it; NULL without
 *  one, noted once through *warned) and, when bytes is not NULL, its
 *  bytes (malloc'd).  0, -EINVAL (bad hash, not a cubin), -ENOENT; the
 *  reason is also a note. */
int gpd_report_gpu_bin(const char *dir, const char *hash, char **bytes, size_t *blen,
                       struct gpd_cubin_s **cubin, struct gpd_disasm_s **disasm, int *warned);

/* ---- live-call.c: one request to gpuprofd, one reply ---- */
/** Socket path: --socket value, else $GPUPROF_SOCKET, else the default. */
const char *gpd_live_socket(const char *opt);
/** Send req, receive one reply Msg (caller frees with
 *  gpuprof__msg__free_unpacked).  On failure prints a message and
 *  returns the exit code to use (> 0); 0 on success. */
int gpd_live_call(const char *sock, const Gpuprof__Msg *req, Gpuprof__Msg **reply);
struct gpd_arena_s;
/** gpd_live_call with the reply unpacked into an arena (arena.h): arena
 *  NULL to unpack with malloc (free with gpuprof__msg__free_unpacked),
 *  else *arena is set to the reply's arena (free with gpd_arena_free;
 *  NULL when there is no reply).  Same returns. */
int gpd_live_call_arena(const char *sock, const Gpuprof__Msg *req, Gpuprof__Msg **reply,
                        struct gpd_arena_s **arena);
/** Set: gpd_live_call does not print an Error reply (optional calls). */
extern int gpd_live_quiet;

/* ---- live.c: ps, top, tree, Control ---- */
/** `gpuprof devices` (live-devices.c). */
int gpd_cmd_devices(int argc, char **argv);
/** The device lines above `gpuprof top`'s table: one per monitored GPU,
 *  or why none is; nothing when the daemon does not answer Devices. */
void gpd_live_devices_header(FILE *f, const char *sock);
/** Fill t from a TreeReply. 0 or -ENOMEM. */
int gpd_live_tree_from_reply(gpd_tree_t *t, const Gpuprof__TreeReply *r);
/** Place the reply's GPU PC samples (TreeReply.gpu_samples) on its kernel
 *  nodes as GINST, GINST:STL_ANY and GINST:STL_* (the vendor reason mapped
 *  by gpd_stall_from_vendor); detail: as one GPD_NODE_GPU_STALL child per
 *  stall metric below the kernel instead of on the kernel itself.  Inclusive
 *  values of the kernel's ancestors follow.  After
 *  gpd_live_tree_from_reply, before gpd_tree_finish.  0 or -ENOMEM. */
int gpd_live_tree_gpu(gpd_tree_t *t, const Gpuprof__TreeReply *r, int detail);
int gpd_cmd_ps(int argc, char **argv);
int gpd_cmd_top(int argc, char **argv);
int gpd_cmd_tree(int argc, char **argv);
/** Send ControlRequest{pid or job, ctl} and print one line per process
 *  to `to` ("pid N: <what> (...)" or "pid N: not done: <why>").  0 when
 *  every process applied it, else an exit code; *reply: the reply (a
 *  ControlReply; free with gpuprof__msg__free_unpacked) or NULL (the
 *  daemon refused the request or did not answer: said on stderr). */
int gpd_live_control(const char *sock, int pid, const char *job, const Gpuprof__Control *ctl,
                     const char *what, FILE *to, Gpuprof__Msg **reply);
/** 1 while a process that applied the control of creply (a ControlReply)
 *  is running with control kind `kind` still on (`ps`, the shim's last
 *  word), 0 when none is, -1 when the daemon does not answer (said on
 *  stderr). */
int gpd_live_control_on(const char *sock, const Gpuprof__Msg *creply, unsigned kind);

/* ---- sample.c ---- */
/** `gpuprof sample`. */
int gpd_cmd_sample(int argc, char **argv);
/** `gpuprof policy` (policy.c). */
int gpd_cmd_policy(int argc, char **argv);

/* ---- export.c (export-speedscope.c) ---- */
/** Load the profiles FILE... (merged by context as `report` does; pid > 0
 *  keeps that process's profiles) and finish the tree sorted by metric.
 *  Prints "gpuprof: <why>" and returns GPD_EXIT_FAIL on error, else 0. */
int gpd_export_load(gpd_tree_t *t, char **files, int nfiles, int pid, unsigned metric);
/** The tree as a speedscope file (speedscope's file-format-schema.json):
 *  one "sampled" profile per metric with a non-zero value (metric id
 *  order), the one of `metric` active; each context with a non-zero
 *  exclusive value is one sample weighted by that value (ns, bytes, or a
 *  count), its stack the CPU path (an inline chain as one frame per
 *  function) -> `<gpu op>` placeholder -> kernel.  name: the document's
 *  title.  0, or -errno when f fails. */
int gpd_export_speedscope(FILE *f, const gpd_tree_t *t, unsigned metric, const char *name);
int gpd_cmd_export(int argc, char **argv);

/* ---- fold.c ---- */
enum { GPD_VIEW_NATIVE = 1u << 0, /* --native: every native frame as recorded */
       GPD_VIEW_PYTHON = 1u << 1  /* --python: Python frames, operators, placeholders, GPU part */ };
/** A view of finished tree t, in place (`report`, `tree`, `export`):
 *  by default the operator view: PyTorch's dispatcher frames (c10
 *  dispatch and boxing, autograd/ADInplaceOrView kernels, redispatch
 *  entries, backend registration wrappers, the Python binding) folded and
 *  each operator entry `at::_ops::NAME::call` shown as an operator node
 *  (GPD_NODE_OPERATOR, label `aten::NAME`); a tree with no such frame is
 *  left untouched.  GPD_VIEW_PYTHON folds every native frame but the
 *  operators (both with GPD_VIEW_NATIVE: operators folded too);
 *  GPD_VIEW_NATIVE alone changes nothing.  A folded node's children hang
 *  below its nearest kept ancestor and its exclusive values are added to
 *  it; nodes equal in kind, label, module, offset and raw name below one
 *  parent merge (operators: equal label); finished again, children sorted
 *  by sort_metric.  Processes and GPU binaries move over.  0 or -ENOMEM
 *  (t then freed). */
int gpd_fold_view(gpd_tree_t *t, unsigned view, unsigned sort_metric);

/* ---- view.c ---- */
int gpd_cmd_view(int argc, char **argv);
/* ---- cluster.c: `gpuprof merge` ---- */
int gpd_cmd_merge(int argc, char **argv);
/* ---- advise.c ---- */
int gpd_cmd_advise(int argc, char **argv);

/* ---- record.c ---- */
int gpd_cmd_record(int argc, char **argv);

/* ---- opts.c ---- */
extern const char *gpd_cli_prog; /* "gpuprof" */

/** One option of a command, in the order its --help lists it.
 *  name: the long name ("metric" for --metric); NULL for a short option
 *  only (`val` in `shorts`) or, with val 0, a line of the help that is no
 *  option of its own (`shown` and `help` only).
 *  arg: getopt's no_argument or required_argument.
 *  val: what gpd_cli_opt_next returns for it (a letter in the command's
 *  `shorts` is also taken as -LETTER).
 *  shown: its left column in the help ("--metric NAME", "-o, --output
 *  FILE"); NULL: the help does not list it.
 *  help: its text; '\n' separates the lines (the first beside `shown`,
 *  the others under it at the command's column).
 *  A row of all zeros ends a table. */
typedef struct gpd_cli_opt_s {
  const char *name;
  int arg;
  int val;
  const char *shown, *help;
} gpd_cli_opt_t;

/** A command line's one source for both its parsing and its --help (which
 *  man/help2roff.py turns into the man page): `head` (the usage lines and
 *  what the command does), then a line per shown option (its text from
 *  column `col`, 0-based; a longer left column puts it two spaces after
 *  that), then `tail` (NULL: none).  shorts: the letters of `opts`' vals
 *  also taken as short options ("" none); -h is always one.  permute:
 *  options may follow operands (getopt's default); 0 stops at the first
 *  operand (getopt's "+").  text: the help, made by gpd_cli_help (zero at
 *  first). */
typedef struct gpd_cli_cmd_s {
  const char *head;
  const gpd_cli_opt_t *opts;
  const char *shorts;
  unsigned col;
  const char *tail;
  int permute;
  char *text;
} gpd_cli_cmd_t;

/** The --help text of c, made from its head, options and tail at the
 *  first call and kept in c->text for the process's life.  Never NULL
 *  (aborts on ENOMEM, as gpd_cli_strdup: CLI only).  One thread. */
const char *gpd_cli_help(gpd_cli_cmd_t *c);

/** The next option of argv[0..argc) for command c (getopt_long over c's
 *  table; the caller sets optind = 1 before the first call).  Returns the
 *  option's val (> 0, optarg set for an argument); 0 at the end of the
 *  options (optind: the first operand); -1 when the command must stop
 *  with exit code *rc: --help / -h printed the help to stdout
 *  (GPD_EXIT_OK), or an unknown option or a missing argument printed the
 *  usage error (GPD_EXIT_USAGE).  getopt's own messages are off
 *  (opterr = 0).  One thread. */
int gpd_cli_opt_next(int argc, char **argv, gpd_cli_cmd_t *c, int *rc);

/** Print "gpuprof: <message>" and the usage text to stderr; returns
 *  GPD_EXIT_USAGE. */
int gpd_cli_usage(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Parse a non-negative decimal int; -1 on error. */
long gpd_cli_parse_uint(const char *s);
/** Metric id from name (case-insensitive), or -1. */
int gpd_cli_metric(const char *name);

#endif
