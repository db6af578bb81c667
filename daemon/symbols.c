/* symbols.c - call-site symbolization with elfutils libdwfl/libdw.
 *
 * (module path, offset into the module) -> source frames, outermost first,
 * inlined frames included: the scopes of the address (dwarf_getscopes) give
 * the inline chain innermost first; the innermost frame's line comes from
 * dwfl_module_getsrc, each outer frame's line from the inlined scope's
 * DW_AT_call_file/DW_AT_call_line.  Without debug info: one frame with the
 * ELF symtab name (dwfl_module_addrname) and file "??".
 *
 * Each module path gets its own Dwfl reported at base 0 (dwfl_report_elf),
 * so the module's addresses are its link-time vaddrs and the address of an
 * offset is module start + offset.  Results are cached per (path, offset)
 * and live until gpd_symbols_shutdown.  A mutex serializes everything:
 * called from the main thread (queries) and the writer (flush), never from
 * the monitor thread.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/hash.h"

#include "daemon.h"

typedef struct sym_mod_s {
  char *path;
  Dwfl *dwfl;
  Dwfl_Module *mod;
} sym_mod_t;

typedef struct sym_entry_s {
  char *path;
  uint64_t offset;
  gpd_sframe_t *frames;
  unsigned n;
} sym_entry_t;

static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static sym_mod_t *mods;
static size_t nmods, capmods;
static sym_entry_t *ents;
static size_t nents, capents;
static gpd_map_t ent_map; /* hash(path, offset) -> index + 1 chain head */

static const Dwfl_Callbacks sym_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static Dwfl_Module *module_for(const char *path) {
  for (size_t i = 0; i < nmods; i++)
    if (strcmp(mods[i].path, path) == 0)
      return mods[i].mod;
  if (nmods == capmods) {
    size_t nc = capmods ? capmods * 2 : 16;
    sym_mod_t *nm = realloc(mods, nc * sizeof *nm);
    if (nm == NULL)
      return NULL;
    mods = nm;
    capmods = nc;
  }
  sym_mod_t *m = &mods[nmods];
  m->path = strdup(path);
  m->dwfl = dwfl_begin(&sym_callbacks);
  m->mod = NULL;
  if (m->path && m->dwfl && path[0] == '/') {
    dwfl_report_begin(m->dwfl);
    m->mod = dwfl_report_elf(m->dwfl, path, path, -1, 0, false);
    dwfl_report_end(m->dwfl, NULL, NULL);
  }
  nmods++;
  return m->mod; /* NULL cached too: a missing file is not retried */
}

static char *dup_or(const char *s, const char *dflt) {
  return strdup(s ? s : dflt);
}

static char *fn_name(Dwarf_Die *die) {
  Dwarf_Attribute a;
  const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
  if (link)
    return gpd_demangle(link);
  const char *n = dwarf_diename(die);
  if (n == NULL) {
    Dwarf_Die origin;
    if (dwarf_attr_integrate(die, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &origin))
      n = dwarf_diename(&origin);
  }
  return dup_or(n, "??");
}

static int add_frame(gpd_sframe_t **fr, unsigned *n, char *fn, const char *file, uint32_t line) {
  gpd_sframe_t *nf = realloc(*fr, (*n + 1) * sizeof *nf);
  if (nf == NULL) {
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

static void resolve(Dwfl_Module *mod, uint64_t offset, gpd_sframe_t **fr, unsigned *n) {
  *fr = NULL;
  *n = 0;
  if (mod == NULL)
    return;
  /* NODE.offset is the link-time virtual address (ip - dlpi_addr, the load
   * bias): the module was reported at base 0, so its address is the offset
   * plus the bias Dwfl chose (0 for ET_DYN and ET_EXEC alike).  Not the
   * module's start: that is 0x400000 for a non-PIE executable. */
  GElf_Addr elf_bias = 0;
  dwfl_module_getelf(mod, &elf_bias);
  Dwarf_Addr addr = elf_bias + offset;
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
  if (cu != NULL) {
    Dwarf_Die *scopes = NULL;
    int ns = dwarf_getscopes(cu, addr - bias, &scopes);
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
    if (l)
      file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    dwarf_getsrcfiles(cu, &files, &nfiles);
    /* innermost first: each function scope is a frame at (file, line);
     * an inlined scope's call site is the next outer frame's location */
    for (int i = 0; i < ns; i++) {
      int tag = dwarf_tag(&scopes[i]);
      if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
        continue;
      add_frame(fr, n, fn_name(&scopes[i]), file, line > 0 ? (uint32_t)line : 0);
      if (tag == DW_TAG_subprogram)
        break;
      Dwarf_Attribute a;
      Dwarf_Word cf = 0, cl = 0;
      file = NULL;
      line = 0;
      if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &cf) == 0 && files)
        file = dwarf_filesrc(files, cf, NULL, NULL);
      if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &cl) == 0)
        line = (int)cl;
    }
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
  uint64_t key = gpd_hash64(path, strlen(path), offset) | 1;
  pthread_mutex_lock(&sym_lock);
  uint64_t v;
  /* key collisions (other path/offset) probe key+2, key+4, ... */
  while (gpd_map_get(&ent_map, key, &v)) {
    sym_entry_t *e = &ents[v];
    if (e->offset == offset && strcmp(e->path, path) == 0) {
      *frames = e->frames;
      *n = e->n;
      goto out;
    }
    key += 2;
  }
  if (nents == capents) {
    size_t nc = capents ? capents * 2 : 256;
    sym_entry_t *ne = realloc(ents, nc * sizeof *ne);
    if (ne == NULL) {
      err = -ENOMEM;
      goto out;
    }
    ents = ne;
    capents = nc;
  }
  sym_entry_t *e = &ents[nents];
  e->path = strdup(path);
  e->offset = offset;
  resolve(module_for(path), offset, &e->frames, &e->n);
  if (e->path == NULL || gpd_map_put(&ent_map, key, nents) < 0) {
    err = -ENOMEM;
    goto out;
  }
  nents++;
  *frames = e->frames;
  *n = e->n;
out:
  pthread_mutex_unlock(&sym_lock);
  return err;
}

void gpd_symbols_shutdown(void) {
  pthread_mutex_lock(&sym_lock);
  for (size_t i = 0; i < nents; i++) {
    for (unsigned j = 0; j < ents[i].n; j++) {
      free(ents[i].frames[j].function);
      free(ents[i].frames[j].file);
    }
    free(ents[i].frames);
    free(ents[i].path);
  }
  free(ents);
  ents = NULL;
  nents = capents = 0;
  for (size_t i = 0; i < nmods; i++) {
    if (mods[i].dwfl)
      dwfl_end(mods[i].dwfl);
    free(mods[i].path);
  }
  free(mods);
  mods = NULL;
  nmods = capmods = 0;
  gpd_map_free(&ent_map);
  pthread_mutex_unlock(&sym_lock);
}
