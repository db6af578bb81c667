# tests/nvtx.cmake - NVTX ranges as calling contexts (shim/nvtx/,
# docs/NVTX.md): nvtx-known (tests/nvtx/nvtx-known.c), an OpenCL program
# built with the real NVTX v3 headers (the header-only client from the CUDA
# toolkit's include/nvtx3, found by shim/CMakeLists.txt), run on PoCL under
# `gpuprof record`: kernel counts under each range node exact
# (tests/nvtx/check.py); nvtx-py.py, the same from Python (ctypes).  Without the headers or OpenCL the program is not
# built and the tests SKIP.
set(GPD_NVTX_T ${CMAKE_CURRENT_LIST_DIR}/nvtx)
if(OpenCL_FOUND AND GPD_NVTX_INCLUDE_DIR)
  add_executable(nvtx-known ${GPD_NVTX_T}/nvtx-known.c)
  # frame pointers, no inlining: the test names the functions the ranges
  # sit between
  target_compile_options(nvtx-known PRIVATE -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls)
  target_include_directories(nvtx-known PRIVATE ${CMAKE_BINARY_DIR}/nvtx-include ${CMAKE_CURRENT_LIST_DIR}/apps
    ${OpenCL_INCLUDE_DIRS})
  target_link_libraries(nvtx-known PRIVATE ${OpenCL_LIBRARIES} Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(nvtx-known PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/nvtx)
  # libnvtx-py.so: NVTX and OpenCL for tests/nvtx/nvtx-py.py through ctypes
  # (as torch._C is for torch.cuda.nvtx and torch's operations)
  add_library(nvtx-py SHARED ${GPD_NVTX_T}/nvtx-py.c)
  target_include_directories(nvtx-py PRIVATE ${CMAKE_BINARY_DIR}/nvtx-include ${CMAKE_CURRENT_LIST_DIR}/apps
    ${OpenCL_INCLUDE_DIRS})
  target_link_libraries(nvtx-py PRIVATE ${OpenCL_LIBRARIES} ${CMAKE_DL_LIBS})
  set_target_properties(nvtx-py PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/nvtx)
endif()
# known: the exact table; off: GPUPROF_NVTX=0 (no range node, same counts);
# other: another tool's NVTX_INJECTION64_PATH left alone; py: ranges pushed
# from Python, placed between its frames
foreach(t known off other py)
  add_test(NAME nvtx.${t} COMMAND bash ${GPD_NVTX_T}/nvtx.sh ${CMAKE_BINARY_DIR} ${t})
  set_tests_properties(nvtx.${t} PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "GPD_IT_LIMIT=100;POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache")
endforeach()
