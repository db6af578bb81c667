# tests/security.cmake - hostile local clients against a real gpuprofd
# (issue 14): connection limits with real users, fd exhaustion, slowloris,
# malformed frames.  Each script is tests/security/<name>.sh and speaks the
# real protocol through tests/security/hostile.py.
set(_sec_root ${CMAKE_CURRENT_LIST_DIR}/..)
set(_sec_env
  GPD_SRC_DIR=${_sec_root}
  GPD_BUILD_DIR=${CMAKE_BINARY_DIR}
  GPD_BIN_DIR=${CMAKE_BINARY_DIR}/bin
  GPD_LIB_DIR=${CMAKE_BINARY_DIR}/lib)
foreach(_name idle_flood emfile slowloris malformed slow_symbols output sockdir pids jobs ids procs)
  add_test(NAME security.${_name} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/security/${_name}.sh)
  set_tests_properties(security.${_name} PROPERTIES LABELS "integration" TIMEOUT 120
    SKIP_RETURN_CODE 77 ENVIRONMENT "${_sec_env}")
endforeach()
# idle_flood creates system users, as service.two_users does.
set_tests_properties(security.idle_flood security.output security.sockdir security.pids security.jobs security.ids security.procs PROPERTIES RESOURCE_LOCK gpd_service_users)
