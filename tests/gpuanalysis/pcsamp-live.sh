#!/usr/bin/env bash
# GPU PC samples in the live `gpuprof tree` / `gpuprof top`: a fake shim
# process (pcsamp-live-app.c: its header gives the numbers) pushes kernel
# launches and PCSAMPLE records through a real gpuprofd's rings; the tree
# (--json and text, with and without --gpu-detail) shows exact GINST and
# GINST:STL_* on the two kernel contexts (shared 3:1 by GKER), SASS counts
# and "_not_issued" subsets not counted, the never-launched kernel not
# shown; top shows GINST 120 on the kernel's row; another uid sees none of it.
source "$(dirname "$0")/../integration/lib.sh" "$1"
APP=$(app pcsamp-live-app)
CHECK=$(dirname "$0")/check-pcsamp-live.py
chmod 0755 "$T"
mkdir -m 0777 "$T/sock"
S=$T/sock/gpd.sock
start_daemon "$S" "$T/node.gpdb"
"$APP" "$S" >"$T/app.out" 2>&1 &
APP_PID=$!
wait_for "$WAIT" "the fake process pushed its records" grep -q READY "$T/app.out"
# the daemon consumes the rings on its own schedule: wait for the samples
wait_for "$WAIT" "PC samples in the live tree" \
  sh -c "'$GPUPROF' --socket '$S' tree --pid $APP_PID --json | '$PY' '$CHECK' tree"

"$GPUPROF" --socket "$S" tree --json >"$T/all.json"
$PY "$CHECK" tree <"$T/all.json" || die "merged tree (no --pid): $(head -c 2000 "$T/all.json")"
"$GPUPROF" --socket "$S" tree --pid "$APP_PID" --gpu-detail --json >"$T/detail.json"
$PY "$CHECK" detail <"$T/detail.json" || die "tree --gpu-detail --json"

"$GPUPROF" --socket "$S" tree --pid "$APP_PID" >"$T/tree.txt"
grep -q "GINST" "$T/tree.txt" || die "no GINST column: $(cat "$T/tree.txt")"
# the kernel lines: GINST is the last column (90 and 30 of 120 samples)
grep -E "_Z10pcs_kernelPfi|pcs_kernel" "$T/tree.txt" | grep -qE "[[:space:]]90\b" ||
  die "kernel line without GINST 90: $(cat "$T/tree.txt")"
"$GPUPROF" --socket "$S" tree --pid "$APP_PID" --gpu-detail >"$T/detail.txt"
grep -q "GINST:STL_GMEM" "$T/detail.txt" && grep -q "GINST:STL_NONE" "$T/detail.txt" ||
  die "no stall breakdown below the kernels: $(cat "$T/detail.txt")"
! grep -q "GINST:STL_OTHR" "$T/detail.txt" || die "an exec count or subset counted as a stall"
# sorted by GINST (as report --gpu-detail): each kernel's GMEM line before its NONE line
[ "$(grep -oE "GINST:STL_(GMEM|NONE)" "$T/detail.txt" | tr '\n' ' ')" = \
  "GINST:STL_GMEM GINST:STL_NONE GINST:STL_GMEM GINST:STL_NONE " ] ||
  die "stall lines not sorted by GINST: $(cat "$T/detail.txt")"

"$GPUPROF" --socket "$S" top --pid "$APP_PID" >"$T/top.txt"
grep -q "GINST" "$T/top.txt" || die "top without a GINST column: $(cat "$T/top.txt")"
grep -E "pcs_kernel" "$T/top.txt" | grep -qE "[[:space:]]120[[:space:]]" ||
  die "top: kernel row without GINST 120: $(cat "$T/top.txt")"

# another uid: sees no process, no kernel, no samples
setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/ \
  "$GPUPROF" --socket "$S" tree --json >"$T/other.json" 2>"$T/other.err" ||
  die "another uid's tree failed: $(cat "$T/other.err")"
$PY "$CHECK" none <"$T/other.json" || die "another uid sees PC samples"
setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/ \
  "$GPUPROF" --socket "$S" top >"$T/other-top.txt" 2>&1 || true
! grep -qE "GINST|pcs_kernel" "$T/other-top.txt" || die "another uid's top: $(cat "$T/other-top.txt")"

kill -TERM "$APP_PID"
wait_exit "$APP_PID" "the fake process"
echo "PASS: live GINST (tree --json/text/--gpu-detail, top, other uid)"
