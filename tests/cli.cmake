# gpuprof CLI tests: report (text, --json, --flat) against a fixture
# profile built from docs/FORMATS.md's schema, live ps/top/tree against a
# fake gpuprofd (tests/cli/test-cli-faked.c), live commands without a daemon,
# record with missing / failing / fake daemons, usage errors; physical
# frame labels, per-user label rows, 200 000-deep profiles, FIFOs,
# FILE.old, hidden non-GPU processes (report and live ps against the real
# daemon), and one end-to-end run of an OpenCL program with an inlined
# launch (tests/cli/ocl-inline.c, -O2) under `gpuprof record`.
find_program(GPD_PYTHON3 python3)
if(GPD_PYTHON3 AND TARGET gpuprof_cli)
  add_executable(test-cli-faked ${CMAKE_CURRENT_LIST_DIR}/cli/test-cli-faked.c)
  target_link_libraries(test-cli-faked PRIVATE gpd_common gpd_proto)
  set(_cli_app "")
  if(OpenCL_FOUND)
    add_executable(ocl-inline ${CMAKE_CURRENT_LIST_DIR}/cli/ocl-inline.c)
    target_link_libraries(ocl-inline PRIVATE OpenCL::OpenCL)
    # optimized on purpose (helper is inlined into phase_c); never sanitized
    target_compile_options(ocl-inline PRIVATE -O2 -g -fno-omit-frame-pointer -fno-sanitize=all)
    target_link_options(ocl-inline PRIVATE -fno-sanitize=all)
    set_target_properties(ocl-inline PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
    set(_cli_app --app $<TARGET_FILE:ocl-inline>)
  endif()
  foreach(case report json flat badfile nodaemon usage record live label peruid deep fifo hidden recordold psall
               inline livetree)
    add_test(NAME cli.${case}
      COMMAND ${GPD_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/cli/test_cli.py
              --gpuprof $<TARGET_FILE:gpuprof_cli>
              --faked $<TARGET_FILE:test-cli-faked> ${_cli_app} ${case})
    set_tests_properties(cli.${case} PROPERTIES
      LABELS "unit" TIMEOUT 180 SKIP_RETURN_CODE 77
      ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache")
  endforeach()
  set_tests_properties(cli.psall cli.inline cli.livetree PROPERTIES LABELS "integration")
endif()
# man pages (made from --help) and bash completion, installed (man/)
if(TARGET man)
  add_test(NAME cli.man COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli/man.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cli.man PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()
