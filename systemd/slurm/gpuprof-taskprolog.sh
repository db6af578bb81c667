#!/bin/sh
# gpuprof-taskprolog.sh - Slurm TaskProlog: attach every task to gpuprofd.
#
# slurm.conf:   TaskProlog=/usr/share/gpuprofd/slurm/gpuprof-taskprolog.sh
#
# Slurm runs this as the job's user, in the task's environment, before each
# task, and reads its stdout: a line "export NAME=value" sets NAME in the
# task (no shell expansion: values are printed literally).  We prepend the
# gpuprof shim to LD_PRELOAD, keeping what the user already preloads.
#
# Opt-out per job:  sbatch --export=ALL,GPUPROF_ATTACH=0 ...
# Other shim:       GPUPROF_SHIM=/path/libgpuprof.so
# This script never fails a task: on any problem it prints nothing, exit 0.

shim=${GPUPROF_SHIM:-/usr/lib/gpuprofd/libgpuprof.so}

case ${GPUPROF_ATTACH:-1} in
  0 | no | false | off) exit 0 ;;
esac
[ -r "$shim" ] || exit 0

case " ${LD_PRELOAD:-} " in
  *libgpuprof.so*) ;; # already attached (nested srun, user's own preload)
  *)
    # LD_PRELOAD accepts ':' or ' ' as separator; keep the user's entries.
    if [ -n "${LD_PRELOAD:-}" ]; then
      echo "export LD_PRELOAD=$shim:$LD_PRELOAD"
    else
      echo "export LD_PRELOAD=$shim"
    fi
    ;;
esac
# A non-default daemon socket configured on the node or by the job.
if [ -n "${GPUPROF_SOCKET:-}" ]; then
  echo "export GPUPROF_SOCKET=$GPUPROF_SOCKET"
fi
exit 0
