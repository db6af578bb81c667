# tests/service.cmake - node service: config, access control, systemd
# integration, install layout, two-user access, config errors.
# Included from tests/CMakeLists.txt (CMAKE_CURRENT_LIST_DIR = tests/).

set(_svc_root ${CMAKE_CURRENT_LIST_DIR}/..)
set(_svc_env
  GPD_SRC_DIR=${_svc_root}
  GPD_BUILD_DIR=${CMAKE_BINARY_DIR}
  GPD_BIN_DIR=${CMAKE_BINARY_DIR}/bin
  GPD_LIB_DIR=${CMAKE_BINARY_DIR}/lib
  GPD_TEST_BIN=${CMAKE_CURRENT_BINARY_DIR})

# --- unit tests (cmocka) on the daemon's service sources, built directly so
# they do not wait for the whole daemon.
if(CMOCKA_FOUND)
  add_executable(test-config ${CMAKE_CURRENT_LIST_DIR}/daemon/test-config.c ${_svc_root}/daemon/config.c)
  target_include_directories(test-config PRIVATE ${_svc_root}/daemon ${_svc_root}/common/include)
  target_link_libraries(test-config PRIVATE PkgConfig::CMOCKA PkgConfig::INIH)
  add_test(NAME service.config COMMAND test-config)
  set_tests_properties(service.config PROPERTIES LABELS "unit" TIMEOUT 60
    SKIP_RETURN_CODE 77 ENVIRONMENT "GPD_SRC_DIR=${_svc_root}")

  add_executable(test-access ${CMAKE_CURRENT_LIST_DIR}/daemon/test-access.c ${_svc_root}/daemon/access.c)
  target_include_directories(test-access PRIVATE ${_svc_root}/daemon)
  target_link_libraries(test-access PRIVATE PkgConfig::CMOCKA)
  add_test(NAME service.access COMMAND test-access)
  # Needs root (creates group gpdtestadm, users gpdtest1/gpdtest2); else 77.
  add_test(NAME service.access_admin_group COMMAND test-access admin-group)
  set_tests_properties(service.access service.access_admin_group PROPERTIES
    LABELS "unit" TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()

# Test-only stand-in daemon for notify.c (bind, activation, sd_notify).
add_executable(notify-helper ${CMAKE_CURRENT_LIST_DIR}/service/notify-helper.c ${_svc_root}/daemon/notify.c)
target_include_directories(notify-helper PRIVATE ${_svc_root}/daemon)
target_link_libraries(notify-helper PRIVATE PkgConfig::SYSTEMD)
set_target_properties(notify-helper PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

# name -> label; each script is tests/service/<name>.sh
set(_svc_scripts
  "notify:unit"             # notify.c: bind / stale / activation / sd_notify
  "units_verify:unit"       # systemd-analyze verify on the units
  "socket_activation:integration" # real gpuprofd under systemd-socket-activate
  "install_layout:integration"    # cmake --install into DESTDIR, layout
  "two_users:integration"         # access control with two real users
  "config_error:integration"      # bad config: non-zero exit + file:line
  "taskprolog:unit")              # Slurm TaskProlog / attach.sh output
foreach(_s ${_svc_scripts})
  string(REPLACE ":" ";" _p "${_s}")
  list(GET _p 0 _name)
  list(GET _p 1 _label)
  add_test(NAME service.${_name} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/service/${_name}.sh)
  set_tests_properties(service.${_name} PROPERTIES LABELS "${_label}" TIMEOUT 120
    SKIP_RETURN_CODE 77 ENVIRONMENT "${_svc_env}")
endforeach()
# The install test and the two-user test create system users / run
# cmake --install; keep them from racing each other.
set_tests_properties(service.install_layout service.two_users service.access_admin_group
  PROPERTIES RESOURCE_LOCK gpd_service_users)
