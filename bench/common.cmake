# Benchmarks of the common area: bench-ring (cross-process ring throughput,
# consumer ingest, memcpy and pipe baselines).  Run: bin/bench-ring [-n N].
add_executable(bench-ring ${CMAKE_CURRENT_LIST_DIR}/bench-ring.c)
target_link_libraries(bench-ring PRIVATE gpd_common)
target_compile_options(bench-ring PRIVATE -O2)
set_target_properties(bench-ring PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
