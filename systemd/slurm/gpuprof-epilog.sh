#!/bin/sh
# gpuprof-epilog.sh - Slurm epilog example: at job end, merge the job's
# profiles onto a shared path (docs/ANALYZER.md, systemd/slurm/README.md).
#
# slurm.conf:   Epilog=/usr/share/gpuprofd/slurm/gpuprof-epilog.sh
#               EpilogSlurmctld=/usr/share/gpuprofd/slurm/gpuprof-epilog.sh  (optional)
# Settings (environment of slurmd / slurmctld, or /etc/default/gpuprof-epilog):
#   GPUPROF_JOB_DIR  shared folder; nothing is done when unset
#   GPUPROF_STORE    the node store (default /var/lib/gpuprofd/gpuprofd.gpdb)
#   GPUPROF_WAIT     seconds the controller waits for the node files (120)
#
# On each node (Epilog, root): the job's profiles of the job's user are
# merged out of the root-only node store into a private temporary folder,
# then written to $GPUPROF_JOB_DIR/<job>/<host>.gpdb *with the user's
# rights* (root never writes into a folder the user controls, and
# root-squashed NFS works).  On the controller (EpilogSlurmctld), once per
# job: when every node's file is there (or after GPUPROF_WAIT s), the node
# files are merged, as the user, into $GPUPROF_JOB_DIR/<job>.gpdb.  GPU
# binaries the profiles refer to go to <job>/gpubins beside the node files
# and then to $GPUPROF_JOB_DIR/gpubins beside the job file: that folder
# must be the user's own (a note in the merge's output otherwise), so
# give each user a GPUPROF_JOB_DIR of their own when jobs use PC sampling.
# Always exits 0: a failing epilog would drain the node.

[ -r /etc/default/gpuprof-epilog ] && . /etc/default/gpuprof-epilog
GPUPROF=${GPUPROF:-$(command -v gpuprof || echo /usr/bin/gpuprof)}
DIR=${GPUPROF_JOB_DIR:-}
JOB=${SLURM_JOB_ID:-}
JUID=${SLURM_JOB_UID:-}
[ -n "$DIR" ] && [ -n "$JOB" ] && [ -n "$JUID" ] || exit 0
case "$JOB$JUID" in *[!0-9]*) exit 0 ;; esac
JGID=${SLURM_JOB_GID:-$(id -g "$JUID" 2>/dev/null)}
[ -n "$JGID" ] || exit 0
log() { logger -t gpuprof-epilog "job $JOB: $*" 2>/dev/null || echo "gpuprof-epilog: job $JOB: $*" >&2; }
as_user() { setpriv --reuid="$JUID" --regid="$JGID" --init-groups --reset-env "$@"; }

if [ "${SLURM_SCRIPT_CONTEXT:-}" = epilog_slurmctld ]; then
  # the job-wide merge, once, as the user
  nodes=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null | wc -l)
  wait_s=${GPUPROF_WAIT:-120}
  i=0
  while [ "$i" -lt "$wait_s" ]; do
    have=$(as_user sh -c 'ls "$1"/*.gpdb 2>/dev/null | wc -l' _ "$DIR/$JOB")
    [ "$nodes" -gt 0 ] && [ "$have" -ge "$nodes" ] && break
    sleep 1
    i=$((i + 1))
  done
  # exit 3: written, some node file unreadable (named on stderr, logged)
  as_user sh -c 'cd "$2" && ls ./*.gpdb >/dev/null && exec "$1" merge -q --keep-going -o "../$3.gpdb" ./*.gpdb' \
      _ "$GPUPROF" "$DIR/$JOB" "$JOB" 2>"/tmp/gpuprof-epilog.$JOB.err"
  rc=$?
  [ $rc = 0 ] || log "job-wide merge into $DIR/$JOB.gpdb: exit $rc: $(head -c 300 "/tmp/gpuprof-epilog.$JOB.err")"
  rm -f "/tmp/gpuprof-epilog.$JOB.err"
  exit 0
fi

# node: this node's profiles of the job
STORE=${GPUPROF_STORE:-/var/lib/gpuprofd/gpuprofd.gpdb}
[ -f "$STORE" ] || exit 0
host=$(hostname -s 2>/dev/null || hostname)
tmp=$(mktemp -d /tmp/gpuprof-epilog.XXXXXX) || exit 0
if "$GPUPROF" merge -q --job "$JOB" --uid "$JUID" -o "$tmp/node.gpdb" "$STORE" 2>"$tmp/err"; then
  # root reads, the user writes: umask 077, a hidden name, renamed when complete
  # the GPU binaries its profiles refer to (merge put them in $tmp/gpubins)
  # go beside it first, unpacked by the user; the job-wide merge copies
  # them on beside $JOB.gpdb
  if [ -d "$tmp/gpubins" ]; then
    (cd "$tmp" && tar -cf - gpubins) | as_user sh -c 'umask 077; mkdir -p "$1/$2" && cd "$1/$2" &&
        exec tar -xf - --no-same-owner --no-same-permissions' _ "$DIR" "$JOB" ||
      log "cannot write the GPU binaries to $DIR/$JOB/gpubins as uid $JUID"
  fi
  as_user sh -c 'umask 077; mkdir -p "$1/$2" && cat > "$1/$2/.$3.tmp" && mv -f "$1/$2/.$3.tmp" "$1/$2/$3.gpdb"' \
      _ "$DIR" "$JOB" "$host" <"$tmp/node.gpdb" || log "cannot write $DIR/$JOB/$host.gpdb as uid $JUID"
else
  log "merge of $STORE failed: $(head -c 300 "$tmp/err")"
fi
rm -rf "$tmp"
exit 0
