/* push.c - the push entry points of shim.h: INVOKE and ACTIVITY records
 * (the host-op pair, the waiting push of record mode) and the record
 * types newer than the first daemons (TRACEWIN, GRAPHNODE), built here
 * and pushed to the calling thread's ring (thread.c).
 *
 * Any thread; no lock.  Every entry point answers -ENOTCONN while the
 * shim is not active (shim.c) and pushes nothing.
 */
#include <errno.h>
#include <string.h>

#include "gpuprof/clock.h"
#include "internal.h"

GPD_EXPORT int gpd_shim_push_invoke(uint64_t corr, uint32_t node, unsigned api, unsigned op,
                                    uint64_t ts, unsigned flags) {
  if (!gpd_shim_active())
    return -ENOTCONN;
  if (node == 0 || corr == 0)
    return -EINVAL; /* the daemon rejects node 0: never push it */
  gpd_rec_invoke_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_INVOKE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.h.flags = (uint8_t)flags;
  r.api = (uint8_t)api;
  r.op = (uint8_t)op;
  r.node = node;
  r.corr = corr;
  r.ts = ts;
  return gpd_thread_push(&r, sizeof r);
}

static int activity_prepare(gpd_rec_activity_t *a) {
  if (!gpd_shim_active())
    return -ENOTCONN;
  if (!a || a->corr == 0)
    return -EINVAL;
  uint8_t flags = a->h.flags; /* back ends may set GPD_ACTIVITY_HOST_TIME */
  memset(&a->h, 0, sizeof a->h);
  a->h.type = GPD_REC_ACTIVITY;
  a->h.version = GPD_REC_VERSION;
  a->h.nslots = sizeof *a / GPD_SLOT_SIZE;
  a->h.flags = flags;
  return 0;
}

GPD_EXPORT int gpd_shim_push_activity(gpd_rec_activity_t *a) {
  int err = activity_prepare(a);
  return err ? err : gpd_thread_push(a, sizeof *a);
}

int gpd_shim_push_host_op(uint32_t node, gpd_rec_activity_t *a) {
  a->end = gpd_clock_ns();
  (void)gpd_shim_push_invoke(a->corr, node, a->api, a->op, a->start, 0);
  return gpd_shim_push_activity(a);
}

GPD_EXPORT int gpd_shim_push_activity_wait(gpd_rec_activity_t *a, uint64_t max_wait_ns) {
  return gpd_shim_push_activity_wait_stop(a, max_wait_ns, NULL);
}

GPD_EXPORT int gpd_shim_push_activity_wait_stop(gpd_rec_activity_t *a, uint64_t max_wait_ns,
                                                const atomic_int *stop) {
  int err = activity_prepare(a);
  return err ? err : gpd_thread_push_wait_stop(a, sizeof *a, max_wait_ns, stop);
}

/* Zero fixed record r (len bytes) of a type newer than the first daemons
 * and fill its header: 0, -ENOTCONN (no daemon) or -ENOTSUP (the region's
 * daemon does not accept the type). */
static int rec_begin(void *r, size_t len, unsigned type) {
  if (!gpd_shim_active())
    return -ENOTCONN;
  if (gpd_shim__g.region.hdr->rec_types <= type)
    return -ENOTSUP;
  memset(r, 0, len);
  gpd_rec_hdr_t *h = r;
  h->type = (uint8_t)type;
  h->version = GPD_REC_VERSION;
  h->nslots = (uint8_t)(len / GPD_SLOT_SIZE);
  return 0;
}

GPD_EXPORT int gpd_shim_push_tracewin(unsigned api, int duty, int final, uint64_t t0, uint64_t start,
                                      uint64_t end, uint64_t windows, uint64_t window_ns, uint64_t launches,
                                      uint64_t launches_in) {
  gpd_rec_tracewin_t r;
  int err = rec_begin(&r, sizeof r, GPD_REC_TRACEWIN);
  if (err)
    return err;
  r.h.flags = final ? GPD_TRACEWIN_F_FINAL : 0;
  r.api = (uint8_t)api;
  r.duty = duty ? 1 : 0;
  r.windows = windows > UINT32_MAX ? UINT32_MAX : (uint32_t)windows;
  r.t0 = t0;
  r.start = final ? end : start;
  r.end = end;
  r.window_ns = window_ns;
  r.launches = launches;
  r.launches_in = launches_in > launches ? launches : launches_in;
  return gpd_thread_push(&r, sizeof r);
}

GPD_EXPORT int gpd_shim_push_graphnode(uint64_t id, uint32_t node, uint64_t orig) {
  gpd_rec_graphnode_t r;
  int err = rec_begin(&r, sizeof r, GPD_REC_GRAPHNODE);
  if (err)
    return err;
  r.h.flags = orig ? GPD_GRAPHNODE_F_CLONE : 0;
  r.id = id;
  r.node = orig ? 0 : node;
  r.orig = orig;
  if (gpd_rec_validate(&r, sizeof r) != 0)
    return -EINVAL;
  return gpd_thread_push(&r, sizeof r);
}
