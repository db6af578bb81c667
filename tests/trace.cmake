# tests/trace.cmake - traces (docs/TRACE.md): the daemon's tracing threads
# and trace tables, `gpuprof trace` (Perfetto decoded back with the schema by
# trace-decode, Chrome JSON), idleness blame in `gpuprof report`, the live
# Trace request and its access check, a daemon killed mid-trace, and the
# Chrome-format trace opened in speedscope by headless Chromium.
set(GPD_TR ${CMAKE_CURRENT_LIST_DIR}/trace)
add_executable(trace-decode ${GPD_TR}/trace-decode.c)
target_link_libraries(trace-decode PRIVATE gpd_perfetto_proto)
set_target_properties(trace-decode PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
add_executable(test-trace ${GPD_TR}/test-trace.c)
target_link_libraries(test-trace PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
add_test(NAME trace.threads COMMAND test-trace)
set_tests_properties(trace.threads PROPERTIES LABELS unit TIMEOUT 60)
add_executable(test-tracewin ${GPD_TR}/test-tracewin.c)
target_link_libraries(test-tracewin PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
add_test(NAME trace.windows COMMAND test-tracewin)
set_tests_properties(trace.windows PROPERTIES LABELS unit TIMEOUT 60)
# idleness blame on a hand-built trace with known numbers (cli/idle.c)
add_executable(test-idle ${GPD_TR}/test-idle.c)
target_link_libraries(test-idle PRIVATE gpd_cli PkgConfig::CMOCKA)
add_test(NAME trace.idle COMMAND test-idle)
set_tests_properties(trace.idle PROPERTIES LABELS unit TIMEOUT 60)
# the writers' string table: stable ids and pointers across block growth
add_executable(test-xwrite ${GPD_TR}/test-xwrite.c)
target_link_libraries(test-xwrite PRIVATE gpd_cli PkgConfig::CMOCKA)
target_include_directories(test-xwrite PRIVATE ${CMAKE_SOURCE_DIR}/cli)
add_test(NAME trace.strtab COMMAND test-xwrite)
set_tests_properties(trace.strtab PROPERTIES LABELS unit TIMEOUT 60)
# a trace written page by page (live windows) is the file written whole;
# what the writer carries between pages does not grow with the trace
add_executable(test-xpages ${GPD_TR}/test-xpages.c)
target_link_libraries(test-xpages PRIVATE gpd_cli PkgConfig::CMOCKA)
target_include_directories(test-xpages PRIVATE ${CMAKE_SOURCE_DIR}/cli)
add_test(NAME trace.pages COMMAND test-xpages)
set_tests_properties(trace.pages PROPERTIES LABELS unit TIMEOUT 60)
# report's idleness paths: innermost first, cut to the width (exact strings)
add_executable(test-pathfit ${GPD_TR}/test-pathfit.c)
target_link_libraries(test-pathfit PRIVATE gpd_cli PkgConfig::CMOCKA)
target_include_directories(test-pathfit PRIVATE ${CMAKE_SOURCE_DIR}/cli)
add_test(NAME trace.pathfit COMMAND test-pathfit)
set_tests_properties(trace.pathfit PROPERTIES LABELS unit TIMEOUT 60)
if(OpenCL_FOUND)
  add_executable(ocl-gap ${GPD_TR}/ocl-gap.c)
  target_link_libraries(ocl-gap PRIVATE OpenCL::OpenCL)
  target_compile_options(ocl-gap PRIVATE -O1 -g -fno-omit-frame-pointer -fno-inline)
  set_target_properties(ocl-gap PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
endif()
foreach(t offline live killed)
  add_test(NAME trace.${t} COMMAND bash ${GPD_TR}/${t}.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(trace.${t} PROPERTIES LABELS integration TIMEOUT 240
    SKIP_RETURN_CODE 77
    ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache;GPD_IT_LIMIT=200")
endforeach()
# a 200 000-operation synthetic trace (bench-tracewrite's) in both formats,
# read back whole: counts, every interned id and every stack frame resolved
add_test(NAME trace.big COMMAND bash ${GPD_TR}/big.sh ${CMAKE_BINARY_DIR})
set_tests_properties(trace.big PROPERTIES LABELS integration TIMEOUT 240 SKIP_RETURN_CODE 77
  ENVIRONMENT "GPD_IT_LIMIT=200")
# tests/trace/chrome-flows.py (the flow binding check of trace.big and
# trace.offline) against small files: the writer's form accepted, each
# form a reader would not take rejected with its message
add_test(NAME trace.flowcheck COMMAND python3 ${GPD_TR}/chrome-flows-test.py)
set_tests_properties(trace.flowcheck PROPERTIES LABELS unit TIMEOUT 60)
# the Chrome-format trace in speedscope (headless Chromium): label browser
# like export.browser (the normal build's pass only)
add_test(NAME trace.browser COMMAND bash ${GPD_TR}/browser.sh ${CMAKE_BINARY_DIR})
set_tests_properties(trace.browser PROPERTIES LABELS browser TIMEOUT 240 SKIP_RETURN_CODE 77
  ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache;GPD_IT_LIMIT=200")
# duty-cycled estimates: a fake shim reports duty windows and the kernels
# in them through a real daemon; `gpuprof report` scales them by 1/f
if(TARGET gpd_dclient)
  add_executable(duty-client ${GPD_TR}/duty-client.c)
  target_link_libraries(duty-client PRIVATE gpd_dclient)
  set_target_properties(duty-client PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
  add_test(NAME trace.duty COMMAND bash ${GPD_TR}/duty.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(trace.duty PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "GPD_IT_LIMIT=100")
endif()
