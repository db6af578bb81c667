/* fdid.c - the identity (st_dev, st_ino) of a descriptor the shim opened
 * (the daemon socket: conn.c; the region memfd: attach.c).  The
 * application may close such a number and reuse it for a file of its own,
 * so every use first checks that the number still names the file that
 * was opened (docs/SHIM.md, "Fork and exec").  Any thread; no lock.
 */
#include <errno.h>
#include <sys/stat.h>

#include "internal.h"

int gpd_fdid_take(gpd_fdid_t *id, int fd) {
  struct stat st;
  id->fd = -1;
  id->dev = id->ino = 0;
  if (fd < 0)
    return -EBADF;
  if (fstat(fd, &st) < 0)
    return -errno;
  id->fd = fd;
  id->dev = (uint64_t)st.st_dev;
  id->ino = (uint64_t)st.st_ino;
  return 0;
}

int gpd_fdid_owned(const gpd_fdid_t *id) {
  struct stat st;
  if (id->fd < 0 || fstat(id->fd, &st) < 0)
    return 0;
  return (uint64_t)st.st_dev == id->dev && (uint64_t)st.st_ino == id->ino;
}
