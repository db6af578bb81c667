/* server.h - the listening socket (server.c) and client connections (client.c).
 *
 * Lock: main thread only; functions that touch the registry take
 * gpd_daemon_t.lock themselves. */
#ifndef GPD_DAEMON_SERVER_H
#define GPD_DAEMON_SERVER_H

#include "access.h"
#include "registry.h"

typedef struct gpd_daemon_s gpd_daemon_t;

int gpd_server_start(gpd_daemon_t *d, int *activated);
void gpd_server_stop(gpd_daemon_t *d);
void gpd_client_close_all(gpd_daemon_t *d);
/** Take over an accepted connection fd (non-blocking). */
int gpd_client_accept(gpd_daemon_t *d, int fd);
/** Peer credentials of a connection (SO_PEERCRED at accept). */
const gpd_peer_t *gpd_client_peer(const struct gpd_client_s *c);
/** Once a second (server.c's sweep timer): log the counts of refusals,
 *  timeouts and bad frames held back by the per-uid log limiter whose
 *  interval has ended, and free per-uid entries with nothing left. */
void gpd_client_sweep(gpd_daemon_t *d);
/** Queue one message on connection c (main thread).  0 or a negative
 *  code (too large, no memory); a closed connection drops it (0). */
struct Gpuprof__Msg;
int gpd_client_send_msg(struct gpd_client_s *c, const struct Gpuprof__Msg *m);
/** Queue an Error reply on c. */
void gpd_client_send_error(struct gpd_client_s *c, int code, const char *text);
/** The control request c made is answered (control.c): c reads again. */
void gpd_client_control_done(struct gpd_client_s *c);
/** Bind a registered process to its connection (EOF ends it). */
void gpd_client_set_proc(struct gpd_client_s *c, gpd_proc_t *p);

#endif
