# Analyzer benchmark: bench-merge (gpuprof merge throughput per core,
# 1 -> N MPI rank efficiency, sparse vs dense size; docs/PERFORMANCE.md).
if(TARGET gpd_merge)
  add_executable(bench-merge ${CMAKE_CURRENT_LIST_DIR}/bench-merge.c)
  target_link_libraries(bench-merge PRIVATE gpd_common gpd_store_fixture)
  set_target_properties(bench-merge PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
