/* main.c - `gpuprof`: dispatch to the subcommands (docs/CLI.md). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace.h"
#include "gpuprof/metric.h"

static const char main_usage[] =
    "usage: gpuprof COMMAND [OPTIONS]\n"
    "Commands:\n"
    "  record [-o FILE] [--cpu-sampling HZ] [--keep-socket] -- CMD...   profile CMD with a private gpuprofd\n"
    "  report [--json] [--flat] [--stats] [--gpu-detail] [--metric M] [--depth N] [--pid N] [--all] FILE...\n"
    "                                               print a saved profile\n"
    "  export --format pprof|folded|speedscope [-o OUT] FILE...   for pprof, flamegraph.pl, speedscope\n"
    "  view [-o OUT.html] [--no-browser] FILE...    interactive flame graph in a browser (offline)\n"
    "  merge -o OUT [--job J] [--keep-going] INPUT...   merge saved profiles (threads; MPI under mpirun)\n"
    "  advise [--kernel K] [--top N] [--json] FILE   ranked optimizations from PC samples\n"
    "  ps [--job J] [--all]                         processes gpuprofd profiles now\n"
    "  top [--pid N] [--job J] [-n N] [--metric M]  heaviest GPU kernels/operations now\n"
    "  tree [--pid N] [--job J] [--depth N] [--gpu-detail] [--json]  live calling-context tree\n"
    "  devices [--job J] [--prometheus]             GPUs, their jobs and PAPI counters now\n"
    "  sample --pid N|--job J [--duration 10s]      GPU PC sampling in running processes\n"
    "  trace -o OUT [--format perfetto|chrome] (FILE | --pid N --duration D)   GPU timeline\n"
    "  policy [--pid N] [--json] | policy set KEY=VALUE [--job J|--uid U|--exe P]   collection policy\n"
    "  metrics                                      list metric names\n"
    "`gpuprof COMMAND --help` describes each command's options.\n"
    "Live commands talk to $GPUPROF_SOCKET or --socket PATH (default " GPD_CLI_DEFAULT_SOCKET ").\n"
    "Exit codes: 0 ok, 1 error reply / unreadable profile, 2 no gpuprofd, 64 usage;\n"
    "record exits with CMD's status (128+N if a signal N killed it).\n";

static int metrics_main(void) {
  static const char *units[] = {"ns (shown in s)", "bytes", "count", "mean per launch"};
  for (unsigned i = 0; i < GPD_M__COUNT; i++) {
    const gpd_metric_desc_t *d = gpd_metric_desc(i);
    printf("%-14s %-16s %s\n", d->name, d->unit <= GPD_UNIT_MEAN ? units[d->unit] : "?", d->desc);
  }
  return GPD_EXIT_OK;
}

int main(int argc, char **argv) {
  /* everything printed passes the terminal rule (text.c) */
  if (gpd_text_stdio() < 0) return GPD_EXIT_FAIL;
  /* Global options before the command: --socket PATH (same as
   * $GPUPROF_SOCKET; the live commands read it from the environment). */
  while (argc >= 2 && !strncmp(argv[1], "--socket", 8)) {
    const char *path = NULL;
    if (argv[1][8] == '=') {
      path = argv[1] + 9;
      argc--, argv++;
    } else if (argv[1][8] == 0 && argc >= 3) {
      path = argv[2];
      argc -= 2, argv += 2;
    } else {
      return gpd_cli_usage(main_usage, "--socket needs a PATH");
    }
    setenv("GPUPROF_SOCKET", path, 1);
  }
  if (argc < 2) return gpd_cli_usage(main_usage, "no command given");
  const char *c = argv[1];
  argc--;
  argv++;
  if (!strcmp(c, "record")) return gpd_cmd_record(argc, argv);
  if (!strcmp(c, "report")) return gpd_cmd_report(argc, argv);
  if (!strcmp(c, "export")) return gpd_cmd_export(argc, argv);
  if (!strcmp(c, "view")) return gpd_cmd_view(argc, argv);
  if (!strcmp(c, "merge")) return gpd_cmd_merge(argc, argv);
  if (!strcmp(c, "advise")) return gpd_cmd_advise(argc, argv);
  if (!strcmp(c, "ps")) return gpd_cmd_ps(argc, argv);
  if (!strcmp(c, "top")) return gpd_cmd_top(argc, argv);
  if (!strcmp(c, "tree")) return gpd_cmd_tree(argc, argv);
  if (!strcmp(c, "devices")) return gpd_cmd_devices(argc, argv);
  if (!strcmp(c, "sample")) return gpd_cmd_sample(argc, argv);
  if (!strcmp(c, "policy")) return gpd_cmd_policy(argc, argv);
  if (!strcmp(c, "metrics")) return metrics_main();
  if (!strcmp(c, "trace")) return gpd_cmd_trace(argc, argv);
  if (!strcmp(c, "help") || !strcmp(c, "--help") || !strcmp(c, "-h")) {
    fputs(main_usage, stdout);
    return GPD_EXIT_OK;
  }
  if (!strcmp(c, "--version")) {
    printf("gpuprof %s\n", GPD_VERSION);
    return GPD_EXIT_OK;
  }
  return gpd_cli_usage(main_usage, "unknown command '%s'", c);
}
