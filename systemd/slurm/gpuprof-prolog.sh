#!/bin/sh
# gpuprof-prolog.sh - Slurm (node) Prolog example: make sure gpuprofd is up
# before the job's tasks start.
#
# slurm.conf:   Prolog=/usr/share/gpuprofd/slurm/gpuprof-prolog.sh
#
# Runs as root on each allocated node.  A non-zero exit would DRAIN the
# node, so this script always exits 0: profiling must never cost a job.
# With gpuprofd.socket enabled nothing is needed (the first connection
# starts the daemon); this covers nodes where only the service is used.

if command -v systemctl >/dev/null 2>&1; then
  if ! systemctl is-active --quiet gpuprofd.socket &&
     ! systemctl is-active --quiet gpuprofd.service; then
    systemctl start gpuprofd.socket >/dev/null 2>&1 ||
      systemctl start gpuprofd.service >/dev/null 2>&1 ||
      logger -t gpuprof-prolog "gpuprofd could not be started; job runs unprofiled"
  fi
fi
exit 0
