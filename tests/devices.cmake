# tests/devices.cmake - device monitoring (docs/DEVICES.md): a real gpuprofd
# with a fake libnvidia-ml built here (fixed values checked exactly in
# `gpuprof devices`, --prometheus through python3-prometheus-client's
# parser, and the store), the "nothing present" messages, and PAPI on a
# real process (SKIP where PAPI cannot count).  Scripts are
# tests/devices/<name>.sh BUILD_DIR and use tests/integration/lib.sh.
add_library(fake-nvml SHARED ${CMAKE_CURRENT_LIST_DIR}/devices/fake-nvml.c)
set_target_properties(fake-nvml PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/devices)
foreach(t nvml missing papi retention)
  add_test(NAME devices.${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/devices/${t}.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(devices.${t} PROPERTIES LABELS integration TIMEOUT 120
    SKIP_RETURN_CODE 77 ENVIRONMENT "GPD_IT_LIMIT=100")
endforeach()
# A fake Level Zero driver with Sysman tables, for the real loader
# (ZE_ENABLE_ALT_DRIVERS); only where the daemon builds its Sysman back end.
if(GPD_ZES_INCLUDE_DIR)
  add_library(fake-sysman SHARED ${CMAKE_CURRENT_LIST_DIR}/devices/fake-sysman.c)
  target_include_directories(fake-sysman PRIVATE ${GPD_ZES_INCLUDE_DIR})
  set_target_properties(fake-sysman PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/devices)
endif()
add_test(NAME devices.sysman COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/devices/sysman.sh ${CMAKE_BINARY_DIR})
set_tests_properties(devices.sysman PROPERTIES LABELS integration TIMEOUT 120
  SKIP_RETURN_CODE 77 ENVIRONMENT "GPD_IT_LIMIT=100")
