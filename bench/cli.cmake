# Benchmarks of the CLI area: bench-tracewrite (`gpuprof trace`'s writers
# on a synthetic 1 M-event trace with 43-frame call paths: bytes per GPU
# event and write time, against the writer of commit 3c01d39 compiled from
# git history as the baseline when the source tree is a git checkout; its
# gpd_xgap_t.via_sync is .cpu since, with 1 = waiting as then; gpd_xtrace_idle
# is gpd_idle_xtrace since).
set(GPD_TW_BEFORE ${CMAKE_CURRENT_BINARY_DIR}/trace-write-before.c)
execute_process(COMMAND git -C ${CMAKE_SOURCE_DIR} show 3c01d39:cli/trace-write.c
  OUTPUT_FILE ${GPD_TW_BEFORE} RESULT_VARIABLE GPD_TW_RC ERROR_QUIET)
add_executable(bench-tracewrite ${CMAKE_CURRENT_LIST_DIR}/bench-tracewrite.c)
target_link_libraries(bench-tracewrite PRIVATE gpd_cli)
set_target_properties(bench-tracewrite PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
if(GPD_TW_RC EQUAL 0)
  target_sources(bench-tracewrite PRIVATE ${GPD_TW_BEFORE})
  set_source_files_properties(${GPD_TW_BEFORE} PROPERTIES COMPILE_DEFINITIONS
    "gpd_xtrace_write_perfetto=gpd_bench_before_perfetto;gpd_xtrace_write_chrome=gpd_bench_before_chrome;gpd_xtrace_idle=gpd_idle_xtrace;via_sync=cpu")
  target_compile_definitions(bench-tracewrite PRIVATE GPD_BENCH_BEFORE=1)
endif()
