#!/usr/bin/env bash
# Man pages and bash completion (man/): installed by `cmake --install`
# (component doc) into a private prefix; every page renders without a
# groff warning and names every option its program's --help lists (the
# page is made from that text); the completion, sourced in bash, completes
# commands from `gpuprof --help`, a command's options from its --help,
# --format values and gpuprofd's options.
set -euo pipefail
B=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
die() { echo "FAIL: $*"; exit 1; }
command -v groff >/dev/null || { echo "SKIP: no groff"; exit 77; }
cmake --install "$B" --prefix "$T/inst" --component doc >/dev/null || die "install failed"
M=$T/inst/share/man
C=$T/inst/share/bash-completion/completions
G=$B/bin/gpuprof
for p in "$M/man1/gpuprof.1" "$M/man8/gpuprofd.8" "$C/gpuprof" "$C/gpuprofd"; do
  [ -s "$p" ] || die "not installed: $p"
done
check_page() { # PAGE HELP-COMMAND...
  local page=$1; shift
  groff -man -Tutf8 -ww -z "$page" 2>"$T/warn" || die "groff failed on $page"
  [ ! -s "$T/warn" ] || die "groff warnings on $page: $(cat "$T/warn")"
  local text opts
  text=$(groff -man -Tascii -P-cbou "$page" 2>/dev/null | tr -s ' \n' '  ')
  opts=$("$@" | grep -oE -- '(^|[ [(|])--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*' | sort -u)
  for o in $opts; do
    grep -qF -- "$o" <<<"$text" || die "$page lacks $o (in \`$*\`)"
  done
}
check_page "$M/man1/gpuprof.1" "$G" --help
n=0
for c in record report export view merge advise ps top tree devices sample trace; do
  check_page "$M/man1/gpuprof-$c.1" "$G" "$c" --help
  n=$((n + 1))
done
check_page "$M/man8/gpuprofd.8" "$B/bin/gpuprofd" --help
grep -q '^\.SH OPTIONS' "$M/man1/gpuprof-report.1" || die "gpuprof-report.1 has no OPTIONS section"
# completion
complete_words() { # WORDS... -> the candidates for the last word
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '"$2"'; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$3" "${@:4}"
}
got=$(PATH="$B/bin:$PATH" complete_words x _gpuprof "$C/gpuprof" gpuprof rep)
[ "$got" = report ] || die "gpuprof rep<TAB>: '$got'"
got=$(PATH="$B/bin:$PATH" complete_words x _gpuprof "$C/gpuprof" gpuprof report --st)
[ "$got" = --stats ] || die "gpuprof report --st<TAB>: '$got'"
got=$(PATH="$B/bin:$PATH" complete_words x _gpuprof "$C/gpuprof" gpuprof trace --format "" | sort | paste -sd' ')
[ "$got" = "chrome perfetto" ] || die "gpuprof trace --format <TAB>: '$got'"
got=$(PATH="$B/bin:$PATH" complete_words x _gpuprofd "$C/gpuprofd" gpuprofd --ver)
[ "$got" = --version ] || die "gpuprofd --ver<TAB>: '$got'"
echo "PASS cli.man: $((n + 2)) pages, completion"
