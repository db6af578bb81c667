/* report.c - `gpuprof report`: saved profiles (load.c) merged into one
 * tree and rendered, with their idleness blame and duty-cycle estimates.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trace.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-read.h"

static const gpd_cli_opt_t report_opts[] = {
    {"json", no_argument, 'j', "--json", "the tree, processes, back ends and GPU binaries as JSON"},
    {"flat", no_argument, 'f', "--flat", "flat profile: exclusive values aggregated by function/kernel"},
    {"metric", required_argument, 'm', "--metric NAME", "sort by (and show) metric NAME (default GPUOP)"},
    {"depth", required_argument, 'd', "--depth N", "show at most N levels below the root (opens the GPU part too)"},
    {"gpu-detail", no_argument, 'g', "--gpu-detail",
     "PC samples below each kernel: GPU function, loop, line, instruction\n"
     "(default: collapsed into the kernel's GINST/GINST:STL_* values)"},
    {"pid", required_argument, 'p', "--pid N", "only the profiles of process N"},
    {"all", no_argument, 'a', "--all", "also list processes that never used a GPU API"},
    {"stats", no_argument, 's', "--stats",
     "merged files (gpuprof merge): per-context statistics over the processes,\n"
     "the most imbalanced heavy contexts of --metric first"},
    {"long-names", no_argument, 'L', "--long-names",
     "kernels' full names in the summaries (default: without template and\nargument lists)"},
    {"wide", no_argument, 'W', "--wide",
     "every summary row and whole call paths (default: 20 rows; idleness paths\n"
     "innermost frame first, cut to the terminal's width)"},
    {"python", no_argument, 'P', "--python",
     "Python view: only Python frames, operators (aten::*), placeholders\n"
     "(<backward>, NVTX ranges) and the GPU part; native frames folded away"},
    {"native", no_argument, 'N', "--native",
     "every native frame as recorded (default: PyTorch's dispatcher frames\n"
     "folded, each operator shown as aten::NAME)"},
    {0}};

static gpd_cli_cmd_t report_cmd = {
    .head = "usage: gpuprof report [--json] [--flat] [--stats] [--gpu-detail] [--metric NAME] [--depth N] [--pid N] [--all]\n"
            "                      [--long-names] [--wide] [--python] [--native] FILE...\n"
            "  Print saved profiles (merged by context): a kernel summary and a summary of the other GPU\n"
            "  operations (copies, memsets, allocations, synchronizations), then the calling-context tree,\n"
            "  the processes, and the GPU idleness blame of traced processes.\n",
    .opts = report_opts,
    .shorts = "jfmdpasgLWPN",
    .col = 17};

int gpd_cmd_report(int argc, char **argv) {
  const char *report_usage = gpd_cli_help(&report_cmd);
  gpd_render_opts_t o = {GPD_M_GPUOP, 0, 0, 0, 0};
  int json = 0, pid = 0, all = 0, stats = 0, c, rc, metric_set = 0;
  unsigned view = 0;
  long v;
  optind = 1;
  while ((c = gpd_cli_opt_next(argc, argv, &report_cmd, &rc)) > 0) {
    switch (c) {
    case 'j': json = 1; break;
    case 'f': o.flat = 1; break;
    case 'm':
      if ((v = gpd_cli_metric(optarg)) < 0) return gpd_cli_usage(report_usage, "unknown metric '%s'", optarg);
      o.metric = (unsigned)v;
      metric_set = 1;
      break;
    case 'd':
      if ((v = gpd_cli_parse_uint(optarg)) < 0) return gpd_cli_usage(report_usage, "bad --depth '%s'", optarg);
      o.depth = (unsigned)v;
      break;
    case 'p':
      if ((v = gpd_cli_parse_uint(optarg)) <= 0) return gpd_cli_usage(report_usage, "bad --pid '%s'", optarg);
      pid = (int)v;
      break;
    case 'a': all = 1; break;
    case 's': stats = 1; break;
    case 'g': gpd_report_gpu_opts.detail = 1; break;
    case 'L': o.long_names = 1; break;
    case 'W': o.wide = 1; break;
    case 'P': view |= GPD_VIEW_PYTHON; break;
    case 'N': view |= GPD_VIEW_NATIVE; break;
    }
  }
  if (c < 0) return rc;
  if (optind >= argc) return gpd_cli_usage(report_usage, "no profile file given");
  if (json && o.flat) return gpd_cli_usage(report_usage, "--json and --flat do not combine");
  if (stats && (json || o.flat || (view & GPD_VIEW_PYTHON)))
    return gpd_cli_usage(report_usage, "--stats does not combine with --json, --flat or --python");

  gpd_report_gpu_opts.enabled = 1;
  int asked_detail = gpd_report_gpu_opts.detail;
  if (gpd_report_gpu_opts.detail && !metric_set) o.metric = GPD_M_GINST; /* what GPU nodes have */
  gpd_report_gpu_opts.detail |= o.depth > 0 || o.flat;
  gpd_report_gpu_opts.flat = o.flat;
  gpd_tree_t t;
  char err[1024];
  int r = 0;
  gpd_tree_init(&t);
  gpd_cli_step_begin("loading the profile");
  for (int i = optind; i < argc; i++) {
    if ((r = gpd_load_file(&t, argv[i], pid, all, err, sizeof(err))) < 0) {
      gpd_cli_step_end();
      fprintf(stderr, "gpuprof: %s\n", err);
      gpd_tree_free(&t);
      return GPD_EXIT_FAIL;
    }
  }
  r = gpd_tree_finish(&t, o.metric);
  if (r >= 0 && !stats) r = gpd_fold_view(&t, view, o.metric); /* --stats: per-context ids */
  gpd_cli_step_end();
  if (r >= 0 && pid && t.nprocs == 0) {
    fprintf(stderr, "gpuprof: no process %d in %s%s\n", pid, argv[optind],
            argc - optind > 1 ? " or the other files" : "");
    gpd_tree_free(&t);
    return GPD_EXIT_FAIL;
  }
  if (r < 0) {
    fprintf(stderr, "gpuprof: %s\n", gpd_strerror(r));
    gpd_tree_free(&t);
    return GPD_EXIT_FAIL;
  }
  if (asked_detail && (t.root == SIZE_MAX || gpd_tree_mvec_get(&t.nodes[t.root].incl, GPD_M_GINST) == 0)) {
    int cuda = 0;
    for (int i = optind; i < argc; i++)
      cuda |= gpd_store_profile_has_cuda(argv[i]);
    fprintf(stderr, "gpuprof: no PC samples: %s\n",
            cuda ? "record with GPUPROF_PC_SAMPLING=1, or `gpuprof sample --pid N` while it runs"
                 : "PC sampling is CUDA-only (CUPTI); no process in the profile used CUDA");
  }
  if (stats) {
    for (int i = optind; i < argc && r >= 0; i++)
      if ((r = gpd_report_stats(stdout, &t, argv[i], o.metric, 20, err, sizeof(err))) < 0)
        fprintf(stderr, "gpuprof: %s\n", err);
    gpd_tree_free(&t);
    return r < 0 ? GPD_EXIT_FAIL : GPD_EXIT_OK;
  }
  if (json) {
    gpd_json_tree_open(stdout, &t, &o);
    /* profiles with traces: GPU idleness blame per process */
    fputs(",\"gpu_idleness\":{\"metric\":\"GIDLE\",\"unit\":\"s\",\"processes\":[", stdout);
    int first = 1;
    gpd_cli_step_begin("idleness blame");
    for (int i = optind; i < argc; i++)
      if (gpd_idle_report_json(stdout, argv[i], pid, &first, err, sizeof(err)) < 0)
        fprintf(stderr, "gpuprof: %s\n", err);
    gpd_cli_step_end();
    /* duty-cycled processes: their kernel contexts scaled by 1/f */
    fputs("]},\"duty_estimates\":{\"estimate\":\"observed / f\",\"unit\":\"s\",\"processes\":[", stdout);
    first = 1;
    for (int i = optind; i < argc; i++)
      if (gpd_report_duty_json(stdout, argv[i], pid, &first, err, sizeof(err)) < 0)
        fprintf(stderr, "gpuprof: %s\n", err);
    fputs("]}}\n", stdout);
  } else {
    if (argc - optind == 1)
      printf("Profile %s: %zu process%s\n\n", argv[optind], t.nprocs, t.nprocs == 1 ? "" : "es");
    else
      printf("Profiles (%d files merged): %zu processes\n\n", argc - optind, t.nprocs);
    gpd_cli_step_begin("kernel and operation summaries");
    gpd_render_summaries(stdout, &t, &o);
    gpd_cli_step_end();
    gpd_cli_step_begin("calling-context tree");
    if (o.flat)
      gpd_render_flat(stdout, &t, &o);
    else
      gpd_render_tree(stdout, &t, &o);
    gpd_render_procs(stdout, &t);
    if (gpd_report_gpu_notes()[0]) printf("\nGPU samples:\n%s", gpd_report_gpu_notes());
    gpd_cli_step_end();
    gpd_cli_step_begin("idleness blame");
    for (int i = optind; i < argc; i++) /* profiles with traces: GPU idleness blame */
      if (gpd_idle_report(stdout, argv[i], pid, o.wide ? 0 : gpd_cli_width(), err, sizeof(err)) < 0)
        fprintf(stderr, "gpuprof: %s\n", err);
    gpd_cli_step_end();
    gpd_cli_step_begin("duty-cycle estimates");
    for (int i = optind; i < argc; i++) /* duty-cycled processes: scaled estimates */
      if (gpd_report_duty(stdout, argv[i], pid, o.wide ? 0 : gpd_cli_width(), err, sizeof(err)) < 0) fprintf(stderr, "gpuprof: %s\n", err);
    gpd_cli_step_end();
  }
  if (json && gpd_report_gpu_notes()[0]) fprintf(stderr, "gpuprof: GPU samples:\n%s", gpd_report_gpu_notes());
  gpd_tree_free(&t);
  if (fflush(stdout) != 0) return GPD_EXIT_FAIL;
  return GPD_EXIT_OK;
}
