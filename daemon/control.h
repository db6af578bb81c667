/* control.h - Control of running processes: a CLI's ControlRequest is
 * checked (access.c: a user controls only their own processes, an admin
 * any), sent as Control to each target process's shim connection, and
 * answered with one ControlReply once every shim has acknowledged (or
 * ended, or GPD_CONTROL_ACK_MS passed).  proto/gpuprof.proto, "Control";
 * docs/DAEMON.md, "Control of running processes".
 *
 * Main thread (libuv loop) only; the registry is read under
 * gpd_daemon_t.lock, taken here.
 */
#ifndef GPD_DAEMON_CONTROL_H
#define GPD_DAEMON_CONTROL_H

#include <stdint.h>

#include "access.h"

typedef struct gpd_daemon_s gpd_daemon_t;
struct gpd_client_s;
struct Gpuprof__ControlRequest;
struct Gpuprof__ControlAck;
struct gpd_proc_s;

/** How long the daemon waits for the shims' acks (ms). */
#define GPD_CONTROL_ACK_MS 5000u
/** Longest window a Control may ask for (ms): one hour. */
#define GPD_CONTROL_MAX_MS 3600000u

/** A ControlRequest from CLI connection `cli` (peer: its credentials).
 *  Returns 1 when the request is pending (the connection must read
 *  nothing more until gpd_client_control_done is called for it), 0 when
 *  it was answered at once (an Error: bad request, no such process,
 *  permission denied), or -ENOMEM (nothing sent). */
int gpd_control_request(gpd_daemon_t *d, struct gpd_client_s *cli, const gpd_peer_t *peer,
                        const struct Gpuprof__ControlRequest *r);

/** A ControlAck from the shim connection `shim` of process p: completes
 *  its target in the pending request, and records the kind's on/off
 *  state in p->control_on.  Acks naming no pending request (late, or
 *  invented by the process) change only p's own state. */
void gpd_control_ack(gpd_daemon_t *d, struct gpd_client_s *shim, struct gpd_proc_s *p,
                     const struct Gpuprof__ControlAck *a);

/** Connection c is closing: a request it made is dropped; a process it
 *  served counts as ended (-ESRCH) in the requests waiting for it. */
void gpd_control_client_gone(struct gpd_client_s *c);

/** A fresh daemon-wide Control id (policy.c's CONTROL_POLICY messages
 *  share the id space, so an ack never matches the wrong request). */
uint64_t gpd_control_next_id(void);

/** Shutdown: drop every pending request (their timers close). */
void gpd_control_close_all(void);

#endif
