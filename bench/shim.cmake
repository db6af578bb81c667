# Shim benchmarks: capture cost per call; OpenCL launch overhead.
add_executable(bench-capture ${CMAKE_CURRENT_LIST_DIR}/bench-capture.c)
target_compile_options(bench-capture PRIVATE -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls)
target_include_directories(bench-capture PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../shim)
target_link_libraries(bench-capture PRIVATE gpuprof gpd_common PkgConfig::UNWIND Threads::Threads)
set_target_properties(bench-capture PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

if(OpenCL_FOUND AND TARGET ocl-loop)
  add_executable(bench-opencl-overhead ${CMAKE_CURRENT_LIST_DIR}/bench-opencl-overhead.c)
  set_target_properties(bench-opencl-overhead PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  add_dependencies(bench-opencl-overhead ocl-loop gpuprof)
endif()

# Python frame capture (bench-python.py loads it through ctypes).
add_library(bench-python SHARED ${CMAKE_CURRENT_LIST_DIR}/bench-python.c)
target_include_directories(bench-python PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../shim)
target_link_libraries(bench-python PRIVATE gpuprof gpd_common Threads::Threads)
set_target_properties(bench-python PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

# CPU-time sampling: cost per sample and slowdown of a CPU loop (docs/PERFORMANCE.md).
add_executable(bench-cpusample ${CMAKE_CURRENT_LIST_DIR}/bench-cpusample.c)
target_compile_options(bench-cpusample PRIVATE -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls)
target_link_libraries(bench-cpusample PRIVATE gpuprof gpd_common Threads::Threads)
set_target_properties(bench-cpusample PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

# Training-loop shape: 64 ops per step, deep non-repeating native stacks
# under Python frames (bench-torchloop.py loads it through ctypes).
add_library(bench-torchloop SHARED ${CMAKE_CURRENT_LIST_DIR}/bench-torchloop.c)
target_compile_options(bench-torchloop PRIVATE -O2 -fomit-frame-pointer -fno-optimize-sibling-calls)
target_include_directories(bench-torchloop PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../shim)
target_link_libraries(bench-torchloop PRIVATE gpuprof gpd_common Threads::Threads)
set_target_properties(bench-torchloop PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

# NVTX ranges: push/pop and a GPU operation's capture inside ranges, with
# the no-injection baseline in the same run (docs/NVTX.md).
if(GPD_NVTX_INCLUDE_DIR)
  add_executable(bench-nvtx ${CMAKE_CURRENT_LIST_DIR}/bench-nvtx.c)
  target_compile_options(bench-nvtx PRIVATE -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls)
  target_include_directories(bench-nvtx PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../shim ${CMAKE_BINARY_DIR}/nvtx-include)
  target_link_libraries(bench-nvtx PRIVATE gpuprof gpd_common Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(bench-nvtx PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
