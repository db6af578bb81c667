# gpuprof merge tests (tests/merge/test_merge.py, docs/ANALYZER.md): exact
# statistics of known profiles, merge of one input = the input, threads =
# MPI ranks, bad inputs (newer format, truncated, other metric ids, not a
# profile) with and without --keep-going, --job / --uid selection and
# per-user contexts, `report --stats`, the Slurm epilog example (root), the GPU
# binaries and PC samples carried beside / into the merged file (gpubins).  merge.mpi runs 4 ranks under
# mpirun (label mpi) and SKIPs without mpirun or gpuprof-merge-mpi; merge.shards
# (mpi) the sharded output (files, readers, --single-file, more ranks than
# shards), merge.shardread (unit, so ASan too) the readers of sharded files
# and their refusals on a file split by tests/merge/gpdb.py.
find_program(GPD_PYTHON3_MERGE NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(GPD_MPIRUN mpirun)
if(GPD_PYTHON3_MERGE AND TARGET gpuprof_cli)
  foreach(case stats one threads bad select reportstats slurm mpi mpiranks shards shardread gpubins)
    add_test(NAME merge.${case}
      COMMAND ${GPD_PYTHON3_MERGE} ${CMAKE_CURRENT_LIST_DIR}/merge/test_merge.py
              --gpuprof $<TARGET_FILE:gpuprof_cli> $<$<BOOL:${GPD_MPIRUN}>:--mpirun=${GPD_MPIRUN}> ${case})
    set_tests_properties(merge.${case} PROPERTIES LABELS "unit" TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
  set_tests_properties(merge.mpi merge.mpiranks merge.shards PROPERTIES LABELS "mpi" TIMEOUT 180)
endif()
# merge.traces (tests/merge/traces.sh): two real recordings of ocl-gap
# (PoCL, CPU sampling) merged: every trace table's rows carried exactly under
# the renumbered profile ids, `gpuprof trace` of the merged file decoded with
# the Perfetto schema (both processes' tracks, exact kernel and flow counts).
add_test(NAME merge.traces COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/merge/traces.sh ${CMAKE_BINARY_DIR})
set_tests_properties(merge.traces PROPERTIES LABELS integration TIMEOUT 240 SKIP_RETURN_CODE 77
  ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache;GPD_IT_LIMIT=200")
