# tests/cpusamp.cmake - CPU-time sampling (shim/cpu-sampler.c,
# daemon/cpusample.c; docs/SHIM.md "CPU sampling"): a program of known CPU
# structure under the real shim, a real daemon and `gpuprof record`.
# Included from tests/CMakeLists.txt.
set(GPD_CPS ${CMAKE_CURRENT_LIST_DIR}/cpusamp)
add_executable(cpusamp-app ${GPD_CPS}/cpusamp-app.c)
target_link_libraries(cpusamp-app PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
# no inlining of the burners, frame pointers kept: the test names them
target_compile_options(cpusamp-app PRIVATE -O1 -g -fno-omit-frame-pointer)
set_target_properties(cpusamp-app PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
foreach(t ratio threads signals off takeover nested workers live fork)
  add_test(NAME cpusamp.${t} COMMAND bash ${GPD_CPS}/cpusamp.sh ${CMAKE_BINARY_DIR} ${t})
  set_tests_properties(cpusamp.${t} PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "GPD_IT_LIMIT=100")
endforeach()
# The daemon side and the record's validation (unit).
if(TARGET gpd_daemon_core AND CMOCKA_FOUND)
  add_executable(test-cpusample ${GPD_CPS}/test-cpusample.c)
  target_include_directories(test-cpusample PRIVATE ${CMAKE_SOURCE_DIR}/daemon)
  target_link_libraries(test-cpusample PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
  add_test(NAME cpusamp.daemon COMMAND test-cpusample)
  set_tests_properties(cpusamp.daemon PROPERTIES LABELS unit TIMEOUT 60)
endif()
