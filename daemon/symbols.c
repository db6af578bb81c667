/* symbols.c - call-site symbolization with elfutils libdwfl/libdw, safe
 * against hostile module paths.
 *
 * (module path, offset into the module) -> source frames, outermost first:
 * the physical function that contains the call site, then the functions
 * inlined into it down to the innermost one.  dwarf_getscopes gives the
 * innermost scope DIE of the address; dwarf_getscopes_die walks its
 * concrete parents (lexical blocks, DW_TAG_inlined_subroutine instances,
 * the DW_TAG_subprogram), which is the inline chain as `addr2line -i`
 * prints it.  The innermost frame's line is the address's line
 * (dwfl_module_getsrc); every outer frame's line is the call site of the
 * inlined instance just inside it (DW_AT_call_file / DW_AT_call_line).
 * Without debug info: one frame, the ELF symtab name, file "??".
 *
 * Module paths come from clients (the shim announces them), so a path is
 * never opened with root's rights (sym_open_as):
 *   - the open runs with the process owner's filesystem ids (setfsuid /
 *     setfsgid and an empty supplementary group list, all per thread on
 *     Linux: raw syscalls, restored right after), so a file the owner may
 *     not read is not read;
 *   - O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, then fstat: only a regular file is
 *     used (a FIFO or a device is refused without blocking);
 *   - a final symlink is followed only when the link itself belongs to
 *     root or to the owner (soname links such as libOpenCL.so.1); a link
 *     planted by anyone else is refused;
 *   - libdwfl gets the fd (dwfl_report_elf), never the path.  Separate
 *     debug info and dwz alt files are taken only from /usr/lib/debug
 *     (world-readable regular files, opened the same way); a module whose
 *     alt file cannot be had that way is symbolized from its symtab only,
 *     so that libdw never opens a path itself.
 *
 * Caches (all bounded, under sym_lock):
 *   access (path, uid, gid) -> file: the verdict of one open with the
 *     owner's rights, so a file one user may read is never served to a
 *     user who may not;
 *   files by identity (st_dev, st_ino, mtime, size) -> Dwfl: shared by the
 *     users who may read the file;
 *   entries (file identity, offset) -> frames.
 * When the access or file table fills up both are dropped (reopened on
 * demand).  Entries live until gpd_symbols_shutdown (callers keep the
 * pointers); past SYM_MAX_ENTRIES new call sites get no frames.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpuprof/hash.h"
#include "gpuprof/log.h"

#include "daemon.h"

#define SYM_MAX_FILES 256        /* open Dwfl sessions */
#define SYM_MAX_ACCESS 65536     /* (path, uid, gid) verdicts */
#define SYM_MAX_ENTRIES 1000000  /* cached (file, offset) results */
#define SYM_MAX_LINKS 8          /* symlink hops of one open */
#define SYM_DEBUG_DIR "/usr/lib/debug"

typedef struct sym_id_s {
  uint64_t dev, ino, size;
  int64_t mtime_ns;
} sym_id_t;

typedef struct sym_file_s {
  sym_id_t id;
  Dwfl *dwfl;
  Dwfl_Module *mod;
  int nodwarf; /* symtab only (the alt file could not be opened safely) */
} sym_file_t;

typedef struct sym_access_s {
  char *path;
  uid_t uid;
  gid_t gid;
  int file; /* index into files, or -errno: refused */
} sym_access_t;

typedef struct sym_entry_s {
  sym_id_t id;
  uint64_t offset;
  gpd_sframe_t *frames;
  unsigned n;
} sym_entry_t;

static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static sym_file_t *files;
static size_t nfiles, capfiles;
static sym_access_t *acc;
static size_t nacc, capacc;
static gpd_map_t acc_map; /* hash(path, uid, gid) (+2 per collision) -> index */
static sym_entry_t *ents;
static size_t nents, capents;
static gpd_map_t ent_map; /* hash(id, offset) (+2 per collision) -> index */
/* the requester of the resolve in progress (for find_debuginfo) */
static uid_t cur_uid;
static gid_t cur_gid;
static int cur_alt_failed;
static int sym_full_logged;

static void frames_free(gpd_sframe_t *fr, unsigned n) {
  for (unsigned j = 0; j < n; j++) {
    free(fr[j].function);
    free(fr[j].file);
  }
  free(fr);
}

/* ------------------------------------------------------- safe opening */

typedef struct sym_creds_s {
  int switched;
  uid_t fsuid;
  gid_t fsgid;
  gid_t *groups;
  int ngroups;
} sym_creds_t;

/* Become uid/gid for filesystem access on this thread only.  glibc's
 * setgroups() changes every thread (setxid broadcast); the raw syscall
 * changes the calling thread's credentials alone, as setfsuid/setfsgid do.
 * 0, or -EPERM when the thread cannot act as uid (not root and not uid). */
static int creds_enter(sym_creds_t *c, uid_t uid, gid_t gid) {
  memset(c, 0, sizeof *c);
  if (geteuid() != 0)
    return uid == geteuid() ? 0 : -EPERM;
  int n = getgroups(0, NULL);
  if (n < 0)
    return -errno;
  c->groups = malloc(((size_t)n + 1) * sizeof *c->groups);
  if (c->groups == NULL)
    return -ENOMEM;
  c->ngroups = getgroups(n, c->groups);
  if (c->ngroups < 0) {
    free(c->groups);
    return -EPERM;
  }
  c->fsgid = (gid_t)setfsgid(gid);
  c->fsuid = (uid_t)setfsuid(uid);
  c->switched = 1;
  if (syscall(SYS_setgroups, 0, NULL) != 0 || (uid_t)setfsuid((uid_t)-1) != uid ||
      (gid_t)setfsgid((gid_t)-1) != gid)
    return -EPERM; /* creds_leave restores */
  return 0;
}

static void creds_leave(sym_creds_t *c) {
  if (c->switched) {
    setfsuid(c->fsuid);
    setfsgid(c->fsgid);
    if (syscall(SYS_setgroups, (size_t)c->ngroups, c->groups) != 0)
      GPD_WARN("symbols: cannot restore the supplementary groups: %s", strerror(errno));
  }
  free(c->groups);
  c->groups = NULL;
}

/* Open path read-only as uid/gid would (see the file comment): a regular
 * file, the final symlink followed only when root or uid owns it.  Returns
 * the fd (O_CLOEXEC) with *st filled, or -errno: -EACCES (not readable by
 * the owner), -ELOOP (a link owned by someone else or too many), -EINVAL (not
 * an absolute path, not a regular file). */
static int sym_open_as(const char *path, uid_t uid, gid_t gid, struct stat *st) {
  char cur[PATH_MAX], link[PATH_MAX];
  sym_creds_t c;
  int fd = -1, err;
  if (path == NULL || path[0] != '/' || strlen(path) >= sizeof cur)
    return -EINVAL;
  strcpy(cur, path);
  if ((err = creds_enter(&c, uid, gid)) < 0)
    goto out;
  for (int hop = 0;; hop++) {
    fd = open(cur, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0)
      break;
    err = -errno;
    struct stat ls;
    if (err != -ELOOP || hop >= SYM_MAX_LINKS || lstat(cur, &ls) < 0 || !S_ISLNK(ls.st_mode))
      goto out;
    if (ls.st_uid != 0 && ls.st_uid != uid) {
      err = -ELOOP; /* a link someone else could have planted */
      goto out;
    }
    ssize_t n = readlink(cur, link, sizeof link - 1);
    if (n <= 0) {
      err = n < 0 ? -errno : -ENOENT;
      goto out;
    }
    link[n] = 0;
    if (link[0] == '/') {
      strcpy(cur, link);
    } else {
      char *slash = strrchr(cur, '/');
      size_t dl = (size_t)(slash - cur) + 1;
      if (dl + (size_t)n >= sizeof cur) {
        err = -ENAMETOOLONG;
        goto out;
      }
      memcpy(cur + dl, link, (size_t)n + 1);
    }
  }
  if (fstat(fd, st) < 0) {
    err = -errno;
    goto out;
  }
  if (!S_ISREG(st->st_mode)) {
    err = -EINVAL;
    goto out;
  }
  err = 0;
out:
  creds_leave(&c);
  if (err < 0 && fd >= 0)
    close(fd);
  return err < 0 ? err : fd;
}

/* libdwfl's search for separate debug info, limited to /usr/lib/debug:
 * the build-id file, the same path below /usr/lib/debug, and a dwz alt
 * file named inside /usr/lib/debug.  Opened as the requester
 * (sym_open_as) and only when world-readable, because the Dwfl is shared
 * by every user who may read the main file.  Returns an fd or -1. */
static int debug_open(const char *p) {
  struct stat st;
  int fd = sym_open_as(p, cur_uid, cur_gid, &st);
  if (fd >= 0 && !(st.st_mode & S_IROTH)) {
    close(fd);
    fd = -1;
  }
  return fd < 0 ? -1 : fd;
}

static int sym_find_debuginfo(Dwfl_Module *mod, void **ud, const char *modname, Dwarf_Addr base,
                              const char *file_name, const char *debuglink, GElf_Word crc, char **out) {
  (void)ud;
  (void)modname;
  (void)base;
  char p[PATH_MAX];
  int fd = -1;
  *out = NULL;
  int is_alt = debuglink && crc == 0 && strncmp(debuglink, SYM_DEBUG_DIR "/", sizeof SYM_DEBUG_DIR) == 0;
  if (is_alt) { /* dwfl asks for the dwz alt file by its recorded name */
    fd = debug_open(debuglink);
    if (fd < 0)
      cur_alt_failed = 1;
    return fd;
  }
  const unsigned char *bid = NULL;
  GElf_Addr vaddr;
  int nb = dwfl_module_build_id(mod, &bid, &vaddr);
  if (nb >= 2 && nb <= 64) {
    int k = snprintf(p, sizeof p, SYM_DEBUG_DIR "/.build-id/%02x/", bid[0]);
    for (int i = 1; i < nb; i++)
      k += snprintf(p + k, sizeof p - (size_t)k, "%02x", bid[i]);
    snprintf(p + k, sizeof p - (size_t)k, ".debug");
    fd = debug_open(p);
  }
  if (fd < 0 && file_name && file_name[0] == '/' && debuglink && strchr(debuglink, '/') == NULL) {
    const char *slash = strrchr(file_name, '/');
    if (snprintf(p, sizeof p, SYM_DEBUG_DIR "%.*s/%s", (int)(slash - file_name), file_name, debuglink) <
        (int)sizeof p)
      fd = debug_open(p);
  }
  if (fd < 0 && debuglink && crc == 0)
    cur_alt_failed = 1; /* an alt name outside /usr/lib/debug: refused */
  return fd;
}

static int sym_find_elf(Dwfl_Module *mod, void **ud, const char *modname, Dwarf_Addr base, char **file_name,
                        Elf **elfp) {
  (void)mod, (void)ud, (void)modname, (void)base, (void)file_name, (void)elfp;
  return -1; /* never: every module is reported with its fd */
}

static const Dwfl_Callbacks sym_callbacks = {
    .find_elf = sym_find_elf,
    .find_debuginfo = sym_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* ------------------------------------------------------------ caches */

static void files_drop(void) {
  for (size_t i = 0; i < nfiles; i++)
    if (files[i].dwfl)
      dwfl_end(files[i].dwfl);
  nfiles = 0;
  for (size_t i = 0; i < nacc; i++)
    free(acc[i].path);
  nacc = 0;
  gpd_map_free(&acc_map);
}

static int id_eq(const sym_id_t *a, const sym_id_t *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

/* File (Dwfl) for an fd the owner could open; consumes fd.  Index or
 * -errno. */
static int file_for_fd(int fd, const char *path, const struct stat *st) {
  sym_id_t id = {(uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
                 (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec};
  for (size_t i = 0; i < nfiles; i++)
    if (id_eq(&files[i].id, &id)) {
      close(fd);
      return (int)i;
    }
  if (nfiles == capfiles) {
    size_t nc = capfiles ? capfiles * 2 : 16;
    sym_file_t *nf = realloc(files, nc * sizeof *nf);
    if (nf == NULL) {
      close(fd);
      return -ENOMEM;
    }
    files = nf;
    capfiles = nc;
  }
  sym_file_t *f = &files[nfiles];
  memset(f, 0, sizeof *f);
  f->id = id;
  f->dwfl = dwfl_begin(&sym_callbacks);
  if (f->dwfl == NULL) {
    close(fd);
    return -ENOMEM;
  }
  dwfl_report_begin(f->dwfl);
  f->mod = dwfl_report_elf(f->dwfl, path, path, fd, 0, false); /* consumes fd on success */
  dwfl_report_end(f->dwfl, NULL, NULL);
  if (f->mod == NULL)
    close(fd); /* not an ELF file: kept as a file without symbols */
  return (int)nfiles++;
}

/* The file path names for uid/gid (opening it with their rights the first
 * time).  Index into files, or -errno when they may not read it. */
static int access_file(const char *path, uid_t uid, gid_t gid) {
  size_t len = strlen(path);
  uint64_t key = (gpd_hash64(path, len, ((uint64_t)uid << 32) | gid)) | 1;
  uint64_t v;
  while (gpd_map_get(&acc_map, key, &v)) {
    sym_access_t *a = &acc[v];
    if (a->uid == uid && a->gid == gid && strcmp(a->path, path) == 0)
      return a->file;
    key += 2;
  }
  if (nacc >= SYM_MAX_ACCESS || nfiles >= SYM_MAX_FILES) {
    files_drop();
    key = (gpd_hash64(path, len, ((uint64_t)uid << 32) | gid)) | 1;
  }
  if (nacc == capacc) {
    size_t nc = capacc ? capacc * 2 : 64;
    sym_access_t *na = realloc(acc, nc * sizeof *na);
    if (na == NULL)
      return -ENOMEM;
    acc = na;
    capacc = nc;
  }
  struct stat st;
  int fd = sym_open_as(path, uid, gid, &st);
  int file = fd < 0 ? fd : file_for_fd(fd, path, &st);
  if (fd < 0)
    GPD_DEBUG("symbols: %s not opened for uid %u: %s", path, (unsigned)uid, strerror(-fd));
  sym_access_t *a = &acc[nacc];
  a->path = strdup(path);
  a->uid = uid;
  a->gid = gid;
  a->file = file;
  if (a->path == NULL || gpd_map_put(&acc_map, key, nacc) < 0) {
    free(a->path);
    return file; /* answered, not remembered */
  }
  nacc++;
  return file;
}

/* --------------------------------------------------------- resolving */

static char *dup_or(const char *s, const char *dflt) {
  return strdup(s ? s : dflt);
}

static char *fn_name(Dwarf_Die *die) {
  Dwarf_Attribute a;
  const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
  if (link == NULL)
    link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
  if (link)
    return gpd_demangle(link);
  return dup_or(dwarf_diename(die), "??");
}

static int add_frame(gpd_sframe_t **fr, unsigned *n, char *fn, const char *file, uint32_t line) {
  gpd_sframe_t *nf = realloc(*fr, (*n + 1) * sizeof *nf);
  if (nf == NULL || fn == NULL) {
    free(fn);
    return -ENOMEM;
  }
  *fr = nf;
  nf[*n].function = fn;
  nf[*n].file = dup_or(file, "??");
  nf[*n].line = line;
  nf[*n].inlined = 0;
  (*n)++;
  return 0;
}

/* Frames of the address (innermost first, then reversed). */
static void resolve(sym_file_t *f, uint64_t offset, gpd_sframe_t **fr, unsigned *n) {
  *fr = NULL;
  *n = 0;
  if (f == NULL || f->mod == NULL)
    return;
  Dwfl_Module *mod = f->mod;
  /* NODE.offset is the link-time virtual address (ip - 1 - dlpi_addr): the
   * module was reported at base 0, so its address is the offset plus the
   * bias Dwfl chose (0 for ET_DYN and ET_EXEC alike).  Not the module's
   * start: that is 0x400000 for a non-PIE executable. */
  GElf_Addr elf_bias = 0;
  dwfl_module_getelf(mod, &elf_bias);
  Dwarf_Addr addr = elf_bias + offset;
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = NULL;
  if (!f->nodwarf) {
    cur_alt_failed = 0;
    Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
    if (dw && cur_alt_failed)
      f->nodwarf = 1; /* libdw would open the alt file by itself */
    else if (dw)
      cu = dwfl_module_addrdie(mod, addr, &bias);
  }
  if (cu != NULL) {
    uint8_t ut = 0;
    if (dwarf_cu_info(cu->cu, NULL, &ut, NULL, NULL, NULL, NULL, NULL) == 0 && ut == DW_UT_skeleton)
      cu = NULL; /* split DWARF: libdw would open the .dwo by its recorded path */
  }
  if (cu != NULL) {
    Dwarf_Die *scopes = NULL, *chain = NULL;
    int ns = dwarf_getscopes(cu, addr - bias, &scopes);
    /* the concrete parents of the innermost scope: its inline chain */
    int nc = ns > 0 ? dwarf_getscopes_die(&scopes[0], &chain) : 0;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
    if (l)
      file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
    Dwarf_Files *srcfiles = NULL;
    size_t nsrc = 0;
    dwarf_getsrcfiles(cu, &srcfiles, &nsrc);
    /* innermost first: each function scope is a frame at (file, line); an
     * inlined instance's call site is the location in the next outer frame */
    for (int i = 0; i < nc; i++) {
      int tag = dwarf_tag(&chain[i]);
      if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
        continue;
      if (add_frame(fr, n, fn_name(&chain[i]), file, line > 0 ? (uint32_t)line : 0) < 0)
        break;
      if (tag == DW_TAG_subprogram)
        break;
      Dwarf_Attribute a;
      Dwarf_Word cf = 0, cl = 0;
      file = NULL;
      line = 0;
      if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_file, &a), &cf) == 0 && srcfiles && cf < nsrc)
        file = dwarf_filesrc(srcfiles, cf, NULL, NULL);
      if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_line, &a), &cl) == 0)
        line = (int)cl;
    }
    free(chain);
    free(scopes);
  }
  if (*n == 0) {
    const char *s = dwfl_module_addrname(mod, addr);
    add_frame(fr, n, s ? gpd_demangle(s) : strdup("??"), "??", 0);
  }
  /* reverse to outermost first; all but the outermost are inlined */
  for (unsigned i = 0; i < *n / 2; i++) {
    gpd_sframe_t t = (*fr)[i];
    (*fr)[i] = (*fr)[*n - 1 - i];
    (*fr)[*n - 1 - i] = t;
  }
  for (unsigned i = 1; i < *n; i++)
    (*fr)[i].inlined = 1;
}

int gpd_symbols_resolve(const char *path, uid_t uid, gid_t gid, uint64_t offset, const gpd_sframe_t **frames,
                        unsigned *n) {
  int err = 0;
  *frames = NULL;
  *n = 0;
  if (path == NULL || path[0] == 0)
    return -ENOENT;
  pthread_mutex_lock(&sym_lock);
  int fi = access_file(path, uid, gid);
  if (fi < 0)
    goto out; /* not readable by the owner (or not a regular file): no frames */
  sym_file_t *f = &files[fi];
  sym_id_t id = f->id;
  uint64_t key = gpd_hash64(&id, sizeof id, offset) | 1;
  uint64_t v;
  /* key collisions (other file/offset) probe key+2, key+4, ... */
  while (gpd_map_get(&ent_map, key, &v)) {
    sym_entry_t *e = &ents[v];
    if (e->offset == offset && id_eq(&e->id, &id)) {
      *frames = e->frames;
      *n = e->n;
      goto out;
    }
    key += 2;
  }
  cur_uid = uid;
  cur_gid = gid;
  sym_entry_t r = {.id = id, .offset = offset};
  resolve(f, offset, &r.frames, &r.n);
  if (nents >= SYM_MAX_ENTRIES) {
    /* full: callers may hold every result they got until shutdown (the
     * store resolves a whole snapshot first), so nothing is evicted and
     * new call sites stay unsymbolized (module+offset) */
    GPD_LOG_ONCE(sym_full_logged, GPD_LOG_WARN, "symbols: %d call sites cached; new ones are not symbolized",
                 SYM_MAX_ENTRIES);
    frames_free(r.frames, r.n);
    r.frames = NULL;
    r.n = 0;
  } else {
    if (nents == capents) {
      size_t nc = capents ? capents * 2 : 256;
      sym_entry_t *ne = realloc(ents, nc * sizeof *ne);
      if (ne == NULL) {
        frames_free(r.frames, r.n);
        err = -ENOMEM;
        goto out;
      }
      ents = ne;
      capents = nc;
    }
    if (gpd_map_put(&ent_map, key, nents) < 0) {
      frames_free(r.frames, r.n);
      err = -ENOMEM;
      goto out;
    }
    ents[nents++] = r;
  }
  *frames = r.frames;
  *n = r.n;
out:
  pthread_mutex_unlock(&sym_lock);
  return err;
}

void gpd_symbols_shutdown(void) {
  pthread_mutex_lock(&sym_lock);
  for (size_t i = 0; i < nents; i++)
    frames_free(ents[i].frames, ents[i].n);
  free(ents);
  ents = NULL;
  nents = capents = 0;
  gpd_map_free(&ent_map);
  files_drop();
  free(files);
  files = NULL;
  capfiles = 0;
  free(acc);
  acc = NULL;
  capacc = 0;
  pthread_mutex_unlock(&sym_lock);
}
