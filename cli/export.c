/* export.c - `gpuprof export`: a saved profile's heterogeneous calling
 * context tree in the formats other tools read (docs/EXPORT.md).  This
 * file holds the command and the folded writer; what the writers share
 * (export.h) is in export-walk.c, the other writers have files of their
 * own:
 *
 *   pprof      profile.proto (proto/profile.proto, the public schema of
 *              github.com/google/pprof), packed with protobuf-c and
 *              gzipped; one sample type per metric (export-pprof.c)
 *   folded     flamegraph.pl's folded stacks ("a;b;c VALUE" lines) of one
 *              metric
 *   speedscope speedscope's JSON file format, one profile per metric
 *              (what `gpuprof view` embeds; export-speedscope.c)
 *
 * Every export has the shape `gpuprof report` prints: the CPU calling path
 * (an inline chain as one frame per function, outermost first), then the
 * `<gpu kernel>`/`<gpu copy>`/... placeholder, then the kernel, as in the
 * heterogeneous CCT of "Measurement and Analysis of GPU-Accelerated
 * Applications with HPCToolkit" (Zhou et al., Parallel Computing 2021,
 * section 4: GPU operations are placeholders below the CPU calling
 * context, the kernel below its placeholder).  A context with a non-zero
 * exclusive value is one sample whose stack is its path from the root
 * (the root frame left out), weighted by its exclusive values: summing the
 * samples of a subtree gives the inclusive values `report` shows.
 * Runs on the CLI's single thread.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"
#include "gpuprof/outfile.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"

/* ---- folded stacks ---- */

typedef struct folded_s {
  FILE *f;
  unsigned metric;
} folded_t;

/* A frame name as flamegraph.pl can split it: ';' separates frames and a
 * line ends the stack, so both are replaced. */
static void folded_name(FILE *f, const char *s) {
  for (; *s; s++) fputc(*s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static int folded_stack(void *ctx, const gpd_tree_t *t, const size_t *path, size_t n) {
  folded_t *fo = ctx;
  const gpd_tnode_t *leaf = &t->nodes[path[n - 1]];
  int64_t v = gpd__export_pprof_value(fo->metric, gpd_tree_mvec_get(&leaf->excl, fo->metric));
  if (v == 0) return 0;
  gpd_export_frame_t x;
  for (size_t k = 0; k < n; k++) {
    const gpd_tnode_t *nd = &t->nodes[path[k]];
    for (uint32_t j = 0, nf = gpd__export_nframes(nd); j < nf; j++) {
      gpd__export_frame(nd, j, &x);
      if (k || j) fputc(';', fo->f);
      folded_name(fo->f, x.name);
      /* flamegraph.pl's annotation of an inlined function (its
       * documentation: "_[i] for inlined", after Linux perf's "_[k]") */
      if (x.inlined) fputs("_[i]", fo->f);
    }
  }
  fprintf(fo->f, " %lld\n", (long long)v);
  return ferror(fo->f) ? -EIO : 0;
}

/* ---- the command ---- */

int gpd_export_load(gpd_tree_t *t, char **files, int nfiles, int pid, unsigned metric) {
  char err[1024];
  int r;
  for (int i = 0; i < nfiles; i++)
    if (gpd_load_file(t, files[i], pid, 0, err, sizeof(err)) < 0) {
      fprintf(stderr, "gpuprof: %s\n", err);
      return GPD_EXIT_FAIL;
    }
  if ((r = gpd_tree_finish(t, metric)) < 0) {
    fprintf(stderr, "gpuprof: %s\n", gpd_strerror(r));
    return GPD_EXIT_FAIL;
  }
  return 0;
}

static const gpd_cli_opt_t export_opts[] = {
    {"format", required_argument, 'F', "--format pprof", "pprof's profile.proto, gzipped: one sample type per metric"},
    {NULL, 0, 0, "--format folded", "flamegraph.pl folded stacks of one metric (--metric, default GPUOP)"},
    {NULL, 0, 0, "--format speedscope", "speedscope JSON: one profile per metric"},
    {"output", required_argument, 'o', "-o OUT",
     "output file (default: standard output; pprof is never written to a terminal)"},
    {"metric", required_argument, 'm', "--metric NAME",
     "folded: the metric; pprof/speedscope: the one shown first (default GPUOP)"},
    {"pid", required_argument, 'p', "--pid N", "only the profiles of process N"},
    {"python", no_argument, 'P', "--python",
     "Python view: Python frames, operators, placeholders and the GPU part only"},
    {"native", no_argument, 'N', "--native",
     "every native frame (default: PyTorch's dispatcher folded into aten::NAME)"},
    {0}};

static gpd_cli_cmd_t export_cmd = {
    .head = "usage: gpuprof export --format pprof|folded|speedscope [-o OUT] [--metric NAME] [--pid N] [--python] "
            "[--native] FILE...\n"
            "  Write saved profiles (merged by context, as `report` shows them) for other tools.\n",
    .opts = export_opts,
    .shorts = "FompPN",
    .col = 23};

enum { FMT_NONE, FMT_PPROF, FMT_FOLDED, FMT_SPEEDSCOPE };

int gpd_cmd_export(int argc, char **argv) {
  const char *export_usage = gpd_cli_help(&export_cmd);
  int fmt = FMT_NONE, pid = 0, c, rc = GPD_EXIT_FAIL, r = 0;
  unsigned view = 0;
  unsigned metric = GPD_M_GPUOP;
  const char *out = NULL;
  long v;
  optind = 1;
  while ((c = gpd_cli_opt_next(argc, argv, &export_cmd, &rc)) > 0) {
    switch (c) {
    case 'F':
      if (!strcmp(optarg, "pprof"))
        fmt = FMT_PPROF;
      else if (!strcmp(optarg, "folded"))
        fmt = FMT_FOLDED;
      else if (!strcmp(optarg, "speedscope"))
        fmt = FMT_SPEEDSCOPE;
      else
        return gpd_cli_usage(export_usage, "unknown format '%s'", optarg);
      break;
    case 'o': out = optarg; break;
    case 'm':
      if ((v = gpd_cli_metric(optarg)) < 0) return gpd_cli_usage(export_usage, "unknown metric '%s'", optarg);
      metric = (unsigned)v;
      break;
    case 'p':
      if ((v = gpd_cli_parse_uint(optarg)) <= 0) return gpd_cli_usage(export_usage, "bad --pid '%s'", optarg);
      pid = (int)v;
      break;
    case 'P': view |= GPD_VIEW_PYTHON; break;
    case 'N': view |= GPD_VIEW_NATIVE; break;
    }
  }
  if (c < 0) return rc;
  if (fmt == FMT_NONE) return gpd_cli_usage(export_usage, "--format is required");
  if (optind >= argc) return gpd_cli_usage(export_usage, "no profile file given");
  if (out && !strcmp(out, "-")) out = NULL;
  if (fmt == FMT_PPROF && !out && isatty(STDOUT_FILENO))
    return gpd_cli_usage(export_usage, "pprof output is binary: give -o FILE or redirect standard output");

  gpd_tree_t t;
  uint8_t *gz = NULL;
  size_t gzn = 0;
  FILE *f = NULL;
  gpd_outfile_t of = {.fd = -1};
  char oerr[600];
  gpd_tree_init(&t);
  if (gpd_export_load(&t, argv + optind, argc - optind, pid, metric)) goto done;
  if ((r = gpd_fold_view(&t, view, metric)) < 0) {
    fprintf(stderr, "gpuprof: %s\n", gpd_strerror(r));
    goto done;
  }
  /* build first: nothing is written (no empty output file) on failure */
  if (fmt == FMT_PPROF && (r = gpd__export_pprof(&t, metric, argv + optind, argc - optind, &gz, &gzn)) < 0) {
    fprintf(stderr, "gpuprof: cannot build the pprof profile: %s\n", gpd_strerror(r));
    goto done;
  }
  if (!out) {
    /* pprof is binary: past the terminal filter (text.c) */
    f = fmt == FMT_PPROF && gpd_text_raw_stdout ? gpd_text_raw_stdout : stdout;
  } else if (gpd_outfile_open(&of, out, oerr, sizeof oerr) < 0) {
    fprintf(stderr, "gpuprof: %s\n", oerr);
    goto done;
  } else {
    f = of.f;
  }
  if (fmt == FMT_PPROF) {
    if (fwrite(gz, 1, gzn, f) != gzn) r = -EIO;
  } else if (fmt == FMT_FOLDED) {
    folded_t fo = {f, metric};
    r = gpd__export_walk(&t, folded_stack, &fo);
  } else {
    r = gpd_export_speedscope(f, &t, metric, argv[optind]);
  }
  if ((fflush(f) != 0 || ferror(f)) && r == 0) r = errno ? -errno : -EIO;
  if (r < 0) {
    fprintf(stderr, "gpuprof: cannot write %s: %s\n", out ? out : "standard output", gpd_strerror(r));
    goto done;
  }
  if (out && gpd_outfile_commit(&of, oerr, sizeof oerr) < 0) {
    fprintf(stderr, "gpuprof: %s\n", oerr);
    goto done;
  }
  rc = GPD_EXIT_OK;
done:
  if (out) gpd_outfile_abort(&of);
  free(gz);
  gpd_tree_free(&t);
  return rc;
}
