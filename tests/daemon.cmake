# Daemon tests (tests/daemon/test-daemon-*.c).  Unit tests link gpd_daemon_core;
# integration tests drive bin/gpuprofd with the protocol test client
# test-daemon-client (a fake shim that produces records into its region).
if(TARGET gpd_daemon_core AND CMOCKA_FOUND)
  add_executable(test-daemon-profile ${CMAKE_CURRENT_LIST_DIR}/daemon/test-daemon-profile.c)
  target_link_libraries(test-daemon-profile PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
  target_compile_options(test-daemon-profile PRIVATE -g) # test_symbols needs DWARF
  add_test(NAME daemon.profile COMMAND test-daemon-profile)
  set_tests_properties(daemon.profile PROPERTIES LABELS "unit" TIMEOUT 60 SKIP_RETURN_CODE 77)
  # CUDA graph work below its nodes' creation paths (daemon/graph.c)
  add_executable(test-daemon-graph ${CMAKE_CURRENT_LIST_DIR}/daemon/test-daemon-graph.c)
  target_link_libraries(test-daemon-graph PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
  add_test(NAME daemon.graph COMMAND test-daemon-graph)
  set_tests_properties(daemon.graph PROPERTIES LABELS "unit" TIMEOUT 60)
  # the Tree reply's direct encoder against protobuf-c's bytes
  add_executable(test-daemon-encode ${CMAKE_CURRENT_LIST_DIR}/daemon/test-daemon-encode.c)
  target_link_libraries(test-daemon-encode PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
  add_test(NAME daemon.encode COMMAND test-daemon-encode)
  set_tests_properties(daemon.encode PROPERTIES LABELS "unit" TIMEOUT 60)
  # the collection policy: [collect] sections, precedence, run-time set,
  # bad lines, the governor's arithmetic
  add_executable(test-policy ${CMAKE_CURRENT_LIST_DIR}/daemon/test-policy.c)
  target_link_libraries(test-policy PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
  add_test(NAME daemon.policy COMMAND test-policy)
  set_tests_properties(daemon.policy PROPERTIES LABELS "unit" TIMEOUT 60)
  # a process's job from recorded /proc/PID/cgroup files (daemon/job.c)
  add_executable(test-daemon-job ${CMAKE_CURRENT_LIST_DIR}/daemon/test-daemon-job.c)
  target_link_libraries(test-daemon-job PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
  add_test(NAME daemon.job COMMAND test-daemon-job)
  set_tests_properties(daemon.job PROPERTIES LABELS "unit" TIMEOUT 60)
endif()
# gpd_dclient: the fake shim's protocol + record helpers (daemon-client-lib.h),
# shared by test-daemon-client and bench/bench-top.
if(TARGET gpd_common AND TARGET gpd_proto)
  add_library(gpd_dclient STATIC ${CMAKE_CURRENT_LIST_DIR}/daemon/daemon-client-lib.c)
  target_include_directories(gpd_dclient PUBLIC ${CMAKE_CURRENT_LIST_DIR}/daemon)
  target_link_libraries(gpd_dclient PUBLIC gpd_common gpd_proto)
endif()
if(TARGET gpd_daemon_core AND TARGET gpuprofd AND TARGET gpd_dclient)
  add_executable(test-daemon-client ${CMAKE_CURRENT_LIST_DIR}/daemon/test-daemon-client.c)
  target_link_libraries(test-daemon-client PRIVATE gpd_dclient)
  add_executable(test-daemon-e2e ${CMAKE_CURRENT_LIST_DIR}/daemon/test-daemon-e2e.c)
  target_link_libraries(test-daemon-e2e PRIVATE gpd_common gpd_proto PkgConfig::SQLITE PkgConfig::CMOCKA)
  target_compile_definitions(test-daemon-e2e PRIVATE
    GPD_TEST_DAEMON="$<TARGET_FILE:gpuprofd>"
    GPD_TEST_CLIENT="$<TARGET_FILE:test-daemon-client>")
  foreach(t integration hostile killed restart monitors register64 graphreplay)
    add_test(NAME daemon.${t} COMMAND test-daemon-e2e ${t})
    set_tests_properties(daemon.${t} PROPERTIES LABELS "integration" TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()
# gpuprofd --version / --help (the man page is made from --help)
add_test(NAME daemon.version COMMAND $<TARGET_FILE:gpuprofd> --version)
set_tests_properties(daemon.version PROPERTIES LABELS unit TIMEOUT 10
  PASS_REGULAR_EXPRESSION "^gpuprofd ${PROJECT_VERSION}\n$")
add_test(NAME daemon.help COMMAND $<TARGET_FILE:gpuprofd> --help)
set_tests_properties(daemon.help PROPERTIES LABELS unit TIMEOUT 10
  PASS_REGULAR_EXPRESSION "--version +print the version")
