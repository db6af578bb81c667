/* query.h - answers to CLI queries (ps, top, tree, ...).
 *
 * Lock: gpd_query_answer takes gpd_daemon_t.lock itself (main thread). */
#ifndef GPD_DAEMON_QUERY_H
#define GPD_DAEMON_QUERY_H

#include "access.h"
#include "profile.h"

typedef struct gpd_daemon_s gpd_daemon_t;

struct Gpuprof__Msg;
/** Answer a query message into *reply (allocated; free with
 *  gpd_query_free_reply).  Main thread, takes d->lock. */
int gpd_query_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const struct Gpuprof__Msg *req,
                     struct Gpuprof__Msg **reply);
void gpd_query_free_reply(struct Gpuprof__Msg *reply);
/** Label of node i of profile p (symbolizes FRAME nodes lazily). */
const char *gpd_query_label(const gpd_profile_t *p, uint32_t i, const char **module);

#endif
