#!/usr/bin/env bash
# A real program nobody here wrote: clpeak --kernel-latency recorded end to
# end; its kernels lie below frames of clpeak's own module.
source "$(dirname "$0")/lib.sh" "$1"
have_opencl
command -v clpeak >/dev/null || { echo "SKIP: clpeak not installed"; exit 77; }
bare_rc=0
"$GPUPROF" record -o "$T/c.gpdb" -- clpeak --kernel-latency > "$T/out.txt" 2>"$T/err.txt" || bare_rc=$?
cat "$T/out.txt" "$T/err.txt"
[ $bare_rc -eq 0 ] || die "clpeak under record exited $bare_rc"
grep -qi "latency" "$T/out.txt" || die "clpeak printed no latency result"
$GPDQ "$T/c.gpdb" processes 1
$GPDQ "$T/c.gpdb" metric-positive GKER
$GPDQ "$T/c.gpdb" metric-positive GKER:COUNT
$GPDQ "$T/c.gpdb" module-under GKER /usr/bin/clpeak
$GPDQ "$T/c.gpdb" drops 0
echo "PASS clpeak"
