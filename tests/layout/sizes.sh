#!/usr/bin/env bash
# layout.sizes - issue 26's measured shape of the tree:
#   no .c file over 800 lines in shim/ daemon/ cli/ analyzer/ store/;
#   SQL statements (sqlite3_prepare*, sqlite3_exec) only under store/;
#   no dated measurement in the code's comments (a date YYYY-MM-DD or a
#   GPU model name in shim/ daemon/ cli/ analyzer/ store/ common/: dates,
#   machines and measurements go in docs/, STYLE.md).
# Usage: sizes.sh TOP.  Prints each offence; exit 1 if any, else 0.
set -euo pipefail
top=$1
cd "$top"
bad=0
while read -r n f; do
  [ "$f" = total ] && continue
  if [ "$n" -gt 800 ]; then
    echo "layout.sizes: $f has $n lines (at most 800)"
    bad=1
  fi
done < <(find shim daemon cli analyzer store -name '*.c' -print0 | xargs -0 wc -l)
if grep -rn --include='*.c' --include='*.h' -E 'sqlite3_(prepare|exec)' \
     shim daemon cli analyzer common; then
  echo "layout.sizes: SQL outside store/ (lines above)"
  bad=1
fi
if grep -rn --include='*.c' --include='*.h' -E '\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b|\b[HAVB]100\b|\bH200\b' \
     shim daemon cli analyzer store common; then
  echo "layout.sizes: dates or machines in code comments (lines above): they belong in docs/"
  bad=1
fi
nfiles=$(find shim daemon cli analyzer store -name '*.c' | wc -l)
[ "$bad" = 0 ] && echo "layout.sizes: $nfiles files, each at most 800 lines; SQL only under store/; no dated measurements in code"
exit "$bad"
