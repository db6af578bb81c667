/* access.c - peer credentials and the "who sees what" policy.
 *
 * Rules (docs/SERVICE.md, "Access control"):
 *   - any local process may connect and register itself (socket 0666);
 *   - a peer is an admin if its uid is 0, or its gid (SO_PEERCRED) is the
 *     admin group's gid, or the admin group is among the supplementary
 *     groups of the uid's passwd entry (getgrouplist);
 *   - an admin sees and controls every process; anyone else only processes
 *     of its own uid.
 * Reentrant: getpwuid_r / getgrnam_r only; no logging; any thread.
 */
#include "access.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Scratch size for the *_r lookups; grown on ERANGE up to 1 MiB (groups
 * with many members can have long gr_mem lists). */
#define ACCESS_BUF0 4096
#define ACCESS_BUF_MAX (1u << 20)

/* One reentrant NSS lookup (getgrnam_r, getpwuid_r, ...) with a buffer
 * grown on ERANGE up to ACCESS_BUF_MAX.  0 with the entry in *ent and the
 * buffer it points into in *bufp (caller frees), -ENOENT if there is no such
 * entry, or -errno. */
typedef int (*access_nss_fn)(const void *key, void *ent, char *buf, size_t len, void **res);

static int access_lookup(access_nss_fn fn, const void *key, void *ent, char **bufp) {
  size_t len = ACCESS_BUF0;
  char *buf = NULL;
  void *res = NULL;
  int err;
  for (;;) {
    char *nb = realloc(buf, len);
    if (!nb) {
      free(buf);
      return -ENOMEM;
    }
    buf = nb;
    err = fn(key, ent, buf, len, &res);
    if (err != ERANGE || len >= ACCESS_BUF_MAX)
      break;
    len *= 2;
  }
  if (err || !res) {
    free(buf);
    return err ? -err : -ENOENT;
  }
  *bufp = buf;
  return 0;
}

static int access_grnam(const void *k, void *e, char *b, size_t n, void **r) {
  return getgrnam_r(k, e, b, n, (struct group **)r);
}

static int access_pwuid(const void *k, void *e, char *b, size_t n, void **r) {
  return getpwuid_r(*(const uid_t *)k, e, b, n, (struct passwd **)r);
}

/* gid of group `name`: 0 and *gid set, -ENOENT if no such group, or -errno. */
static int access_group_gid(const char *name, gid_t *gid) {
  struct group gr;
  char *buf = NULL;
  int err = access_lookup(access_grnam, name, &gr, &buf);
  if (err == 0)
    *gid = gr.gr_gid;
  free(buf);
  return err;
}

/* 1 if `uid`'s passwd entry lists `gid` as primary or supplementary group,
 * 0 if not (or no passwd entry), -errno on failure. */
static int access_uid_in_group(uid_t uid, gid_t gid) {
  char *buf = NULL;
  gid_t *groups = NULL;
  struct passwd pw;
  int ng = 64;
  int err = access_lookup(access_pwuid, &uid, &pw, &buf);
  if (err == -ENOENT)
    return 0; /* no passwd entry: not a member */
  if (err)
    return err;
  if (pw.pw_gid == gid) {
    err = 1;
    goto out;
  }
  for (;;) {
    gid_t *ng_buf = realloc(groups, (size_t)ng * sizeof *groups);
    int want = ng;
    if (!ng_buf) {
      err = -ENOMEM;
      goto out;
    }
    groups = ng_buf;
    if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &want) >= 0) {
      ng = want;
      break;
    }
    if (want <= ng || want > 65536) { /* no growth asked: give up safely */
      err = -E2BIG;
      goto out;
    }
    ng = want;
  }
  for (int i = 0; i < ng; i++)
    if (groups[i] == gid) {
      err = 1;
      goto out;
    }
out:
  free(groups);
  free(buf);
  return err;
}

int gpd_access_cred(int fd, gpd_peer_t *out) {
  struct ucred cr;
  socklen_t len = sizeof cr;

  if (fd < 0 || !out) return -EINVAL;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) return -errno;
  if (len != sizeof cr) return -EPROTO;
  out->pid = cr.pid;
  out->uid = cr.uid;
  out->gid = cr.gid;
  out->admin = cr.uid == 0;
  return 0;
}

int gpd_access_resolve_admin(gpd_peer_t *p, const char *admin_group) {
  gid_t agid;
  int err;

  if (!p) return -EINVAL;
  p->admin = p->uid == 0;
  if (p->admin || !admin_group || !admin_group[0]) return 0;
  err = access_group_gid(admin_group, &agid);
  if (err == -ENOENT) return 0; /* configured group does not exist: nobody */
  if (err) return err;
  if (p->gid == agid) {
    p->admin = 1;
    return 0;
  }
  err = access_uid_in_group(p->uid, agid);
  if (err < 0) return err;
  p->admin = err;
  return 0;
}

int gpd_access_peer(int fd, const char *admin_group, gpd_peer_t *out) {
  int err = gpd_access_cred(fd, out);
  if (err) return err;
  return gpd_access_resolve_admin(out, admin_group);
}

int gpd_access_may_see(const gpd_peer_t *viewer, uid_t owner_uid) {
  if (!viewer) return 0;
  if (viewer->admin) return 1;
  return viewer->uid == owner_uid;
}
