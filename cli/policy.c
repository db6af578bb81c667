/* policy.c - `gpuprof policy`: the node's collection policy (docs/CLI.md,
 * docs/SERVICE.md "Collection policy").
 *
 *   gpuprof policy [--json]                 the node's policy (anyone)
 *   gpuprof policy --pid N [--json]         what applies to one of your
 *                                           processes, why, and its cost
 *   gpuprof policy set KEY=VALUE [--job J | --uid U | --exe PATTERN]
 *                                           change it (root / admin_group);
 *                                           running processes switch live
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/record.h"

static gpd_cli_cmd_t policy_cmd = {
    .head = "usage: gpuprof policy [--pid N] [--json] [--socket PATH]\n"
            "       gpuprof policy set KEY=VALUE [--job J | --uid U | --exe PATTERN] [--socket PATH]\n"
            "  Without --pid: the node's collection policy ([collect] and its override sections).\n",
    .opts = (const gpd_cli_opt_t[]){
        {"pid", required_argument, 'p', "--pid N",
         "what applies to process N (yours; admins: any): mode, windows, budget,\n"
         "estimated overhead and which rule or environment variable decided"},
        {NULL, 0, 0, "set",
         "change KEY (mode, window_ms, period_ms, budget, ...) for the whole node\n"
         "or one job, uid or executable pattern (root or the admin group); running\n"
         "processes it applies to switch at once; lasts until a reload or restart"},
        {"json", no_argument, 'J', NULL, NULL},
        {"job", required_argument, 'j', NULL, NULL},
        {"uid", required_argument, 'u', NULL, NULL},
        {"exe", required_argument, 'e', NULL, NULL},
        {"socket", required_argument, 's', NULL, NULL},
        {0}},
    .shorts = "",
    .col = 12,
    .permute = 1};

static const char *api_name(unsigned a) {
  return a == GPD_API_CUDA ? "cuda" : a == GPD_API_OPENCL ? "opencl" : a == GPD_API_LEVEL0 ? "level0" : "shim";
}

static void print_pol(FILE *f, const char *indent, const Gpuprof__CollectPolicy *p) {
  fprintf(f, "%smode %s", indent, p->mode);
  if (!strcmp(p->mode, "duty"))
    fprintf(f, ", window %u ms every %u ms%s", p->window_ms, p->period_ms, p->governed ? " (governed)" : "");
  fprintf(f, ", budget %u.%02u %%", p->budget_bp / 100, p->budget_bp % 100);
  if (p->pc_window_ms)
    fprintf(f, ", PC sampling %u ms every %u s", p->pc_window_ms, p->pc_period_s);
  fprintf(f, ", CPU sampling %s", p->cpu_sample_hz ? "" : "off");
  if (p->cpu_sample_hz)
    fprintf(f, "%u Hz", p->cpu_sample_hz);
  fprintf(f, "\n");
}

static void json_pol(FILE *f, const Gpuprof__CollectPolicy *p) {
  fprintf(f, "{\"mode\": ");
  gpd_json_str(f, p->mode);
  fprintf(f, ", \"window_ms\": %u, \"period_ms\": %u, \"budget_pct\": %.2f, \"pc_window_ms\": %u, "
             "\"pc_period_s\": %u, \"cpu_sample_hz\": %u, \"governed\": %s, \"rule\": ",
          p->window_ms, p->period_ms, p->budget_bp / 100.0, p->pc_window_ms, p->pc_period_s, p->cpu_sample_hz,
          p->governed ? "true" : "false");
  gpd_json_str(f, p->rule);
  fprintf(f, ", \"why\": ");
  gpd_json_str(f, p->why);
  fprintf(f, "}");
}

static void print_proc(FILE *f, const Gpuprof__PolicyProc *pp) {
  fprintf(f, "pid %d (%s%s%s)\n", pp->pid, pp->exe, pp->job_id[0] ? ", job " : "", pp->job_id);
  if (pp->policy) {
    print_pol(f, "  policy: ", pp->policy);
    fprintf(f, "  rule: %s\n", pp->policy->rule);
    fprintf(f, "  why: %s\n", pp->policy->why);
  }
  for (size_t i = 0; i < pp->n_reports; i++) {
    const Gpuprof__CollectReport *r = pp->reports[i];
    fprintf(f, "  %s: %s (%s)%s%s\n", api_name(r->api), r->mode[0] ? r->mode : "-", r->source,
            r->note[0] ? ": " : "", r->note);
    if (r->windows)
      fprintf(f, "    %llu windows, %.3f s traced of %.3f s, %llu of %llu counted launches inside, switching %.2f "
                 "ms/window\n",
              (unsigned long long)r->windows, r->window_ns / 1e9, r->elapsed_ns / 1e9,
              (unsigned long long)r->launches_in, (unsigned long long)r->launches,
              r->switch_ns / 1e6 / (double)r->windows);
    if (r->busy[0])
      fprintf(f, "    %s\n", r->busy);
    else if (r->busy_windows)
      fprintf(f, "    %llu window%s skipped earlier: another tool held CUPTI\n",
              (unsigned long long)r->busy_windows, r->busy_windows == 1 ? "" : "s");
    if (r->pc_rot_windows || r->pc_rot_skipped)
      fprintf(f, "    %u rotating PC-sampling window%s (%.3f s), %u due turn%s skipped while busy\n", r->pc_rot_windows,
              r->pc_rot_windows == 1 ? "" : "s", r->pc_rot_window_ns / 1e9, r->pc_rot_skipped,
              r->pc_rot_skipped == 1 ? "" : "s");
    if (!r->can_detach && r->launches && r->self_ns)
      fprintf(f, "    %llu operations in %.3f s, the shim's own time %.3f ms (%.2f us each)\n",
              (unsigned long long)r->launches, r->elapsed_ns / 1e9, r->self_ns / 1e6,
              r->self_ns / 1e3 / (double)r->launches);
  }
  if (pp->overhead >= 0)
    fprintf(f, "  estimated overhead: %.2f %% (%s)\n", pp->overhead * 100, pp->overhead_how);
  else
    fprintf(f, "  estimated overhead: unknown (%s)\n", pp->overhead_how);
  if (pp->deep_dive[0])
    fprintf(f, "  %s\n", pp->deep_dive);
}

static void json_reply(FILE *f, const Gpuprof__PolicyReply *r) {
  fprintf(f, "{\"node\": ");
  if (r->node)
    json_pol(f, r->node);
  else
    fprintf(f, "null");
  fprintf(f, ", \"rules\": [");
  for (size_t i = 0; i < r->n_rules; i++) {
    fprintf(f, "%s", i ? ", " : "");
    gpd_json_str(f, r->rules[i]);
  }
  fprintf(f, "], \"procs\": [");
  for (size_t i = 0; i < r->n_procs; i++) {
    const Gpuprof__PolicyProc *pp = r->procs[i];
    fprintf(f, "%s{\"pid\": %d, \"profile_id\": %llu, \"uid\": %u, \"exe\": ", i ? ", " : "", pp->pid,
            (unsigned long long)pp->profile_id, pp->uid);
    gpd_json_str(f, pp->exe);
    fprintf(f, ", \"job\": ");
    gpd_json_str(f, pp->job_id);
    fprintf(f, ", \"policy\": ");
    if (pp->policy)
      json_pol(f, pp->policy);
    else
      fprintf(f, "null");
    fprintf(f, ", \"overhead\": ");
    if (pp->overhead >= 0)
      fprintf(f, "%.6f", pp->overhead);
    else
      fprintf(f, "null");
    fprintf(f, ", \"overhead_how\": ");
    gpd_json_str(f, pp->overhead_how);
    fprintf(f, ", \"deep_dive\": ");
    gpd_json_str(f, pp->deep_dive);
    fprintf(f, ", \"backends\": [");
    for (size_t j = 0; j < pp->n_reports; j++) {
      const Gpuprof__CollectReport *c = pp->reports[j];
      fprintf(f, "%s{\"api\": ", j ? ", " : "");
      gpd_json_str(f, api_name(c->api));
      fprintf(f, ", \"source\": ");
      gpd_json_str(f, c->source);
      fprintf(f, ", \"mode\": ");
      gpd_json_str(f, c->mode);
      fprintf(f, ", \"note\": ");
      gpd_json_str(f, c->note);
      fprintf(f, ", \"busy\": ");
      gpd_json_str(f, c->busy);
      fprintf(f, ", \"can_detach\": %s, \"windows\": %llu, \"window_ns\": %llu, \"elapsed_ns\": %llu, "
                 "\"launches\": %llu, \"launches_in\": %llu, \"switch_ns\": %llu, \"self_ns\": %llu, "
                 "\"busy_windows\": %llu, \"pc_rot_windows\": %u, \"pc_rot_window_ns\": %llu, \"pc_rot_skipped\": %u}",
              c->can_detach ? "true" : "false", (unsigned long long)c->windows, (unsigned long long)c->window_ns,
              (unsigned long long)c->elapsed_ns, (unsigned long long)c->launches,
              (unsigned long long)c->launches_in, (unsigned long long)c->switch_ns,
              (unsigned long long)c->self_ns, (unsigned long long)c->busy_windows, c->pc_rot_windows,
              (unsigned long long)c->pc_rot_window_ns, c->pc_rot_skipped);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "]");
  if (r->message[0]) {
    fprintf(f, ", \"message\": ");
    gpd_json_str(f, r->message);
  }
  fprintf(f, "}\n");
}

int gpd_cmd_policy(int argc, char **argv) {
  const char *policy_usage = gpd_cli_help(&policy_cmd);
  Gpuprof__PolicyRequest pr = GPUPROF__POLICY_REQUEST__INIT;
  Gpuprof__Msg req = GPUPROF__MSG__INIT, *rep = NULL;
  const char *sock = NULL;
  char *kv = NULL;
  int json = 0, r, o;
  long v;
  if (argc >= 2 && !strcmp(argv[1], "set")) {
    pr.set = 1;
    argc--, argv++;
  }
  optind = 1;
  while ((o = gpd_cli_opt_next(argc, argv, &policy_cmd, &r)) > 0) {
    switch (o) {
    case 'p':
      if ((v = gpd_cli_parse_uint(optarg)) <= 0) return gpd_cli_usage(policy_usage, "--pid needs a process id");
      pr.pid = (int32_t)v;
      break;
    case 'J': json = 1; break;
    case 'j': pr.job_id = optarg; break;
    case 'u':
      if ((v = gpd_cli_parse_uint(optarg)) < 0) return gpd_cli_usage(policy_usage, "--uid needs a number");
      pr.has_uid = 1;
      pr.uid = (uint32_t)v;
      break;
    case 'e': pr.exe = optarg; break;
    case 's': sock = optarg; break;
    }
  }
  if (o < 0)
    return r;
  if (pr.set) {
    if (optind != argc - 1 || !strchr(argv[optind], '='))
      return gpd_cli_usage(policy_usage, "policy set needs one KEY=VALUE");
    kv = strdup(argv[optind]);
    if (!kv) return GPD_EXIT_FAIL;
    char *eq = strchr(kv, '=');
    *eq = '\0';
    pr.key = kv;
    pr.value = eq + 1;
  } else if (optind != argc) {
    return gpd_cli_usage(policy_usage, "unexpected argument '%s'", argv[optind]);
  } else if ((pr.job_id && *pr.job_id) || pr.has_uid || (pr.exe && *pr.exe)) {
    return gpd_cli_usage(policy_usage, "--job, --uid and --exe select what `policy set` changes");
  }
  req.body_case = GPUPROF__MSG__BODY_POLICY_REQ;
  req.policy_req = &pr;
  r = gpd_live_call(gpd_live_socket(sock), &req, &rep);
  free(kv);
  if (r) return r;
  if (rep->body_case != GPUPROF__MSG__BODY_POLICY) {
    fprintf(stderr, "gpuprof: gpuprofd answered with an unexpected message (case %d)\n", (int)rep->body_case);
    gpuprof__msg__free_unpacked(rep, NULL);
    return GPD_EXIT_FAIL;
  }
  const Gpuprof__PolicyReply *p = rep->policy;
  if (json) {
    json_reply(stdout, p);
  } else if (pr.set) {
    printf("%s\n", p->message);
  } else if (p->n_procs) {
    for (size_t i = 0; i < p->n_procs; i++)
      print_proc(stdout, p->procs[i]);
  } else {
    if (p->node) print_pol(stdout, "node default: ", p->node);
    for (size_t i = 0; i < p->n_rules; i++)
      printf("%s\n", p->rules[i]);
    printf("precedence (lowest first): defaults < [collect] < exe < uid < job sections < the process's own\n"
           "GPUPROF_* variables (GPUPROF_CUDA_TRACE, GPUPROF_CPU_SAMPLING)\n");
  }
  gpuprof__msg__free_unpacked(rep, NULL);
  return GPD_EXIT_OK;
}
