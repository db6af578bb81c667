# CUDA overhead benchmarks (run on a GPU machine; docs/PERFORMANCE-CUDA.md):
#   bin/launch-bound  - µs per launch of an empty kernel
#   lib/libgpd-min-tracer.so - minimal CUPTI tracer (CUDA_INJECTION64_PATH):
#                       the same callbacks and activity kinds, no work.
if(NOT GPD_HAVE_CUPTI)
  return()
endif()
find_library(CUPTI_LIBRARY cupti HINTS /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64)
if(CUPTI_LIBRARY)
  add_library(gpd_min_tracer SHARED ${CMAKE_CURRENT_SOURCE_DIR}/cuda/min-tracer.c
              ${CMAKE_SOURCE_DIR}/shim/cupti/cupti-translate.c
              ${CMAKE_SOURCE_DIR}/shim/cupti/cupti-occupancy.c)
  target_include_directories(gpd_min_tracer PRIVATE ${CMAKE_SOURCE_DIR}/shim/cupti
    ${CMAKE_SOURCE_DIR}/common/include ${CUPTI_INCLUDE_DIR} ${CUDA_INCLUDE_DIR})
  target_link_libraries(gpd_min_tracer PRIVATE ${CUPTI_LIBRARY})
  set_target_properties(gpd_min_tracer PROPERTIES OUTPUT_NAME gpd-min-tracer
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
endif()
if(NVCC)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/bin/launch-bound
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bin
    COMMAND ${NVCC} -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
            -O2 -lineinfo --cudart shared -o ${CMAKE_BINARY_DIR}/bin/launch-bound
            ${CMAKE_CURRENT_SOURCE_DIR}/cuda/launch-bound.cu
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/launch-bound.cu VERBATIM)
  add_custom_target(gpd_cuda_bench ALL DEPENDS ${CMAKE_BINARY_DIR}/bin/launch-bound)
endif()
