/* outfile.h - how every output file named by a user (-o) is written.
 *
 * The target may sit in a directory another user can write to (/tmp, a
 * shared project folder) where a link or a FIFO can be planted under its
 * name.  So nothing is ever opened by the target's name: the bytes go to a
 * new private temporary file in the target's directory (mkostemp: 0600,
 * O_EXCL), which is renamed over the target once complete.  A target that
 * is a symbolic link or exists as anything but a regular file is refused
 * with a message, before anything is written and again just before the
 * rename.  The file ends with mode 0666 less the umask, as a file made by
 * open(2) would.
 * Not thread-safe (reads the umask by setting it); one thread per file.
 */
#ifndef GPUPROF_OUTFILE_H
#define GPUPROF_OUTFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

typedef struct gpd_outfile_s {
  const char *path;   /* the target, as given (not copied) */
  char tmp[PATH_MAX]; /* the temporary file beside it; "" when none */
  int fd;             /* open for writing, -1 when none */
  FILE *f;            /* fdopen(fd) for stdio writers */
} gpd_outfile_t;

/** Refuse path (a symbolic link, or exists and is not a regular file) and
 *  create the temporary file beside it; o->fd and o->f are open for
 *  writing.  0, or -ELOOP / -EEXIST (refused) / -errno with a message in
 *  err naming path.  On failure nothing is left behind. */
int gpd_outfile_open(gpd_outfile_t *o, const char *path, char *err, size_t errn);
/** Flush o->f, fsync, set the mode, check the target again and rename the
 *  temporary file over it; o is closed either way.  0 or -errno with a
 *  message in err (then the temporary file is removed and the target is
 *  as it was). */
int gpd_outfile_commit(gpd_outfile_t *o, char *err, size_t errn);
/** Close o and remove its temporary file (a failed write).  Idempotent. */
void gpd_outfile_abort(gpd_outfile_t *o);

#endif
