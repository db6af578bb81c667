/* status.c - the back ends' STATUS records (gpd_shim_backend_status):
 * pushed when a region is attached, and kept per API so that they are
 * pushed again after every attach and hand-back (a restarted daemon saw
 * none of them).  Any thread; status_lock guards the kept copies only
 * (never held while pushing).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Back-end status kept for re-sending after a (re)connection. */
typedef struct status_keep_s {
  int set;
  int enabled;
  int code;
  char why[200];
} status_keep_t;
static status_keep_t status_keep[GPD_API_MAX];
static pthread_mutex_t status_lock = PTHREAD_MUTEX_INITIALIZER;

static void status_push(unsigned api, int enabled, int code, const char *why) {
  gpd_rec_status_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_STATUS;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.api = (uint8_t)api;
  r.state = enabled ? 1 : 0;
  r.code = code;
  r.reason = (why && *why) ? gpd_shim_string(why, GPD_STR_REASON) : 0;
  (void)gpd_thread_push(&r, sizeof r);
}

GPD_EXPORT void gpd_shim_backend_status(unsigned api, int enabled, int code, const char *why) {
  if (api >= GPD_API_MAX)
    return;
  pthread_mutex_lock(&status_lock);
  status_keep_t *k = &status_keep[api];
  k->set = 1;
  k->enabled = enabled;
  k->code = code;
  snprintf(k->why, sizeof k->why, "%s", why ? why : "");
  pthread_mutex_unlock(&status_lock);
  if (gpd_shim_active())
    status_push(api, enabled, code, why);
}

void gpd_shim__status_resend(void) {
  status_keep_t copy[GPD_API_MAX];
  pthread_mutex_lock(&status_lock);
  memcpy(copy, status_keep, sizeof copy);
  pthread_mutex_unlock(&status_lock);
  for (unsigned api = 0; api < GPD_API_MAX; api++)
    if (copy[api].set)
      status_push(api, copy[api].enabled, copy[api].code, copy[api].why);
}

void gpd_shim__status_atfork_prepare(void) { pthread_mutex_lock(&status_lock); }
void gpd_shim__status_atfork_parent(void) { pthread_mutex_unlock(&status_lock); }
void gpd_shim__status_atfork_child(void) { pthread_mutex_unlock(&status_lock); }
