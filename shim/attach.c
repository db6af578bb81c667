/* attach.c - the region a daemon sent, attached once per process image
 * (gpd_shim__attach): the CCT table and the announcement words are made
 * on first use, the memfd's identity is kept (gpd_fdid_take) so that it
 * is only ever handed back while the number is still ours, and the kept
 * back-end STATUS records are pushed again.  Hand-back keeps the region;
 * only a fork child drops the parent's (gpd_shim__attach_forget).
 *
 * Callers: the connection thread (conn.c), the test hook, the fork
 * handlers (shim.c).  attach_lock guards region_fdid and the attach.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* Identity of the attached region's memfd (under attach_lock when set). */
static gpd_fdid_t region_fdid = {.fd = -1};

/* Attach happens once per process image (hand-back keeps the region). */
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;

int gpd_shim__attach(gpd_region_t *r) {
  int err = 0;
  pthread_mutex_lock(&attach_lock);
  if (atomic_load(&gpd_shim__g.active)) {
    err = -EALREADY;
    goto out;
  }
  if (!gpd_shim__g.intern_ok) {
    err = gpd_intern_init(&gpd_shim__g.intern, GPD_SHIM_INTERN_CAP);
    if (err)
      goto out;
    gpd_shim__g.intern_ok = 1;
  }
  if (!gpd_shim__g.node_ann) {
    void *m = mmap(NULL, (size_t)(GPD_SHIM_INTERN_CAP + 1) * sizeof(uint32_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      err = -errno;
      goto out;
    }
    gpd_shim__g.node_ann = m;
  }
  (void)fcntl(r->fd, F_SETFD, FD_CLOEXEC);
  if (gpd_fdid_take(&region_fdid, r->fd) < 0)
    region_fdid.fd = -1; /* cannot tell it from another file: never hand back */
  gpd_shim__g.region = *r;
  /* Correlation ids handed out before the region keep counting. */
  gpd_region_hdr_t *h = gpd_shim__g.region.hdr;
  uint64_t local = atomic_load(&gpd_shim__g.local_corr);
  uint64_t cur = atomic_load(&h->next_corr);
  if (cur < local)
    atomic_store(&h->next_corr, local);
  atomic_fetch_add_explicit(&gpd_shim__g.gen, 1, memory_order_release);
  atomic_store_explicit(&gpd_shim__g.active, 1, memory_order_release);
out:
  pthread_mutex_unlock(&attach_lock);
  if (!err)
    gpd_shim__status_resend();
  return err;
}

int gpd_shim__attach_fd(void) {
  int fd = -1;
  pthread_mutex_lock(&attach_lock);
  if (gpd_fdid_owned(&region_fdid)) {
    fd = region_fdid.fd;
  } else {
    region_fdid.fd = -1;
    gpd_shim__g.region.fd = -1; /* never closed by us now */
  }
  pthread_mutex_unlock(&attach_lock);
  return fd;
}

GPD_EXPORT int gpd_shim__attach_region(int fd) {
  gpd_region_t r;
  int err = gpd_region_map(&r, fd);
  if (err)
    return err;
  err = gpd_shim__attach(&r);
  if (err)
    gpd_region_close(&r);
  return err;
}

void gpd_shim__attach_atfork_prepare(void) { pthread_mutex_lock(&attach_lock); }
void gpd_shim__attach_atfork_parent(void) { pthread_mutex_unlock(&attach_lock); }
void gpd_shim__attach_atfork_child(void) { pthread_mutex_unlock(&attach_lock); }

void gpd_shim__attach_forget(void) {
  gpd_shim_state_t *g = &gpd_shim__g;
  int was_active = atomic_exchange(&g->active, 0);
  if (was_active) {
    /* Unmap; close our copy of the memfd only if the number is still it. */
    if (!gpd_fdid_owned(&region_fdid))
      g->region.fd = -1;
    gpd_region_close(&g->region);
  }
  region_fdid.fd = -1;
  memset(&g->region, 0, sizeof g->region);
  g->region.fd = -1;
}
