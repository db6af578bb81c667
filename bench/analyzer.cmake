# Benchmarks of the analyzer area: bench-dccg (GPU calling contexts of a
# 2 000-function, >= 500 000-context call graph: DCCG vs tree form).
add_executable(bench-dccg ${CMAKE_CURRENT_LIST_DIR}/bench-dccg.c)
target_link_libraries(bench-dccg PRIVATE gpd_gpu_analysis)
target_compile_options(bench-dccg PRIVATE -O2)
set_target_properties(bench-dccg PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
