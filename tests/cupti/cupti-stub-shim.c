/* cupti-stub-shim.c - a stand-in for the shim core (shim/shim.h) that
 * counts what the CUDA back end hands it.  Linked with the shim/cupti sources into
 * libgpd-cupti-selftest.so: LD_PRELOAD it (or name it in
 * CUDA_INJECTION64_PATH) to check CUPTI init, callbacks and activity on a
 * real GPU without the daemon.  At exit it prints one line per counter
 * group to stderr ("gpuprof-stub: ...") and, with GPUPROF_STUB_DUMP=1, one
 * line per INVOKE / ACTIVITY.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "backends.h"
#include "gpuprof/log.h"
#include "shim.h"

int gpd_log_level = GPD_LOG_WARN;
void gpd_log_write(int level, const char *fmt, ...) {
  va_list ap;
  (void)level;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static atomic_ulong n_graphnode, n_capture, n_invoke, n_act, n_str, n_gpubin, gpubin_bytes, n_status;
static atomic_ulong n_act_matched, n_act_unmatched, n_occ, n_act_graph;
static atomic_int last_status = -1;
static int dump;
#define NCORR (1u << 20)
static _Atomic unsigned char seen_corr[NCORR];

int gpd_shim_active(void) { return 1; }
uint32_t gpd_shim_capture(void) { atomic_fetch_add(&n_capture, 1); return 1; }
void gpd_shim_vendor_module(const char *p) { (void)p; }
uint64_t gpd_shim_corr_next(unsigned api) { static atomic_ulong c; return GPD_CORR(api, ++c); }
int gpd_shim_push_invoke(uint64_t corr, uint32_t node, unsigned api, unsigned op, uint64_t ts,
                         unsigned flags) {
  atomic_fetch_add(&n_invoke, 1);
  seen_corr[(corr & 0xffffffffffffffull) % NCORR] = 1;
  if (dump)
    fprintf(stderr, "INVOKE corr=%lu api=%u op=%u node=%u ts=%lu flags=%u tid=%ld\n",
            (unsigned long)(corr & 0xffffffffffffffull), api, op, node, (unsigned long)ts, flags,
            (long)syscall(SYS_gettid));
  return 0;
}
int gpd_shim_push_activity(gpd_rec_activity_t *a) {
  atomic_fetch_add(&n_act, 1);
  if (seen_corr[(a->corr & 0xffffffffffffffull) % NCORR])
    atomic_fetch_add(&n_act_matched, 1);
  else
    atomic_fetch_add(&n_act_unmatched, 1);
  if (a->occ_permille) atomic_fetch_add(&n_occ, 1);
  if (a->graph_node) atomic_fetch_add(&n_act_graph, 1);
  if (dump)
    fprintf(stderr,
            "ACT corr=%lu op=%u sub=%u dev=%u stream=%u start=%lu dur=%lu bytes=%lu name=%u "
            "blk=%u thr=%u regs=%u ssm=%u dsm=%u lmem=%u occ=%u graph=%llu\n",
            (unsigned long)(a->corr & 0xffffffffffffffull), a->op, a->subkind, a->device,
            a->stream, (unsigned long)a->start, (unsigned long)(a->end - a->start),
            (unsigned long)a->bytes, a->name, a->blocks, a->block_threads, a->regs_per_thread,
            a->static_smem, a->dynamic_smem, a->local_mem, a->occ_permille, (unsigned long long)a->graph_node);
  return 0;
}
int gpd_shim_push_activity_wait(gpd_rec_activity_t *a, uint64_t max_wait_ns) {
  (void)max_wait_ns;
  return gpd_shim_push_activity(a);
}
int gpd_shim_push_tracewin(unsigned api, int duty, int final, uint64_t t0, uint64_t start,
                           uint64_t end, uint64_t windows, uint64_t window_ns, uint64_t launches,
                           uint64_t launches_in) {
  (void)api, (void)duty, (void)final, (void)t0, (void)start, (void)end, (void)windows, (void)window_ns;
  (void)launches, (void)launches_in;
  return 0;
}
int gpd_shim_push_activity_wait_stop(gpd_rec_activity_t *a, uint64_t max_wait_ns, const atomic_int *stop) {
  (void)max_wait_ns; (void)stop;
  return gpd_shim_push_activity(a);
}
int gpd_shim_push_graphnode(uint64_t id, uint32_t node, uint64_t orig) {
  atomic_fetch_add(&n_graphnode, 1);
  if (dump)
    fprintf(stderr, "GRAPHNODE id=%llu node=%u orig=%llu\n", (unsigned long long)id, node, (unsigned long long)orig);
  return 0;
}
uint32_t gpd_shim_string(const char *text, unsigned kind) {
  atomic_fetch_add(&n_str, 1);
  if (dump) fprintf(stderr, "STRING kind=%u %s\n", kind, text);
  return 1;
}
void gpd_shim_backend_status(unsigned api, int enabled, int code, const char *why) {
  atomic_fetch_add(&n_status, 1);
  last_status = enabled;
  fprintf(stderr, "gpuprof-stub: STATUS api=%u enabled=%d code=%d why=%s\n", api, enabled, code,
          why ? why : "");
}
/* no daemon, so no collection policy: the back end runs GPUPROF_CUDA_TRACE
 * or full tracing, as under the real shim without a daemon */
struct gpd_shim_policy_s;
int gpd_shim_policy(struct gpd_shim_policy_s *out) {
  (void)out;
  return 0;
}
int gpd_shim_gpubin(const void *data, size_t len, const char *kind) {
  (void)data; (void)kind;
  atomic_fetch_add(&n_gpubin, 1);
  atomic_fetch_add(&gpubin_bytes, len);
  return 0;
}

/* PC sampling (cupti-pcsampling.c) pushes its records straight to the
 * thread's ring: counted here. */
static atomic_ulong n_rec;
int gpd_thread_push(const void *rec, size_t len) {
  (void)rec; (void)len;
  atomic_fetch_add(&n_rec, 1);
  return 0;
}
int gpd_thread_push_wait(const void *rec, size_t len, uint64_t max_wait_ns) {
  (void)max_wait_ns;
  return gpd_thread_push(rec, len);
}
int gpd_thread_push_wait_stop(const void *rec, size_t len, uint64_t max_wait_ns, const atomic_int *stop) {
  (void)max_wait_ns; (void)stop;
  return gpd_thread_push(rec, len);
}
void gpd_hash128_hex(const void *data, size_t n, char out[33]) {
  (void)data; (void)n;
  memset(out, '0', 32);
  out[32] = 0;
}

__attribute__((constructor)) static void stub_init(void) {
  dump = getenv("GPUPROF_STUB_DUMP") != NULL;
  if (!getenv("GPUPROF_CUPTI_SELFTEST")) setenv("GPUPROF_CUPTI_SELFTEST", "1", 0);
  gpd_cupti_init();
}
__attribute__((destructor)) static void stub_fini(void) {
  gpd_cupti_fini();
  fprintf(stderr,
          "gpuprof-stub: status=%d captures=%lu invokes=%lu activities=%lu matched=%lu "
          "unmatched=%lu with_occupancy=%lu strings=%lu gpubins=%lu gpubin_bytes=%lu "
          "graph_activities=%lu graphnodes=%lu\n",
          last_status, n_capture, n_invoke, n_act, n_act_matched, n_act_unmatched, n_occ, n_str,
          n_gpubin, gpubin_bytes, n_act_graph, n_graphnode);
}
