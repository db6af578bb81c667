/* server.h - the listening socket (server.c) and client connections
 * (client.c; what request handlers may do with one: client.h).
 *
 * Lock: main thread only; functions that touch the registry take
 * gpd_daemon_t.lock themselves. */
#ifndef GPD_DAEMON_SERVER_H
#define GPD_DAEMON_SERVER_H

#include "access.h"
#include "client.h"
#include "registry.h"

typedef struct gpd_daemon_s gpd_daemon_t;

int gpd_server_start(gpd_daemon_t *d, int *activated);
void gpd_server_stop(gpd_daemon_t *d);
void gpd_client_close_all(gpd_daemon_t *d);
/** Take over an accepted connection fd (non-blocking). */
int gpd_client_accept(gpd_daemon_t *d, int fd);
/** Once a second (server.c's sweep timer): log the counts of refusals,
 *  timeouts and bad frames held back by the per-uid log limiter whose
 *  interval has ended, and free per-uid entries with nothing left. */
void gpd_client_sweep(gpd_daemon_t *d);
#endif
