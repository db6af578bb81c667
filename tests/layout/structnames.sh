#!/usr/bin/env bash
# layout.structnames_selftest - scripts/structnames on crafted trees:
# each kind of duplicate struct name makes it exit 1 and name the
# duplicate with both places; a tree whose names are all distinct (the
# same struct declared in several headers, typedefs of one opaque tag,
# struct words inside comments, strings and macros) makes it exit 0.
# Usage: structnames.sh TOP (the source tree; its scripts/structnames runs).
set -euo pipefail
top=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect STATUS PATTERN DIR...: scripts/structnames --top $tmp DIR...
# exits STATUS and prints a line matching PATTERN.
expect() {
  local want=$1 pat=$2 got=0 out
  shift 2
  out=$(python3 "$top/scripts/structnames" --top "$tmp" "$@" 2>&1) || got=$?
  if [ "$got" != "$want" ] || ! grep -qE -- "$pat" <<<"$out"; then
    echo "structnames $*: exit $got, want $want and a line matching '$pat'; it printed:"
    echo "$out"
    fail=1
  fi
}

# A clean tree: one struct per name.
mkdir -p "$tmp/clean/a" "$tmp/clean/b"
cat >"$tmp/clean/a/x.h" <<'EOF'
/* struct comment_s { int in_a_comment; }; */
typedef struct gpd_ring_s gpd_ring_t;   /* opaque here, defined in ring.c */
typedef struct gpd_opaque_s gpd_opaque_t;
#define DECLARE(n) struct n { int x; }
typedef struct gpd_point_s {
  struct { int lo, hi; } range;         /* an anonymous member struct */
  int x, y;
} gpd_point_t, *gpd_point_p;
EOF
cat >"$tmp/clean/a/ring.c" <<'EOF'
#include "x.h"
struct gpd_ring_s { int head; };
static const char *s = "struct string_s { int in_a_string; };";
EOF
cat >"$tmp/clean/b/y.c" <<'EOF'
typedef struct gpd_ring_s gpd_ring_t;   /* the same struct again */
typedef struct gpd_opaque_s gpd_opaque_t;
typedef struct { int depth; } walk_t;
int f(void) { struct local_s { int a; } l = {0}; return l.a; }
EOF
expect 0 '^structnames: 0 names' clean/a clean/b

# Two files each define a file-local typedef of one name.
mkdir -p "$tmp/t1/a" "$tmp/t1/b"
echo 'typedef struct { int i; } frame_t;' >"$tmp/t1/a/one.c"
printf '\n\ntypedef struct frame_s {\n  long j;\n} frame_t;\n' >"$tmp/t1/b/two.c"
expect 1 '^struct name frame_t names 2 structs: t1/a/one.c:1, t1/b/two.c:3$' t1/a t1/b

# One tag with two bodies (a header and a .c file of another folder).
mkdir -p "$tmp/t2/a" "$tmp/t2/b"
echo 'struct gpd_backend_s { int id; };' >"$tmp/t2/a/backends.h"
echo 'struct gpd_backend_s { const char *name; };' >"$tmp/t2/b/profile.c"
expect 1 '^struct name gpd_backend_s names 2 structs' t2/a t2/b

# A typedef of a tag and a struct body that takes the typedef's name.
mkdir -p "$tmp/t3"
cat >"$tmp/t3/z.h" <<'EOF'
typedef struct gpd_a_s gpd_backend_t;
EOF
echo 'typedef struct { int n; } gpd_backend_t;' >"$tmp/t3/w.c"
expect 1 '^struct name gpd_backend_t names 2 structs: struct gpd_a_s \(opaque\), t3/w.c:1$' t3

# Two bodies of one name under different preprocessor branches.
mkdir -p "$tmp/t4"
printf '#ifdef A\ntypedef struct { int a; } site_t;\n#else\ntypedef struct { long b; } site_t;\n#endif\n' \
  >"$tmp/t4/p.c"
expect 1 'site_t names 2 structs: t4/p.c:2, t4/p.c:4' t4

# The duplicate is found only when both folders are scanned.
expect 0 '^structnames: 0 names' t1/a
# A folder that is not there is a usage error.
expect 2 'is not a folder' nothere

[ "$fail" = 0 ] && echo "layout.structnames_selftest: 7 crafted trees answered as expected"
exit "$fail"
