/* query.h - answers to CLI queries (ps, top, tree, ...).
 *
 * Lock: gpd_query_answer takes gpd_daemon_t.lock itself (main thread) and
 * symbolizes FRAME nodes after releasing it. */
#ifndef GPD_DAEMON_QUERY_H
#define GPD_DAEMON_QUERY_H

#include "access.h"
#include "profile.h"

typedef struct gpd_daemon_s gpd_daemon_t;

struct Gpuprof__Msg;
/** Answer a query message into *reply (allocated; free with
 *  gpd_query_free_reply).  Main thread; takes d->lock to copy what it
 *  needs, symbolizes without it.  0 or -ENOMEM. */
int gpd_query_answer(gpd_daemon_t *d, const gpd_peer_t *peer, const struct Gpuprof__Msg *req,
                     struct Gpuprof__Msg **reply);
void gpd_query_free_reply(struct Gpuprof__Msg *reply);
/** Label of node i of profile p: a FRAME node's physical function (the
 *  outermost frame of its inline chain), NULL when it has none (print the
 *  offset); *module = its module path.  Symbolizes: may read large files,
 *  so never call it with d->lock held (copy the node first). */
const char *gpd_query_label(const gpd_profile_t *p, uint32_t i, const char **module);

#endif
