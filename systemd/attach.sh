#!/bin/sh
# attach.sh - attach programs to gpuprofd from any launcher.
#
# Source it (sh, bash, zsh) to set the environment for what follows:
#     . /usr/share/gpuprofd/attach.sh
#     mpirun -x LD_PRELOAD -x GPUPROF_SOCKET ./app      # Open MPI
#     mpiexec -genvlist LD_PRELOAD,GPUPROF_SOCKET ./app  # MPICH / Hydra
# or run it as a wrapper (per rank, works with any launcher):
#     mpirun -np 4 /usr/share/gpuprofd/attach.sh ./app args
#
# It prepends the shim to LD_PRELOAD (keeping existing entries, never
# twice) and exports GPUPROF_SOCKET (default /run/gpuprofd/gpuprofd.sock).
# Knobs: GPUPROF_SHIM (shim path), GPUPROF_ATTACH=0 (do nothing).
# If the shim is not installed nothing changes: programs run unprofiled.

gpuprof_attach() {
  _gpd_shim=${GPUPROF_SHIM:-/usr/lib/gpuprofd/libgpuprof.so}
  case ${GPUPROF_ATTACH:-1} in
    0 | no | false | off) return 0 ;;
  esac
  [ -r "$_gpd_shim" ] || return 0
  case " ${LD_PRELOAD:-} " in
    *libgpuprof.so*) ;;
    *) LD_PRELOAD="$_gpd_shim${LD_PRELOAD:+:$LD_PRELOAD}" ;;
  esac
  GPUPROF_SOCKET=${GPUPROF_SOCKET:-/run/gpuprofd/gpuprofd.sock}
  export LD_PRELOAD GPUPROF_SOCKET
  unset _gpd_shim
  return 0
}

gpuprof_attach
# Executed (not sourced) with a command: run it attached.
case ${0##*/} in
  attach.sh)
    if [ $# -gt 0 ]; then exec "$@"; fi
    ;;
esac
