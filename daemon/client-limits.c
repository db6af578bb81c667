/* client-limits.c - per-uid limits of the control socket (client.c's top
 * comment, docs/SERVICE.md "Connection limits"): which uid holds how many
 * connections, admission of a new one, and the log limiter that writes
 * one line per uid and kind of event per limit_log_interval_s and counts
 * the rest (gpd_client_sweep reports them).  Main thread only. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "gpuprof/frame.h"
#include "gpuprof/log.h"
#include "gpuprof.pb-c.h"

#include "client-internal.h"
#include "daemon.h"

/* What a summary line counts, per kind. */
static const char *const ev_what[GPD_CLIENT_EV__N] = {
    "connections refused by max_clients_per_uid",
    "connections refused by max_clients / clients_reserve",
    "connections closed by idle_timeout_ms",
    "oversized frames rejected",
    "undecodable frames rejected",
    "unexpected messages rejected",
    "truncated frames at EOF",
    "registrations refused",
    "GPU binaries refused",
    "connections closed on socket errors",
};

#define UID_BUCKETS 256u
static gpd_client_uid_t *uid_tab[UID_BUCKETS];

gpd_client_uid_t *gpd__client_limits_uid(uid_t uid) {
  gpd_client_uid_t **b = &uid_tab[(uint32_t)uid % UID_BUCKETS];
  for (gpd_client_uid_t *u = *b; u; u = u->next)
    if (u->uid == uid)
      return u;
  gpd_client_uid_t *u = calloc(1, sizeof *u);
  if (u == NULL)
    return NULL;
  u->uid = uid;
  u->next = *b;
  *b = u;
  return u;
}

uint64_t gpd__client_limits_interval_ms(const gpd_daemon_t *d) {
  return (uint64_t)d->cfg.limit_log_interval_s * 1000u;
}

/* Log one event of `kind` for u's uid, or count it if a line for that uid
 * and kind went out less than limit_log_interval_s ago. */
void gpd__client_limits_note(gpd_daemon_t *d, gpd_client_uid_t *u, gpd_client_ev_t kind, int level,
                             const char *fmt, ...) {
  uint64_t now = uv_now(d->loop);
  if (u->last_ms[kind] && now - u->last_ms[kind] < gpd__client_limits_interval_ms(d)) {
    u->held[kind]++;
    return;
  }
  u->last_ms[kind] = now ? now : 1;
  if (level > gpd_log_level) {
    u->held[kind] = 0;
    return;
  }
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (u->held[kind])
    gpd_log_write(level, "uid %u: %s (and %llu more %s in the last %u s)", (unsigned)u->uid, msg,
                  (unsigned long long)u->held[kind], ev_what[kind], d->cfg.limit_log_interval_s);
  else
    gpd_log_write(level, "uid %u: %s (further ones for this uid are counted, logged every %u s)",
                  (unsigned)u->uid, msg, d->cfg.limit_log_interval_s);
  u->held[kind] = 0;
}

void gpd_client_sweep(gpd_daemon_t *d) {
  uint64_t now = uv_now(d->loop), iv = gpd__client_limits_interval_ms(d);
  for (unsigned b = 0; b < UID_BUCKETS; b++) {
    for (gpd_client_uid_t **pp = &uid_tab[b]; *pp;) {
      gpd_client_uid_t *u = *pp;
      int busy = u->nconn > 0;
      for (int k = 0; k < GPD_CLIENT_EV__N; k++) {
        if (u->last_ms[k] && now - u->last_ms[k] < iv) {
          busy = 1;
          continue;
        }
        if (u->held[k]) {
          GPD_WARN("uid %u: %llu more %s in the last %u s", (unsigned)u->uid,
                   (unsigned long long)u->held[k], ev_what[k], d->cfg.limit_log_interval_s);
          u->held[k] = 0;
          u->last_ms[k] = now ? now : 1;
          busy = 1;
        }
      }
      if (busy) {
        pp = &u->next;
      } else {
        *pp = u->next;
        free(u);
      }
    }
  }
}

void gpd__client_limits_free_all(void) {
  for (unsigned b = 0; b < UID_BUCKETS; b++)
    while (uid_tab[b]) {
      gpd_client_uid_t *u = uid_tab[b];
      uid_tab[b] = u->next;
      free(u);
    }
}

/* Refuse a connection before any state is kept for it: one Error frame
 * (a fresh socket's buffer always takes it; MSG_DONTWAIT all the same),
 * then close. */
void gpd__client_limits_refuse(int fd, int code, const char *text) {
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__Error e = GPUPROF__ERROR__INIT;
  uint8_t buf[GPD_FRAME_HDR + 512];
  e.code = code;
  e.message = (char *)text;
  m.body_case = GPUPROF__MSG__BODY_ERROR;
  m.error = &e;
  size_t n = gpuprof__msg__get_packed_size(&m);
  if (n <= sizeof buf - GPD_FRAME_HDR) {
    gpd_frame_put_header(buf, (uint32_t)n);
    gpuprof__msg__pack(&m, buf + GPD_FRAME_HDR);
    ssize_t w = send(fd, buf, GPD_FRAME_HDR + n, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)w; /* best effort: the peer may be gone already */
  }
  close(fd);
}

/* Admission (client.c's top comment) of a peer of uid entry u when
 * nclients connections are open.  0, or -EUSERS with the reason
 * in why and the kind of refusal in *kind. */
int gpd__client_limits_admit(const gpd_daemon_t *d, const gpd_client_uid_t *u, unsigned nclients,
                             gpd_client_ev_t *kind, char *why, size_t whylen) {
  unsigned maxc = d->cfg.max_clients;
  unsigned reserve = d->cfg.clients_reserve < maxc / 2 ? d->cfg.clients_reserve : maxc / 2;
  if (nclients >= maxc) {
    *kind = GPD_CLIENT_EV_REFUSED_FULL;
    snprintf(why, whylen, "gpuprofd is full: %u connections (max_clients)", nclients);
    return -EUSERS;
  }
  if (u->uid == 0)
    return 0;
  if (u->nconn >= d->cfg.max_clients_per_uid) {
    *kind = GPD_CLIENT_EV_REFUSED_UID;
    snprintf(why, whylen, "uid %u already holds %u connections (max_clients_per_uid)",
             (unsigned)u->uid, u->nconn);
    return -EUSERS;
  }
  if (nclients >= maxc - reserve && u->nconn >= d->cfg.clients_reserve_per_uid) {
    *kind = GPD_CLIENT_EV_REFUSED_FULL;
    snprintf(why, whylen,
             "gpuprofd holds %u of %u connections; the last %u are kept for root and for uids "
             "holding fewer than %u (uid %u holds %u)",
             nclients, maxc, reserve, d->cfg.clients_reserve_per_uid, (unsigned)u->uid, u->nconn);
    return -EUSERS;
  }
  return 0;
}
