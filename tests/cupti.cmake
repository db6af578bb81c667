# CUDA / CUPTI back end tests (shim/cupti).  No GPU in CI: unit tests of the
# pure translation and occupancy code, and a real nvcc-built CUDA program run
# with no driver (with the stub shim, and under `gpuprof record`).
if(NOT GPD_HAVE_CUPTI)
  return()
endif()

set(GPD_CUPTI_SRC ${CMAKE_SOURCE_DIR}/shim/cupti)
set(GPD_CUPTI_INCS ${GPD_CUPTI_SRC} ${CMAKE_SOURCE_DIR}/shim ${CMAKE_SOURCE_DIR}/common/include
    ${CUPTI_INCLUDE_DIR} ${CUDA_INCLUDE_DIR})

if(CMOCKA_FOUND)
  foreach(t translate occupancy)
    add_executable(test-cupti-${t} ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-${t}.c
                   ${GPD_CUPTI_SRC}/cupti-translate.c ${GPD_CUPTI_SRC}/cupti-occupancy.c)
    target_include_directories(test-cupti-${t} PRIVATE ${GPD_CUPTI_INCS})
    target_link_libraries(test-cupti-${t} PRIVATE PkgConfig::CMOCKA)
    add_test(NAME cupti.${t} COMMAND test-cupti-${t})
    set_tests_properties(cupti.${t} PROPERTIES LABELS "unit" TIMEOUT 30 SKIP_RETURN_CODE 77)
  endforeach()
  # GPUPROF_CUDA_TRACE modes, duty schedule and estimator (pure).
  add_executable(test-cupti-mode ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-mode.c ${GPD_CUPTI_SRC}/cupti-mode.c)
  target_include_directories(test-cupti-mode PRIVATE ${GPD_CUPTI_INCS})
  target_link_libraries(test-cupti-mode PRIVATE gpd_common PkgConfig::CMOCKA m)
  add_test(NAME cupti.mode COMMAND test-cupti-mode)
  set_tests_properties(cupti.mode PROPERTIES LABELS "unit" TIMEOUT 30)
  # GRAPHNODE_CREATED / _CLONED callbacks -> GRAPHNODE records (the pure
  # handler of cupti-graph.c, with stand-ins for libcupti and the shim).
  add_executable(test-cupti-graph ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-graph.c ${GPD_CUPTI_SRC}/cupti-graph.c)
  target_include_directories(test-cupti-graph PRIVATE ${GPD_CUPTI_INCS})
  target_compile_definitions(test-cupti-graph PRIVATE GPD_CUPTI_GRAPH_PURE=1)
  target_link_libraries(test-cupti-graph PRIVATE gpd_common PkgConfig::CMOCKA)
  add_test(NAME cupti.graph COMMAND test-cupti-graph)
  set_tests_properties(cupti.graph PROPERTIES LABELS "unit" TIMEOUT 30)
  add_executable(test-cupti-sassdec ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-sassdec.c
                 ${GPD_CUPTI_SRC}/cupti-sassdec.c)
  target_include_directories(test-cupti-sassdec PRIVATE ${GPD_CUPTI_INCS})
  target_link_libraries(test-cupti-sassdec PRIVATE PkgConfig::CMOCKA)
  add_test(NAME cupti.sassdec COMMAND test-cupti-sassdec)
  set_tests_properties(cupti.sassdec PROPERTIES LABELS "unit" TIMEOUT 30)
endif()

# The CUDA back end with a counting stand-in for the shim core: GPU
# self-test without the daemon (docs/CUDA.md), and the no-driver test here.
add_library(gpd_cupti_selftest SHARED ${CMAKE_CURRENT_SOURCE_DIR}/cupti/cupti-stub-shim.c
            ${GPD_CUPTI_SRC}/cupti-api.c ${GPD_CUPTI_SRC}/cupti-count.c ${GPD_CUPTI_SRC}/cupti-funcs.c ${GPD_CUPTI_SRC}/cupti-graph.c ${GPD_CUPTI_SRC}/cupti-translate.c ${GPD_CUPTI_SRC}/cupti-whole.c
            ${GPD_CUPTI_SRC}/cupti-occupancy.c ${GPD_CUPTI_SRC}/cupti-wrappers.c
            ${GPD_CUPTI_SRC}/cupti-pcsampling.c ${GPD_CUPTI_SRC}/cupti-sass.c ${GPD_CUPTI_SRC}/cupti-sassdec.c ${GPD_CUPTI_SRC}/cupti-mode.c
            ${GPD_CUPTI_SRC}/cupti-control.c ${CMAKE_SOURCE_DIR}/shim/stats.c ${CMAKE_SOURCE_DIR}/common/duty.c)
target_include_directories(gpd_cupti_selftest PRIVATE ${GPD_CUPTI_INCS})
target_compile_definitions(gpd_cupti_selftest PRIVATE GPD_HAVE_CUPTI=1)
target_link_libraries(gpd_cupti_selftest PRIVATE ${CMAKE_DL_LIBS} Threads::Threads m)
set_target_properties(gpd_cupti_selftest PROPERTIES
  OUTPUT_NAME gpd-cupti-selftest LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

# The counting interposers of libcudart's launch, copy and memset calls
# (shim/cupti/cupti-count.c) against a stand-in libcudart.so.13 built here
# (symbol version libcudart.so.13, like NVIDIA's): the program, linked
# against the fake and run with libgpuprof.so preloaded, checks every
# return value (computed from every argument), the fake's call count and
# the shim's counters exactly (4 threads included).
add_library(gpd_fake_cudart SHARED ${CMAKE_CURRENT_SOURCE_DIR}/cupti/fake-cudart.c)
target_include_directories(gpd_fake_cudart PRIVATE ${CUDA_INCLUDE_DIR})
target_link_options(gpd_fake_cudart PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/cupti/fake-cudart.map)
set_target_properties(gpd_fake_cudart PROPERTIES OUTPUT_NAME cudart SOVERSION 13
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cudart)
add_executable(count-app ${CMAKE_CURRENT_SOURCE_DIR}/cupti/count-app.c)
target_include_directories(count-app PRIVATE ${CUDA_INCLUDE_DIR})
target_link_libraries(count-app PRIVATE gpd_fake_cudart Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(count-app PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cudart)
# Two runtimes in one process: a library linked against a stand-in
# libcudart.so.12 (version libcudart.so.12, values + 100) beside the
# program's libcudart.so.13; each call must reach its caller's runtime.
add_library(gpd_fake_cudart12 SHARED ${CMAKE_CURRENT_SOURCE_DIR}/cupti/fake-cudart.c)
target_compile_definitions(gpd_fake_cudart12 PRIVATE FAKE_CUDART12)
target_include_directories(gpd_fake_cudart12 PRIVATE ${CUDA_INCLUDE_DIR})
target_link_options(gpd_fake_cudart12 PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/cupti/fake-cudart12.map)
set_target_properties(gpd_fake_cudart12 PROPERTIES OUTPUT_NAME cudart SOVERSION 12
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cudart12)
add_library(gpd_caller12 SHARED ${CMAKE_CURRENT_SOURCE_DIR}/cupti/caller12.c)
target_include_directories(gpd_caller12 PRIVATE ${CUDA_INCLUDE_DIR})
target_link_libraries(gpd_caller12 PRIVATE gpd_fake_cudart12)
set_target_properties(gpd_caller12 PROPERTIES OUTPUT_NAME caller12
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cudart12)
add_executable(count-app2 ${CMAKE_CURRENT_SOURCE_DIR}/cupti/count-app.c)
target_compile_definitions(count-app2 PRIVATE TWO_CUDARTS)
target_include_directories(count-app2 PRIVATE ${CUDA_INCLUDE_DIR})
target_link_libraries(count-app2 PRIVATE gpd_fake_cudart gpd_caller12 Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(count-app2 PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cudart)
# The CUDA 12 library dlopen'ed after the first launches (a late plugin).
add_executable(count-app3 ${CMAKE_CURRENT_SOURCE_DIR}/cupti/count-app.c)
target_compile_definitions(count-app3 PRIVATE "LATE_CUDART=\"$<TARGET_FILE:gpd_caller12>\"")
target_include_directories(count-app3 PRIVATE ${CUDA_INCLUDE_DIR})
target_link_libraries(count-app3 PRIVATE gpd_fake_cudart Threads::Threads ${CMAKE_DL_LIBS})
add_dependencies(count-app3 gpd_caller12)
set_target_properties(count-app3 PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cudart)
add_test(NAME cupti.count COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-count.sh
  $<TARGET_FILE:gpuprof> $<TARGET_FILE:count-app> $<TARGET_FILE:count-app2> $<TARGET_FILE:count-app3>)
set_tests_properties(cupti.count PROPERTIES LABELS "integration" TIMEOUT 60)
# CUDA graphs through the real shim, its CUDA back end and a real daemon
# on a stand-in libcuda/libcupti (fake-cupti.c, named by
# GPUPROF_CUPTI_PATH): graph-app's replays below <graph replay> under the
# functions that created the nodes (test-cupti-graphs.sh).
add_library(gpd_fake_cupti SHARED ${CMAKE_CURRENT_SOURCE_DIR}/cupti/fake-cupti.c)
target_include_directories(gpd_fake_cupti PRIVATE ${CUPTI_INCLUDE_DIR} ${CUDA_INCLUDE_DIR})
target_link_libraries(gpd_fake_cupti PRIVATE Threads::Threads)
set_target_properties(gpd_fake_cupti PROPERTIES OUTPUT_NAME cuda SOVERSION 1
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cupti)
add_executable(graph-app ${CMAKE_CURRENT_SOURCE_DIR}/cupti/graph-app.c)
target_link_libraries(graph-app PRIVATE gpd_fake_cupti)
target_include_directories(graph-app PRIVATE ${CUDA_INCLUDE_DIR})
target_compile_options(graph-app PRIVATE -O0 -g -fno-omit-frame-pointer)
set_target_properties(graph-app PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cupti)
add_test(NAME cupti.graphs COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-graphs.sh ${CMAKE_BINARY_DIR}
  $<TARGET_FILE:graph-app> $<TARGET_FILE:gpd_fake_cupti>)
set_tests_properties(cupti.graphs PROPERTIES LABELS "integration" TIMEOUT 120 SKIP_RETURN_CODE 77)
# Graphs built between duty windows (CUPTI finalized), replayed in a later
# window (test-cupti-graphs-window.sh): stream capture, the explicit graph
# API, and the daemon's default duty policy with no environment.
foreach(t capture create policy)
  set(how ${t})
  set(name graphs-window-${t})
  set(extra "")
  if(t STREQUAL capture)
    set(name graphs-window)
  elseif(t STREQUAL policy)
    set(how capture)
    set(name graphs-policy)
    set(extra policy)
  endif()
  add_test(NAME cupti.${name} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-graphs-window.sh
    ${CMAKE_BINARY_DIR} $<TARGET_FILE:graph-app> $<TARGET_FILE:gpd_fake_cupti> ${how} ${extra})
  set_tests_properties(cupti.${name} PROPERTIES LABELS "integration" TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
# The duty-cycle estimate against known truth (test-cupti-duty.sh):
# duty-app's counted runtime launches, kernels still running at each
# window's end (fake-cupti.c's FAKE_CUPTI_KERNEL_MS).
add_executable(duty-app ${CMAKE_CURRENT_SOURCE_DIR}/cupti/duty-app.c)
target_include_directories(duty-app PRIVATE ${CUDA_INCLUDE_DIR})
target_link_libraries(duty-app PRIVATE gpd_fake_cupti)
target_compile_options(duty-app PRIVATE -O0 -g -fno-omit-frame-pointer)
set_target_properties(duty-app PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cupti)
add_test(NAME cupti.duty COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-duty.sh ${CMAKE_BINARY_DIR}
  $<TARGET_FILE:duty-app> $<TARGET_FILE:gpd_fake_cupti>)
set_tests_properties(cupti.duty PROPERTIES LABELS "integration" TIMEOUT 120 SKIP_RETURN_CODE 77)
# Another tool holding CUPTI (test-cupti-busy.sh): fake-cupti.c refuses
# cuptiSubscribe while a file exists; busy-app under the real shim and a
# real daemon with a duty policy: busy windows in ps / policy, then
# windows trace again, the application unharmed.
add_executable(busy-app ${CMAKE_CURRENT_SOURCE_DIR}/cupti/busy-app.c)
target_link_libraries(busy-app PRIVATE gpd_fake_cupti)
set_target_properties(busy-app PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake-cupti)
add_test(NAME cupti.busy COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-busy.sh ${CMAKE_BINARY_DIR}
  $<TARGET_FILE:busy-app> $<TARGET_FILE:gpd_fake_cupti>)
set_tests_properties(cupti.busy PROPERTIES LABELS "integration" TIMEOUT 180 SKIP_RETURN_CODE 77)
# Rotating PC-sampling windows of the node policy (test-cupti-pcrotate.sh,
# daemon/pcrotate.c): three busy-apps on fake-cupti.c under a real daemon
# with pc_window_ms / pc_period_s: windows in turn, one at a time, a busy
# process skipped, the estimate in ps / policy / tree, exact counts.
add_test(NAME cupti.pcrotate COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-pcrotate.sh ${CMAKE_BINARY_DIR}
  $<TARGET_FILE:busy-app> $<TARGET_FILE:gpd_fake_cupti>)
set_tests_properties(cupti.pcrotate PROPERTIES LABELS "integration" TIMEOUT 180 SKIP_RETURN_CODE 77)
# tests/cuda/torch-turns.py (the GPU machine's cost driver: turns, long
# runs, the tables' intervals) with stand-in workers of known costs, the
# non-bare ones under the real gpuprof record (no GPU needed)
add_test(NAME cupti.turns COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-turns.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cupti.turns PROPERTIES LABELS "integration" TIMEOUT 120 SKIP_RETURN_CODE 77)

# CUDA test programs, built with nvcc for sm_90 (+ compute_90 PTX), shared
# cudart (so that the shim sees a CUDA program before its first call).
set(GPD_NVCC_FLAGS -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
    -lineinfo -g --cudart shared -Xcompiler -fno-omit-frame-pointer)
if(NVCC)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/bin/cuda-known
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bin
    COMMAND ${NVCC} ${GPD_NVCC_FLAGS} -o ${CMAKE_BINARY_DIR}/bin/cuda-known
            ${CMAKE_CURRENT_SOURCE_DIR}/cuda/cuda-known.cu
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/cuda-known.cu VERBATIM)
  add_custom_target(gpd_cuda_tests ALL DEPENDS ${CMAKE_BINARY_DIR}/bin/cuda-known)

  add_test(NAME cupti.nodriver-stub
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-nodriver.sh stub
            ${CMAKE_BINARY_DIR}/bin/cuda-known $<TARGET_FILE:gpd_cupti_selftest>)
  set_tests_properties(cupti.nodriver-stub PROPERTIES LABELS "integration" TIMEOUT 60
                       SKIP_RETURN_CODE 77)
  add_test(NAME cupti.nodriver-record
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cupti/test-cupti-nodriver.sh record
            ${CMAKE_BINARY_DIR}/bin/cuda-known ${CMAKE_BINARY_DIR})
  set_tests_properties(cupti.nodriver-record PROPERTIES LABELS "integration" TIMEOUT 120
                       SKIP_RETURN_CODE 77)
  add_test(NAME cupti.gpu-known COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cuda/gpu-known.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cupti.gpu-known PROPERTIES LABELS "gpu" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
