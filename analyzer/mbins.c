/* mbins.c - the GPU binaries of a merged profile: each binary the merged
 * profiles refer to (gpubin rows, by content hash) is copied from
 * gpubins/<hash>.gpubin beside the input that referred to it into
 * gpubins/ beside the merged file, once per hash, so that `gpuprof report
 * --gpu-detail` of the merged file finds them as it finds a node store's
 * (docs/FORMATS.md, "Merged profiles"; docs/ANALYZER.md).
 *
 * The inputs are the user's files, but a merge may run as root (the Slurm
 * epilog): sources are opened without following links, only regular
 * files, bounded in size, and copied only when their content hashes to
 * their name; the destination folder must be the merging user's own and
 * not writable by others, and every file in it is created O_EXCL under a
 * private temporary name and renamed into place.  A binary that cannot be
 * copied is a note on stderr, never a failure of the merge.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer.h"
#include "gpuprof/hash.h"

#define BIN_MAX ((uint64_t)512 << 20) /* the daemon's bound on one binary */

typedef struct src_s {
  const char *hash; /* 32 characters, no NUL */
  const char *dir;
  uint32_t dirlen;
  uint32_t seq; /* order of reference: the first source is tried first */
} src_t;

static int cmp_src(const void *a, const void *b) {
  const src_t *x = a, *y = b;
  int c = memcmp(x->hash, y->hash, 32);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* write all of b[0..n) to a new file `name` in dirfd (temporary name,
 * fsync, rename).  0 or -errno. */
static int put_file(int dirfd, const char *name, const void *b, size_t n) {
  char tmp[128];
  int fd, err = 0;
  snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
  unlinkat(dirfd, tmp, 0); /* our own leftover, never followed */
  if ((fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) return -errno;
  for (size_t o = 0; o < n && !err;) {
    ssize_t w = write(fd, (const char *)b + o, n - o);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) err = w < 0 ? -errno : -EIO;
    else o += (size_t)w;
  }
  if (!err && fsync(fd) < 0) err = -errno;
  if (close(fd) < 0 && !err) err = -errno;
  if (!err && renameat(dirfd, tmp, dirfd, name) < 0) err = -errno;
  if (err) unlinkat(dirfd, tmp, 0);
  return err;
}

/* map srcdir/gpubins/<hash><ext>: a regular file of 1..BIN_MAX bytes */
static int map_src(const src_t *s, const char *ext, void **map, size_t *n, const char **why) {
  char path[8192];
  struct stat sb;
  int fd;
  snprintf(path, sizeof(path), "%.*s/gpubins/%.32s%s", (int)s->dirlen, s->dir, s->hash, ext);
  if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0) {
    *why = errno == ENOENT ? "not found" : strerror(errno);
    return -1;
  }
  if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 || (uint64_t)sb.st_size > BIN_MAX) {
    *why = "not a regular file of a GPU binary's size";
    close(fd);
    return -1;
  }
  *n = (size_t)sb.st_size;
  *map = mmap(NULL, *n, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (*map == MAP_FAILED) {
    *why = "cannot map it";
    return -1;
  }
  return 0;
}

/* one source of a binary: verified, then copied (its saved nvdisasm text
 * too, when there is one).  0, or -1 with *why. */
static int copy_one(int dirfd, const src_t *s, const char **why) {
  void *map;
  size_t n;
  char h[33], name[64];
  if (map_src(s, ".gpubin", &map, &n, why) < 0) return -1;
  gpd_hash128_hex(map, n, h);
  int ok = !memcmp(h, s->hash, 32);
  snprintf(name, sizeof(name), "%.32s.gpubin", s->hash);
  int err = ok ? put_file(dirfd, name, map, n) : 0;
  munmap(map, n);
  if (!ok) {
    *why = "its content does not match its hash";
    return -1;
  }
  if (err < 0) {
    *why = strerror(-err);
    return -1;
  }
  const char *ignored;
  if (map_src(s, ".nvdisasm", &map, &n, &ignored) == 0) {
    snprintf(name, sizeof(name), "%.32s.nvdisasm", s->hash);
    put_file(dirfd, name, map, n);
    munmap(map, n);
  }
  return 0;
}

/* gpubins/ beside out: made if missing (0700); used only when it is a
 * folder of this user that no one else can write to.  fd or -1. */
static int dest_dir(const char *out) {
  char dir[8192];
  struct stat sb;
  const char *slash = strrchr(out, '/');
  if (!slash)
    snprintf(dir, sizeof(dir), "gpubins");
  else
    snprintf(dir, sizeof(dir), "%.*s/gpubins", (int)(slash - out), out);
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    fprintf(stderr, "gpuprof: note: cannot make %s (%s): GPU binaries not copied\n", dir, strerror(errno));
    return -1;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &sb) < 0 || sb.st_uid != geteuid() || (sb.st_mode & 022)) {
    fprintf(stderr, "gpuprof: note: %s is not a folder of this user that only it can write to: GPU binaries not "
                    "copied\n",
            dir);
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

int gpd_mbins_copy(const gpd_mpart_t *parts, size_t nparts, const char *out, gpd_mout_info_t *info) {
  size_t n = 0, cap = 0;
  src_t *s = NULL;
  int dirfd = -1, err = 0;
  for (size_t k = 0; k < nparts; k++) {
    const gpd_buf_t *b = &parts[k].bins;
    for (size_t o = 0; o + 36 <= b->n;) {
      uint32_t len;
      memcpy(&len, b->p + o + 32, 4);
      if (len > b->n - o - 36) break; /* malformed: the rest is ignored */
      if (n == cap) {
        cap = cap ? cap * 2 : 64;
        src_t *ns = realloc(s, cap * sizeof(*ns));
        if (!ns) {
          err = -ENOMEM;
          goto out;
        }
        s = ns;
      }
      s[n] = (src_t){(const char *)b->p + o, (const char *)b->p + o + 36, len, (uint32_t)n};
      n++;
      o += 36 + len;
    }
  }
  if (!n) goto out;
  qsort(s, n, sizeof(*s), cmp_src);
  if ((dirfd = dest_dir(out)) < 0) {
    for (size_t i = 0; i < n; i++) info->bins += !i || memcmp(s[i].hash, s[i - 1].hash, 32);
    info->bins_missing = info->bins;
    goto out;
  }
  for (size_t i = 0, j; i < n; i = j) {
    char name[64];
    struct stat sb;
    const char *why = "not found";
    int done = 0;
    for (j = i + 1; j < n && !memcmp(s[j].hash, s[i].hash, 32);) j++;
    info->bins++;
    /* there already (an earlier merge into this folder): same name, same
     * content, written by this user */
    snprintf(name, sizeof(name), "%.32s.gpubin", s[i].hash);
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode)) continue;
    for (size_t k = i; k < j && !done; k++) done = copy_one(dirfd, &s[k], &why) == 0;
    if (done) {
      info->bins_copied++;
    } else {
      info->bins_missing++;
      fprintf(stderr,
              "gpuprof: note: GPU binary %.32s (in %.*s/gpubins) %s: not copied; `report --gpu-detail` of the "
              "merged file will not place its samples\n",
              s[i].hash, (int)s[i].dirlen, s[i].dir, why);
    }
  }
out:
  if (dirfd >= 0) close(dirfd);
  free(s);
  return err;
}
