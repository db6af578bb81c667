/* omp-vendor.c - a stand-in for a vendor back end under an OpenMP
 * offload runtime (tests/ompt, mode vendor): loaded as the program's own
 * OMPT tool (OMP_TOOL_LIBRARIES), so that the shim chains it and calls its
 * callbacks inside each operation's bracket, as the CUDA plugin's driver
 * calls would run.  For every kernel submit and every host-to-device
 * transfer it does what shim/cupti/cupti-api.c does for cuLaunchKernel /
 * cuMemcpyHtoDAsync: ask gpd_ompt_claim (through the test hook
 * gpd_shim__ompt_claim) for the context, push an INVOKE there and an
 * ACTIVITY of api CUDA (kernels named "vendor_kernel").  The profile must
 * then count each of those operations once: the vendor's record, below
 * OMPT's `<omp target>`, and no OMPT record of its own. */
#include <omp-tools.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpuprof/record.h"

static uint32_t (*claim)(unsigned op);
static uint64_t (*corr_next)(unsigned api);
static int (*push_invoke)(uint64_t, uint32_t, unsigned, unsigned, uint64_t, unsigned);
static int (*push_activity)(gpd_rec_activity_t *);
static uint32_t (*string_id)(const char *, unsigned);
static int claimed, missed;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What the vendor back end does for one driver call of kind op. */
static void vendor_op(unsigned op, unsigned subkind, uint64_t bytes) {
  uint32_t node = claim(op);
  if (!node) {
    missed++;
    return;
  }
  claimed++;
  uint64_t t0 = now_ns(), corr = corr_next(GPD_API_CUDA);
  push_invoke(corr, node, GPD_API_CUDA, op, t0, 0);
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.api = GPD_API_CUDA;
  a.op = (uint8_t)op;
  a.subkind = (uint8_t)subkind;
  a.corr = corr;
  a.start = t0;
  a.end = now_ns();
  a.bytes = bytes;
  a.stream = 7;
  a.name = op == GPD_OP_KERNEL ? string_id("vendor_kernel", GPD_STR_KERNEL) : 0;
  push_activity(&a);
}

static void on_data(ompt_scope_endpoint_t ep, ompt_data_t *ttask, ompt_data_t *tdata, ompt_id_t *hop,
                    ompt_target_data_op_t op, void *s, int sd, void *d, int dd, size_t bytes, const void *ra) {
  (void)ttask, (void)tdata, (void)hop, (void)s, (void)sd, (void)d, (void)dd, (void)ra;
  if (ep == ompt_scope_begin && op == ompt_target_data_transfer_to_device)
    vendor_op(GPD_OP_COPY, GPD_COPY_H2D, bytes);
}
static void on_submit(ompt_scope_endpoint_t ep, ompt_data_t *tdata, ompt_id_t *hop, unsigned int teams) {
  (void)tdata, (void)hop, (void)teams;
  if (ep == ompt_scope_begin)
    vendor_op(GPD_OP_KERNEL, 0, 0);
}
static int init(ompt_function_lookup_t lookup, int dev, ompt_data_t *data) {
  (void)dev, (void)data;
  claim = (uint32_t(*)(unsigned))dlsym(RTLD_DEFAULT, "gpd_shim__ompt_claim");
  corr_next = (uint64_t(*)(unsigned))dlsym(RTLD_DEFAULT, "gpd_shim_corr_next");
  push_invoke = (int (*)(uint64_t, uint32_t, unsigned, unsigned, uint64_t, unsigned))dlsym(RTLD_DEFAULT,
                                                                                            "gpd_shim_push_invoke");
  push_activity = (int (*)(gpd_rec_activity_t *))dlsym(RTLD_DEFAULT, "gpd_shim_push_activity");
  string_id = (uint32_t(*)(const char *, unsigned))dlsym(RTLD_DEFAULT, "gpd_shim_string");
  if (!claim || !corr_next || !push_invoke || !push_activity || !string_id) {
    printf("vendor: the shim's functions are missing\n");
    return 0;
  }
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_target_data_op_emi, (ompt_callback_t)on_data);
  set(ompt_callback_target_submit_emi, (ompt_callback_t)on_submit);
  return 1;
}
static void fini(ompt_data_t *data) {
  (void)data;
  printf("vendor: claimed=%d missed=%d\n", claimed, missed);
  fflush(stdout);
}
ompt_start_tool_result_t *ompt_start_tool(unsigned int v, const char *rt) {
  (void)v, (void)rt;
  static ompt_start_tool_result_t r = {init, fini, {0}};
  return &r;
}
