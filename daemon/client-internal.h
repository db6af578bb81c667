/* client-internal.h - what client.c (a connection: read, frame, reply,
 * close) and client-limits.c (per-uid admission and log limits) share.
 * Main thread (libuv loop) only.  Not for other files. */
#ifndef GPD_DAEMON_CLIENT_INTERNAL_H
#define GPD_DAEMON_CLIENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct gpd_daemon_s gpd_daemon_t;

/* Kinds of events that are logged once per uid per interval. */
typedef enum {
  GPD_CLIENT_EV_REFUSED_UID,
  GPD_CLIENT_EV_REFUSED_FULL,
  GPD_CLIENT_EV_TIMEOUT,
  GPD_CLIENT_EV_TOOBIG,
  GPD_CLIENT_EV_BADFRAME,
  GPD_CLIENT_EV_PROTO,
  GPD_CLIENT_EV_TRUNCATED,
  GPD_CLIENT_EV_REGISTER,
  GPD_CLIENT_EV_GPUBIN,
  GPD_CLIENT_EV_IO,
  GPD_CLIENT_EV__N
} gpd_client_ev_t;

/* Per-uid state: open connections and the log limiter.  Entries live in a
 * small hash table; one is freed by gpd_client_sweep once it holds no
 * connection and has nothing left to report. */
typedef struct gpd_client_uid_s {
  struct gpd_client_uid_s *next;
  uid_t uid;
  unsigned nconn;
  uint64_t last_ms[GPD_CLIENT_EV__N]; /* loop time of the last line; 0 = none yet */
  uint64_t held[GPD_CLIENT_EV__N];    /* events since that line, not logged */
} gpd_client_uid_t;

/** uid's entry (created with nothing held), or NULL out of memory. */
gpd_client_uid_t *gpd__client_limits_uid(uid_t uid);
/** limit_log_interval_s in ms. */
uint64_t gpd__client_limits_interval_ms(const gpd_daemon_t *d);
/** Log one event of `kind` for u's uid at level, or count it if a line for
 *  that uid and kind went out less than limit_log_interval_s ago. */
void gpd__client_limits_note(gpd_daemon_t *d, gpd_client_uid_t *u, gpd_client_ev_t kind, int level,
                             const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/** Shutdown: free every uid entry. */
void gpd__client_limits_free_all(void);
/** Refuse connection fd before any state is kept for it: one Error frame
 *  (code, text), then close(fd). */
void gpd__client_limits_refuse(int fd, int code, const char *text);
/** Admission of a peer of uid entry u while nclients connections are open:
 *  0, or -EUSERS with the reason in why and the kind of refusal in *kind. */
int gpd__client_limits_admit(const gpd_daemon_t *d, const gpd_client_uid_t *u, unsigned nclients,
                             gpd_client_ev_t *kind, char *why, size_t whylen);

#endif
