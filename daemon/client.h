/* client.h - what the request handlers (control.c, policy.c, registry.c)
 * may do with the connection a request came on.  client.c calls those
 * handlers; they reach the connection only through this interface: every
 * connection starts with a gpd_client_base_t whose ops client.c fills, so
 * no handler calls into client.c (no call cycle between the files).
 *
 * Main thread (libuv loop) only. */
#ifndef GPD_DAEMON_CLIENT_H
#define GPD_DAEMON_CLIENT_H

#include "access.h"

struct Gpuprof__Msg;
struct gpd_proc_s;
struct gpd_client_s;

/** A connection's operations (client.c's table). */
typedef struct gpd_client_ops_s {
  int (*send_msg)(struct gpd_client_s *c, const struct Gpuprof__Msg *m);
  void (*send_error)(struct gpd_client_s *c, int code, const char *text);
  void (*control_done)(struct gpd_client_s *c);
} gpd_client_ops_t;

/** The first member of every connection (struct gpd_client_s, client.c). */
typedef struct gpd_client_base_s {
  const gpd_client_ops_t *ops;
  gpd_peer_t peer;         /* credentials (SO_PEERCRED at accept) */
  struct gpd_proc_s *proc; /* the registered process whose EOF this connection ends, or NULL */
} gpd_client_base_t;

static inline gpd_client_base_t *gpd__client_base(const struct gpd_client_s *c) {
  return (gpd_client_base_t *)c;
}

/** Queue one message on connection c.  0 or a negative code (too large,
 *  no memory); a closed connection drops it (0). */
static inline int gpd_client_send_msg(struct gpd_client_s *c, const struct Gpuprof__Msg *m) {
  return gpd__client_base(c)->ops->send_msg(c, m);
}
/** Queue an Error reply {code, text} on c (a closed one drops it). */
static inline void gpd_client_send_error(struct gpd_client_s *c, int code, const char *text) {
  gpd__client_base(c)->ops->send_error(c, code, text);
}
/** The control request c made is answered (control.c): c reads again. */
static inline void gpd_client_control_done(struct gpd_client_s *c) {
  gpd__client_base(c)->ops->control_done(c);
}
/** Peer credentials of connection c. */
static inline const gpd_peer_t *gpd_client_peer(const struct gpd_client_s *c) {
  return &gpd__client_base(c)->peer;
}
/** Bind a registered process to its connection (EOF ends it); NULL unbinds. */
static inline void gpd_client_set_proc(struct gpd_client_s *c, struct gpd_proc_s *p) {
  gpd__client_base(c)->proc = p;
}

#endif
