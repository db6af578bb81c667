/* cubin.c - functions and source lines of a cubin (NVIDIA GPU binary, an
 * ELF file for EM_CUDA), read from memory with libelf.
 *
 * Functions come from .symtab (STT_FUNC in executable sections).  Lines
 * come from .debug_line, which nvcc -lineinfo and -G emit as a DWARF 2
 * line program whose DW_LNE_set_address operands are relocated against
 * each kernel's symbol (.rela.debug_line): a relocatable cubin has every
 * section at address 0, so the relocation, not the address, says which
 * kernel's .text a sequence describes.  libdw (0.188) offers no way to see
 * those relocations for EM_CUDA (no backend), hence the small decoder
 * below.  Everything is bounds-checked: the bytes come from a client.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-internal.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

#define CUBIN_MAX_LINES (1u << 22) /* rows kept per cubin */
#define CUBIN_MAX_FILES 4096u

void gpd__cubin_note(char *buf, size_t cap, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n + 4 >= cap)
    return;
  if (n)
    n += (size_t)snprintf(buf + n, cap - n, "; ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, cap - n, fmt, ap);
  va_end(ap);
}

#define note(c, ...) gpd__cubin_note((c)->notes, sizeof (c)->notes, __VA_ARGS__)

/* ------------------------------------------------------ byte reader */

typedef struct dwarf_rd_s {
  const uint8_t *p, *end;
  int bad;
} dwarf_rd_t;

static uint64_t rd_n(dwarf_rd_t *r, size_t n) {
  if ((size_t)(r->end - r->p) < n) {
    r->bad = 1;
    r->p = r->end;
    return 0;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v |= (uint64_t)r->p[i] << (8 * i);
  r->p += n;
  return v;
}

static uint64_t rd_uleb(dwarf_rd_t *r) {
  uint64_t v = 0;
  for (unsigned shift = 0; r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      return v;
  }
  r->bad = 1;
  return 0;
}

static int64_t rd_sleb(dwarf_rd_t *r) {
  int64_t v = 0;
  unsigned shift = 0;
  while (r->p < r->end) {
    uint8_t b = *r->p++;
    if (shift < 64)
      v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40))
        v |= (int64_t)(~(uint64_t)0 << shift);
      return v;
    }
  }
  r->bad = 1;
  return 0;
}

static const char *rd_str(dwarf_rd_t *r) {
  const uint8_t *s = r->p;
  const uint8_t *z = memchr(s, 0, (size_t)(r->end - s));
  if (z == NULL) {
    r->bad = 1;
    r->p = r->end;
    return "";
  }
  r->p = z + 1;
  return (const char *)s;
}

/* ------------------------------------------------------- relocations */

typedef struct reloc_s {
  uint64_t off;     /* in .debug_line */
  uint32_t section; /* section of the symbol */
  int64_t value;    /* symbol value + addend */
} reloc_t;

static int reloc_cmp(const void *a, const void *b) {
  const reloc_t *x = a, *y = b;
  return x->off < y->off ? -1 : x->off > y->off;
}

static const reloc_t *reloc_find(const reloc_t *r, size_t n, uint64_t off) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].off < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && r[lo].off == off ? &r[lo] : NULL;
}

/* ------------------------------------------------------- line program */

typedef struct lines_ctx_s {
  gpd_cubin_t *c;
  size_t cap_lines, cap_files;
  const reloc_t *rel;
  size_t nrel;
  uint32_t only_text; /* the one executable section, or 0 when several */
} lines_ctx_t;

static int add_file(lines_ctx_t *x, const char *dir, const char *name) {
  gpd_cubin_t *c = x->c;
  if (c->nfiles >= CUBIN_MAX_FILES)
    return -ENOSPC;
  if (c->nfiles == x->cap_files) {
    size_t cap = x->cap_files ? 2 * x->cap_files : 8;
    char **f = realloc(c->files, cap * sizeof *f);
    if (f == NULL)
      return -ENOMEM;
    c->files = f;
    x->cap_files = cap;
  }
  char *s;
  if (name[0] != '/' && dir && dir[0]) {
    if (asprintf(&s, "%s/%s", dir, name) < 0)
      return -ENOMEM;
  } else if ((s = strdup(name)) == NULL) {
    return -ENOMEM;
  }
  c->files[c->nfiles++] = s;
  return 0;
}

static int add_row(lines_ctx_t *x, uint32_t section, uint64_t addr, uint32_t file, uint32_t line) {
  gpd_cubin_t *c = x->c;
  if (c->nlines >= CUBIN_MAX_LINES)
    return -ENOSPC;
  if (c->nlines == x->cap_lines) {
    size_t cap = x->cap_lines ? 2 * x->cap_lines : 64;
    gpd_cubin_line_t *l = realloc(c->lines, cap * sizeof *l);
    if (l == NULL)
      return -ENOMEM;
    c->lines = l;
    x->cap_lines = cap;
  }
  c->lines[c->nlines++] = (gpd_cubin_line_t){section, file, addr, line};
  return 0;
}

/* One line-number program unit at r (DWARF 2-4).  base: offset of the
 * section start, to find relocations.  Returns 0, -EINVAL (damaged: the
 * caller stops reading the section), -ENOMEM, -ENOSPC. */
static int line_unit(lines_ctx_t *x, dwarf_rd_t *sec, const uint8_t *base) {
  dwarf_rd_t r = *sec;
  uint64_t ulen = rd_n(&r, 4);
  int off64 = 0;
  if (ulen == 0xffffffffu) {
    ulen = rd_n(&r, 8);
    off64 = 1;
  }
  if (r.bad || ulen > (uint64_t)(r.end - r.p))
    return -EINVAL;
  const uint8_t *uend = r.p + ulen;
  sec->p = uend;
  r.end = uend;
  unsigned version = (unsigned)rd_n(&r, 2);
  if (version < 2 || version > 4) {
    note(x->c, "line table version %u not read (2-4 are)", version);
    return 0;
  }
  uint64_t hlen = rd_n(&r, off64 ? 8 : 4);
  if (r.bad || hlen > (uint64_t)(r.end - r.p))
    return -EINVAL;
  const uint8_t *prog = r.p + hlen;
  unsigned min_inst = (unsigned)rd_n(&r, 1);
  if (version >= 4)
    rd_n(&r, 1); /* maximum_operations_per_instruction: VLIW only */
  unsigned default_stmt = (unsigned)rd_n(&r, 1);
  (void)default_stmt;
  int line_base = (int8_t)rd_n(&r, 1);
  unsigned line_range = (unsigned)rd_n(&r, 1);
  unsigned opcode_base = (unsigned)rd_n(&r, 1);
  if (r.bad || line_range == 0 || opcode_base == 0)
    return -EINVAL;
  uint8_t std_len[256] = {0};
  for (unsigned i = 1; i < opcode_base; i++)
    std_len[i] = (uint8_t)rd_n(&r, 1);
  const char *dirs[256];
  unsigned ndirs = 0;
  for (;;) {
    const char *d = rd_str(&r);
    if (r.bad || d[0] == 0)
      break;
    if (ndirs < 256)
      dirs[ndirs++] = d;
  }
  uint32_t file_base = (uint32_t)x->c->nfiles;
  uint32_t nfiles = 0;
  int err;
  for (;;) {
    const char *name = rd_str(&r);
    if (r.bad || name[0] == 0)
      break;
    uint64_t dir = rd_uleb(&r);
    rd_uleb(&r);
    rd_uleb(&r);
    const char *dname = dir >= 1 && dir <= ndirs ? dirs[dir - 1] : NULL;
    if ((err = add_file(x, dname, name)) < 0)
      return err;
    nfiles++;
  }
  if (r.bad || prog > r.end)
    return -EINVAL;
  r.p = prog;

  /* the state machine (DWARF 4, section 6.2.2) */
  uint64_t addr = 0;
  uint32_t file = 1, line = 1, section = x->only_text;
  int have_section = x->only_text != 0;
  while (r.p < r.end && !r.bad) {
    unsigned op = (unsigned)rd_n(&r, 1);
    int emit = 0, end_seq = 0;
    if (op >= opcode_base) {
      unsigned adj = op - opcode_base;
      addr += (uint64_t)(adj / line_range) * min_inst;
      line = (uint32_t)((int64_t)line + line_base + (int)(adj % line_range));
      emit = 1;
    } else if (op == 0) {
      uint64_t len = rd_uleb(&r);
      if (r.bad || len == 0 || len > (uint64_t)(r.end - r.p))
        return -EINVAL;
      const uint8_t *next = r.p + len;
      unsigned sub = (unsigned)rd_n(&r, 1);
      if (sub == 1) { /* DW_LNE_end_sequence */
        emit = end_seq = 1;
      } else if (sub == 2) { /* DW_LNE_set_address */
        uint64_t at = (uint64_t)(r.p - base);
        size_t n = (size_t)(len - 1);
        addr = n <= 8 ? rd_n(&r, n) : 0;
        const reloc_t *rel = reloc_find(x->rel, x->nrel, at);
        if (rel) {
          section = rel->section;
          addr += (uint64_t)rel->value;
          have_section = 1;
        } else if (!x->only_text) {
          have_section = 0;
        }
      } else if (sub == 3) { /* DW_LNE_define_file */
        const char *name = rd_str(&r);
        if (!r.bad && (err = add_file(x, NULL, name)) < 0)
          return err;
        nfiles++;
      }
      r.p = next;
    } else {
      switch (op) {
      case 1: emit = 1; break;                                            /* copy */
      case 2: addr += rd_uleb(&r) * min_inst; break;                       /* advance_pc */
      case 3: line = (uint32_t)((int64_t)line + rd_sleb(&r)); break;       /* advance_line */
      case 4: file = (uint32_t)rd_uleb(&r); break;                         /* set_file */
      case 8: addr += (uint64_t)((255 - opcode_base) / line_range) * min_inst; break;
      case 9: addr += rd_n(&r, 2); break;                                  /* fixed_advance_pc */
      default:
        for (unsigned i = 0; i < std_len[op]; i++)
          rd_uleb(&r);
      }
    }
    if (emit && have_section) {
      uint32_t f = file >= 1 && file <= nfiles ? file_base + file - 1 : UINT32_MAX;
      if ((err = add_row(x, section, addr, f, end_seq ? 0 : line)) < 0)
        return err;
    }
    if (end_seq) {
      addr = 0;
      file = line = 1;
      section = x->only_text;
      have_section = x->only_text != 0;
    }
  }
  return r.bad ? -EINVAL : 0;
}

static int line_cmp(const void *a, const void *b) {
  const gpd_cubin_line_t *x = a, *y = b;
  if (x->section != y->section)
    return x->section < y->section ? -1 : 1;
  if (x->addr != y->addr)
    return x->addr < y->addr ? -1 : 1;
  /* at one address a real line sorts after an end-of-sequence row, so a
   * sequence starting where the previous one ended wins */
  return (x->line != 0) - (y->line != 0);
}

static int func_cmp(const void *a, const void *b) {
  const gpd_cubin_func_t *x = a, *y = b;
  if (x->section != y->section)
    return x->section < y->section ? -1 : 1;
  if (x->lo != y->lo)
    return x->lo < y->lo ? -1 : 1;
  return x->hi > y->hi ? -1 : x->hi < y->hi;
}

/* -------------------------------------------------------------- open */

void gpd_cubin_free(gpd_cubin_t *c) {
  if (c == NULL)
    return;
  for (size_t i = 0; i < c->nfuncs; i++)
    free(c->funcs[i].name);
  for (size_t i = 0; i < c->nfiles; i++)
    free(c->files[i]);
  free(c->funcs);
  free(c->lines);
  free(c->files);
  free(c);
}

static int read_funcs(gpd_cubin_t *c, Elf *e, Elf_Scn *symscn, size_t nsec) {
  GElf_Shdr sh;
  if (gelf_getshdr(symscn, &sh) == NULL || sh.sh_entsize == 0)
    return 0;
  Elf_Data *d = elf_getdata(symscn, NULL);
  if (d == NULL)
    return 0;
  size_t n = sh.sh_size / sh.sh_entsize, cap = 0;
  for (size_t i = 0; i < n; i++) {
    GElf_Sym s;
    if (gelf_getsym(d, (int)i, &s) == NULL)
      break;
    if (GELF_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || s.st_shndx >= nsec)
      continue;
    GElf_Shdr th;
    Elf_Scn *ts = elf_getscn(e, s.st_shndx);
    if (ts == NULL || gelf_getshdr(ts, &th) == NULL || !(th.sh_flags & SHF_EXECINSTR))
      continue;
    const char *name = elf_strptr(e, sh.sh_link, s.st_name);
    if (name == NULL || name[0] == 0)
      continue;
    uint64_t lo = s.st_value, hi = s.st_value + s.st_size;
    if (lo >= th.sh_size || hi < lo) {
      note(c, "function %.64s outside its section", name);
      continue;
    }
    if (s.st_size == 0 || hi > th.sh_size)
      hi = th.sh_size;
    if (c->nfuncs == cap) {
      cap = cap ? 2 * cap : 16;
      gpd_cubin_func_t *f = realloc(c->funcs, cap * sizeof *f);
      if (f == NULL)
        return -ENOMEM;
      c->funcs = f;
    }
    gpd_cubin_func_t *f = &c->funcs[c->nfuncs];
    if ((f->name = strdup(name)) == NULL)
      return -ENOMEM;
    c->nfuncs++;
    f->section = (uint32_t)s.st_shndx;
    f->kernel = GELF_ST_BIND(s.st_info) != STB_LOCAL;
    f->lo = lo;
    f->hi = hi;
    const char *d2 = f->name[0] == '$' ? strrchr(f->name + 1, '$') : NULL;
    f->callee = d2 && d2[1] ? d2 + 1 : f->name;
  }
  if (c->nfuncs)
    qsort(c->funcs, c->nfuncs, sizeof *c->funcs, func_cmp);
  return 0;
}

static int read_lines(gpd_cubin_t *c, Elf *e, size_t shstrndx, size_t nsec) {
  Elf_Scn *line_scn = NULL, *rela_scn = NULL, *scn = NULL;
  uint32_t ntext = 0, text = 0;
  size_t line_idx = 0;
  while ((scn = elf_nextscn(e, scn)) != NULL) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == NULL)
      continue;
    const char *name = elf_strptr(e, shstrndx, sh.sh_name);
    if (sh.sh_flags & SHF_EXECINSTR) {
      ntext++;
      text = (uint32_t)elf_ndxscn(scn);
    }
    if (name && strcmp(name, ".debug_line") == 0 && sh.sh_type == SHT_PROGBITS) {
      line_scn = scn;
      line_idx = elf_ndxscn(scn);
    }
  }
  if (line_scn == NULL)
    return 0; /* no -lineinfo: functions only */
  scn = NULL;
  while ((scn = elf_nextscn(e, scn)) != NULL) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL) &&
        sh.sh_info == line_idx)
      rela_scn = scn;
  }

  lines_ctx_t x = {.c = c, .only_text = ntext == 1 ? text : 0};
  reloc_t *rel = NULL;
  int err = 0;
  if (rela_scn) {
    GElf_Shdr sh;
    Elf_Data *d = elf_getdata(rela_scn, NULL);
    Elf_Data *symd = NULL;
    Elf_Scn *syms = NULL;
    if (gelf_getshdr(rela_scn, &sh) && d && sh.sh_entsize && sh.sh_link < nsec &&
        (syms = elf_getscn(e, sh.sh_link)) && (symd = elf_getdata(syms, NULL))) {
      size_t n = sh.sh_size / sh.sh_entsize;
      if ((rel = calloc(n ? n : 1, sizeof *rel)) == NULL)
        return -ENOMEM;
      for (size_t i = 0; i < n; i++) {
        GElf_Rela ra;
        GElf_Rel rr;
        uint64_t off, info;
        int64_t add = 0;
        if (sh.sh_type == SHT_RELA) {
          if (gelf_getrela(d, (int)i, &ra) == NULL)
            break;
          off = ra.r_offset, info = ra.r_info, add = ra.r_addend;
        } else {
          if (gelf_getrel(d, (int)i, &rr) == NULL)
            break;
          off = rr.r_offset, info = rr.r_info;
        }
        GElf_Sym s;
        if (gelf_getsym(symd, (int)GELF_R_SYM(info), &s) == NULL || s.st_shndx == SHN_UNDEF ||
            s.st_shndx >= nsec)
          continue;
        /* S + A modulo 2^64 (address arithmetic; a hostile cubin may
         * overflow a signed sum) */
        rel[x.nrel++] = (reloc_t){off, s.st_shndx, (int64_t)((uint64_t)s.st_value + (uint64_t)add)};
      }
      qsort(rel, x.nrel, sizeof *rel, reloc_cmp);
      x.rel = rel;
    }
  }
  Elf_Data *ld = elf_getdata(line_scn, NULL);
  if (ld && ld->d_buf && ld->d_size) {
    dwarf_rd_t r = {ld->d_buf, (const uint8_t *)ld->d_buf + ld->d_size, 0};
    while (r.p < r.end) {
      err = line_unit(&x, &r, ld->d_buf);
      if (err == -EINVAL) {
        note(c, "damaged line table: rows after byte %zu not read",
             (size_t)(r.p - (const uint8_t *)ld->d_buf));
        err = 0;
        break;
      }
      if (err == -ENOSPC) {
        note(c, "line table too large: rows beyond %u not read", CUBIN_MAX_LINES);
        err = 0;
        break;
      }
      if (err < 0)
        break;
    }
  }
  free(rel);
  if (err == 0 && c->nlines)
    qsort(c->lines, c->nlines, sizeof *c->lines, line_cmp);
  return err;
}

int gpd_cubin_open(const void *data, size_t len, gpd_cubin_t **out, char *errmsg, size_t errlen) {
  int err = -EINVAL;
  Elf *e = NULL;
  char *copy = NULL;
  gpd_cubin_t *c = NULL;
  if (errlen)
    errmsg[0] = 0;
  if (data == NULL || out == NULL)
    return -EINVAL;
  *out = NULL;
  elf_version(EV_CURRENT);
  if (len < 64 || memcmp(data, "\177ELF", 4) != 0) {
    snprintf(errmsg, errlen, "not an ELF file (%zu bytes)", len);
    return -EINVAL;
  }
  /* libelf reads in place; a private copy keeps the caller's bytes const */
  if ((copy = malloc(len)) == NULL || (c = calloc(1, sizeof *c)) == NULL) {
    err = -ENOMEM;
    goto fail;
  }
  memcpy(copy, data, len);
  e = elf_memory(copy, len);
  GElf_Ehdr eh;
  size_t shstrndx, nsec;
  if (e == NULL || elf_kind(e) != ELF_K_ELF || gelf_getehdr(e, &eh) == NULL ||
      elf_getshdrstrndx(e, &shstrndx) != 0 || elf_getshdrnum(e, &nsec) != 0) {
    snprintf(errmsg, errlen, "damaged ELF header: %s", elf_errmsg(-1));
    goto fail;
  }
  if (eh.e_machine != EM_CUDA) {
    snprintf(errmsg, errlen, "not a cubin (ELF machine %u, EM_CUDA is %u)", eh.e_machine, EM_CUDA);
    goto fail;
  }
  Elf_Scn *scn = NULL, *symscn = NULL;
  while ((scn = elf_nextscn(e, scn)) != NULL) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
      symscn = scn;
  }
  if (symscn == NULL)
    note(c, "no symbol table: no functions");
  else if ((err = read_funcs(c, e, symscn, nsec)) < 0)
    goto fail;
  if ((err = read_lines(c, e, shstrndx, nsec)) < 0)
    goto fail;
  if (c->nfuncs == 0) {
    snprintf(errmsg, errlen, "no functions in the cubin%s%s", c->notes[0] ? ": " : "", c->notes);
    err = -EINVAL;
    goto fail;
  }
  elf_end(e);
  free(copy);
  *out = c;
  return 0;
fail:
  if (e)
    elf_end(e);
  free(copy);
  gpd_cubin_free(c);
  return err;
}

const gpd_cubin_func_t *gpd_cubin_func_named(const gpd_cubin_t *c, const char *name) {
  for (size_t i = 0; c && name && i < c->nfuncs; i++)
    if (strcmp(c->funcs[i].name, name) == 0)
      return &c->funcs[i];
  return NULL;
}

const gpd_cubin_func_t *gpd_cubin_func_at(const gpd_cubin_t *c, uint32_t section, uint64_t off) {
  const gpd_cubin_func_t *best = NULL;
  for (size_t i = 0; c && i < c->nfuncs; i++) {
    const gpd_cubin_func_t *f = &c->funcs[i];
    if (f->section != section || off < f->lo || off >= f->hi)
      continue;
    if (best == NULL || f->hi - f->lo < best->hi - best->lo)
      best = f;
  }
  return best;
}

int gpd_cubin_line_at(const gpd_cubin_t *c, uint32_t section, uint64_t off, const char **file,
                      uint32_t *line) {
  if (c == NULL || c->nlines == 0)
    return -ENOENT;
  /* last row with (section, addr) <= (section, off) */
  size_t lo = 0, hi = c->nlines;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const gpd_cubin_line_t *l = &c->lines[mid];
    if (l->section < section || (l->section == section && l->addr <= off))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return -ENOENT;
  const gpd_cubin_line_t *l = &c->lines[lo - 1];
  if (l->section != section || l->line == 0)
    return -ENOENT;
  if (file)
    *file = l->file < c->nfiles ? c->files[l->file] : "?";
  if (line)
    *line = l->line;
  return 0;
}

const char *gpd_cubin_func_display(const gpd_cubin_func_t *f) {
  return f ? f->callee : "?";
}
