#!/bin/sh
# run-bounded.sh BUILD_DIR SECONDS - run every libFuzzer target for SECONDS
# from its seed corpus (copied to a scratch dir, the source tree stays
# untouched).  Exits non-zero when a target crashes; the crash input is left
# in BUILD_DIR/fuzz-out/<target>/ (copy it to fuzz/regressions/<target>/).
set -u
build=${1:?usage: run-bounded.sh BUILD_DIR SECONDS}
secs=${2:?usage: run-bounded.sh BUILD_DIR SECONDS}
here=$(cd "$(dirname "$0")" && pwd)
status=0
# the daemon's decoders of client bytes (frames, ring records), then the
# analyzer's (GPU binaries, merge parts)
for t in fuzz-frame fuzz-record fuzz-cubin fuzz-mpart fuzz-advisor; do
  bin=$build/bin/$t
  if [ ! -x "$bin" ]; then
    echo "run-bounded: $bin missing (configure with -DGPD_FUZZ=ON -DCMAKE_C_COMPILER=clang)" >&2
    status=1
    continue
  fi
  out=$build/fuzz-out/$t
  mkdir -p "$out/corpus"
  cp "$here/corpus/$t/"* "$out/corpus/" 2>/dev/null
  echo "== $t: ${secs}s"
  if ! "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -artifact_prefix="$out/" \
      -print_final_stats=1 "$out/corpus" > "$out/log.txt" 2>&1; then
    echo "run-bounded: $t FAILED (see $out/log.txt; crash input in $out/)" >&2
    tail -30 "$out/log.txt" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$out/log.txt" | tail -2
  fi
done
exit $status
