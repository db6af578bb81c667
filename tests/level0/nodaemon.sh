#!/usr/bin/env bash
# No daemon: the preloaded shim still turns the tracing layer on and
# creates its tracer, records nothing, and the program's output and exit
# status are those of a bare run.
source "$(dirname "$0")/../integration/lib.sh" "$1"
source "$(dirname "$0")/common.sh"
export ZE_ENABLE_ALT_DRIVERS=$FAKE
bare=$("$APP") || die "bare run failed"
out=$(preload "$T/no-such-daemon.sock" "$APP" 2>"$T/err") || { cat "$T/err"; die "run under the shim failed"; }
cat "$T/err"
[ "$out" = "$bare" ] || die "output changed under the shim: '$out' vs '$bare'"
echo "PASS level0.nodaemon"
