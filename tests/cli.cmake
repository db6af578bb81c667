# gpuprof CLI tests: report (text, --json, --flat) against a fixture
# profile built from docs/FORMATS.md's schema, live ps/top/tree against a
# fake gpuprofd (tests/test-cli-faked.c), live commands without a daemon,
# record with missing / failing / fake daemons, usage errors.
find_program(GPD_PYTHON3 python3)
if(GPD_PYTHON3 AND TARGET gpuprof_cli)
  add_executable(test-cli-faked ${CMAKE_CURRENT_LIST_DIR}/test-cli-faked.c)
  target_link_libraries(test-cli-faked PRIVATE gpd_common gpd_proto)
  foreach(case report json flat badfile nodaemon usage record live)
    add_test(NAME cli.${case}
      COMMAND ${GPD_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/cli/test_cli.py
              --gpuprof $<TARGET_FILE:gpuprof_cli>
              --faked $<TARGET_FILE:test-cli-faked> ${case})
    set_tests_properties(cli.${case} PROPERTIES
      LABELS "unit" TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()
