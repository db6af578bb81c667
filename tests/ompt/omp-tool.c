/* omp-tool.c - a minimal OMPT tool of the program's own (tests/ompt
 * chain): counts the target constructs, kernel submits and data
 * operations it is called for (begin endpoints) and prints them at
 * finalize, so that the test can check it still sees every one when the
 * shim's tool is also there.  Loaded by the runtime from
 * OMP_TOOL_LIBRARIES. */
#include <omp-tools.h>
#include <stdio.h>

static int targets, submits, dataops, inits;

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t ep, int dev, ompt_data_t *task,
                      ompt_data_t *ttask, ompt_data_t *tdata, const void *ra) {
  (void)kind, (void)dev, (void)task, (void)ttask, (void)ra;
  if (ep == ompt_scope_begin) {
    targets++;
    tdata->value = 42; /* its own slot: must come back at the end */
  } else if (tdata->value != 42) {
    printf("tool: target_data lost\n");
  }
}
static void on_data(ompt_scope_endpoint_t ep, ompt_data_t *ttask, ompt_data_t *tdata, ompt_id_t *hop,
                    ompt_target_data_op_t op, void *s, int sd, void *d, int dd, size_t bytes, const void *ra) {
  (void)ttask, (void)tdata, (void)hop, (void)op, (void)s, (void)sd, (void)d, (void)dd, (void)bytes, (void)ra;
  if (ep == ompt_scope_begin)
    dataops++;
}
static void on_submit(ompt_scope_endpoint_t ep, ompt_data_t *tdata, ompt_id_t *hop, unsigned int teams) {
  (void)tdata, (void)hop, (void)teams;
  if (ep == ompt_scope_begin)
    submits++;
}
static void on_dev_init(int n, const char *type, ompt_device_t *dev, ompt_function_lookup_t lookup,
                        const char *doc) {
  (void)n, (void)type, (void)dev, (void)lookup, (void)doc;
  inits++;
}
static int init(ompt_function_lookup_t lookup, int dev, ompt_data_t *data) {
  (void)dev, (void)data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_device_initialize, (ompt_callback_t)on_dev_init);
  set(ompt_callback_target_emi, (ompt_callback_t)on_target);
  set(ompt_callback_target_data_op_emi, (ompt_callback_t)on_data);
  set(ompt_callback_target_submit_emi, (ompt_callback_t)on_submit);
  return 1;
}
static void fini(ompt_data_t *data) {
  (void)data;
  printf("tool: targets=%d submits=%d dataops=%d devices=%s\n", targets, submits, dataops, inits ? "yes" : "no");
  fflush(stdout);
}
ompt_start_tool_result_t *ompt_start_tool(unsigned int v, const char *rt) {
  (void)v, (void)rt;
  static ompt_start_tool_result_t r = {init, fini, {0}};
  return &r;
}
