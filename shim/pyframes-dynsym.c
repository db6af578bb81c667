/* pyframes-dynsym.c - a function symbol of a loaded library, found in the
 * library's own mapped dynamic symbol table (PT_DYNAMIC: DT_SYMTAB,
 * DT_STRTAB, DT_GNU_HASH or DT_HASH), for the dispatch functions of
 * pyframes-handoff.c and libtorch's autograd functions of
 * pyframes-backward.c: no dlopen/dlsym (libtorch is loaded RTLD_LOCAL by
 * torch._C, and the module scan that asks runs inside dl_iterate_phdr).
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "pyframes-internal.h"

static uint32_t elf_gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++)
    h = h * 33 + (uint8_t)*s;
  return h;
}

static uint32_t elf_sysv_hash(const char *s) {
  uint32_t h = 0, g;
  for (; *s; s++) {
    h = (h << 4) + (uint8_t)*s;
    g = h & 0xf0000000u;
    if (g)
      h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

/* The defined dynamic symbol `name` of a mapped library: its address and
 * st_size.  Reads the library's own mapped tables (PT_DYNAMIC: DT_SYMTAB,
 * DT_STRTAB, DT_GNU_HASH or DT_HASH); no loader call.  0 or -ENOENT. */
int gpd__pyframes_dynsym(const struct dl_phdr_info *info, const char *name, uintptr_t *addr, size_t *size) {
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn)
    return -ENOENT;
  uintptr_t symtab = 0, strtab = 0, gnu = 0, sysv = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    /* glibc relocates these in place where the dynamic section is
     * writable (x86-64), not where it is read-only */
    uintptr_t a = dyn->d_un.d_ptr;
    if (a < info->dlpi_addr)
      a += info->dlpi_addr;
    if (dyn->d_tag == DT_SYMTAB)
      symtab = a;
    else if (dyn->d_tag == DT_STRTAB)
      strtab = a;
    else if (dyn->d_tag == DT_GNU_HASH)
      gnu = a;
    else if (dyn->d_tag == DT_HASH)
      sysv = a;
  }
  if (!symtab || !strtab || (!gnu && !sysv))
    return -ENOENT;
  const ElfW(Sym) *sy = (const ElfW(Sym) *)symtab, *hit = NULL;
  if (gnu) {
    const uint32_t *g = (const uint32_t *)gnu;
    uint32_t nb = g[0], off = g[1], nbloom = g[2], h = elf_gnu_hash(name);
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(g + 4) + nbloom);
    const uint32_t *chain = buckets + nb;
    uint32_t i = nb ? buckets[h % nb] : 0;
    for (; i >= off && i != 0; i++) {
      uint32_t c = chain[i - off];
      if ((c | 1) == (h | 1) && strcmp((const char *)strtab + sy[i].st_name, name) == 0) {
        hit = &sy[i];
        break;
      }
      if (c & 1)
        break;
    }
  } else {
    const uint32_t *hh = (const uint32_t *)sysv;
    uint32_t nb = hh[0], nc = hh[1];
    const uint32_t *bucket = hh + 2, *chain = bucket + nb;
    for (uint32_t i = nb ? bucket[elf_sysv_hash(name) % nb] : 0, k = 0; i && i < nc && k < nc;
         i = chain[i], k++)
      if (strcmp((const char *)strtab + sy[i].st_name, name) == 0) {
        hit = &sy[i];
        break;
      }
  }
  if (!hit || hit->st_shndx == SHN_UNDEF || hit->st_value == 0 || (hit->st_info & 0xf) != STT_FUNC)
    return -ENOENT;
  *addr = info->dlpi_addr + hit->st_value;
  *size = hit->st_size;
  return 0;
}
