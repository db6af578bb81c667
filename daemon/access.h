/* access.h - who may see and control which process (peer credentials).
 *
 * Any process may register itself.  A CLI peer that is not an admin sees
 * and controls only processes of its own uid; uid 0 and members of the
 * configured admin group see all.  Pure policy: no logging, any thread.
 */
#ifndef GPD_DAEMON_ACCESS_H
#define GPD_DAEMON_ACCESS_H

#include <sys/types.h>

typedef struct gpd_peer_s {
  pid_t pid;
  uid_t uid;
  gid_t gid;
  int admin; /* 1: root or member of admin_group */
} gpd_peer_t;

/** SO_PEERCRED only (no NSS lookup, cheap enough to run on every accept
 *  before any limit is checked): pid, uid, gid; admin = (uid == 0).
 *  0 or -errno. */
int gpd_access_cred(int fd, gpd_peer_t *out);

/** Set p->admin from p->uid/p->gid against `admin_group` (see
 *  gpd_access_peer).  NSS lookups: may take as long as the name service.
 *  0 or -errno (then p->admin is 0 unless uid 0). */
int gpd_access_resolve_admin(gpd_peer_t *p, const char *admin_group);

/** SO_PEERCRED of a connected Unix socket, with admin resolved against
 *  `admin_group` (NULL/"" = none; membership by getgrouplist of the uid's
 *  passwd entry plus the peer's gid).  0 or -errno. */
int gpd_access_peer(int fd, const char *admin_group, gpd_peer_t *out);

/** 1 if `viewer` may see/control a process owned by `owner_uid`, else 0. */
int gpd_access_may_see(const gpd_peer_t *viewer, uid_t owner_uid);

#endif
