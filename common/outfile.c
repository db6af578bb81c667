/* outfile.c - output files written beside their target and renamed
 * (gpuprof/outfile.h). */
#include "gpuprof/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 when path may be replaced (absent or a regular file), else -ELOOP /
 * -EEXIST / -errno with the message in err.  lstat only: the target is
 * never opened. */
static int outfile_check(const char *path, char *err, size_t errn) {
  struct stat sb;
  if (lstat(path, &sb) < 0) {
    if (errno == ENOENT) return 0;
    int e = -errno;
    snprintf(err, errn, "cannot write %s: %s", path, strerror(errno));
    return e;
  }
  if (S_ISLNK(sb.st_mode)) {
    snprintf(err, errn, "refusing to write %s: it is a symbolic link (remove it or name the file it points to)",
             path);
    return -ELOOP;
  }
  if (!S_ISREG(sb.st_mode)) {
    snprintf(err, errn, "refusing to write %s: it exists and is not a regular file (%s)", path,
             S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO"
             : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : S_ISSOCK(sb.st_mode) ? "a socket" : "special");
    return -EEXIST;
  }
  return 0;
}

int gpd_outfile_open(gpd_outfile_t *o, const char *path, char *err, size_t errn) {
  int e;
  memset(o, 0, sizeof *o);
  o->fd = -1;
  o->path = path;
  if (!path || !*path) {
    snprintf(err, errn, "no output file named");
    return -EINVAL;
  }
  if ((e = outfile_check(path, err, errn)) < 0) return e;
  const char *slash = strrchr(path, '/');
  int n = slash ? snprintf(o->tmp, sizeof o->tmp, "%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1)
                : snprintf(o->tmp, sizeof o->tmp, ".%s.XXXXXX", path);
  if (n < 0 || (size_t)n >= sizeof o->tmp) {
    o->tmp[0] = 0;
    snprintf(err, errn, "cannot write %s: %s", path, strerror(ENAMETOOLONG));
    return -ENAMETOOLONG;
  }
  if ((o->fd = mkostemp(o->tmp, O_CLOEXEC)) < 0) {
    e = -errno;
    snprintf(err, errn, "cannot write %s: cannot create a file beside it: %s", path, strerror(errno));
    o->tmp[0] = 0;
    return e;
  }
  if (!(o->f = fdopen(o->fd, "w"))) {
    e = -errno;
    snprintf(err, errn, "cannot write %s: %s", path, strerror(errno));
    gpd_outfile_abort(o);
    return e;
  }
  return 0;
}

int gpd_outfile_commit(gpd_outfile_t *o, char *err, size_t errn) {
  int e = 0;
  mode_t um = umask(0);
  umask(um);
  if (fflush(o->f) != 0 || ferror(o->f) || fsync(o->fd) < 0 || fchmod(o->fd, 0666 & ~um) < 0) {
    e = errno ? -errno : -EIO;
    snprintf(err, errn, "cannot write %s: %s", o->path, strerror(-e));
  } else if ((e = outfile_check(o->path, err, errn)) < 0) {
    /* planted while the file was written: refused as at the start */
  } else if (fclose(o->f) != 0) {
    o->f = NULL;
    o->fd = -1;
    e = -errno;
    snprintf(err, errn, "cannot write %s: %s", o->path, strerror(errno));
  } else {
    o->f = NULL;
    o->fd = -1;
    if (rename(o->tmp, o->path) < 0) {
      e = -errno;
      snprintf(err, errn, "cannot write %s: %s", o->path, strerror(errno));
    } else {
      o->tmp[0] = 0;
    }
  }
  gpd_outfile_abort(o);
  return e;
}

void gpd_outfile_abort(gpd_outfile_t *o) {
  if (o->f) fclose(o->f);
  else if (o->fd >= 0) close(o->fd);
  o->f = NULL;
  o->fd = -1;
  if (o->tmp[0]) unlink(o->tmp);
  o->tmp[0] = 0;
}
