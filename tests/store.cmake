# daemon store: GPU-binary files, state permissions, per-user labels,
# hand-back, bounds, disk full, retention (tests/store/).  Scripts get the
# build dir.
if(TARGET gpd_daemon_core AND CMOCKA_FOUND)
  add_executable(test-retention ${CMAKE_CURRENT_LIST_DIR}/store/test-retention.c)
  target_include_directories(test-retention PRIVATE ${CMAKE_CURRENT_LIST_DIR}/store)
  target_link_libraries(test-retention PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
  add_test(NAME store.retention-unit COMMAND test-retention)
  set_tests_properties(store.retention-unit PROPERTIES LABELS unit TIMEOUT 120)
endif()
# store/ alone, without the daemon: typed writers and readers round trip
if(TARGET gpd_store AND CMOCKA_FOUND)
  add_executable(test-store-rows ${CMAKE_CURRENT_LIST_DIR}/store/test-store-rows.c)
  target_link_libraries(test-store-rows PRIVATE gpd_store PkgConfig::CMOCKA)
  add_test(NAME store.rows COMMAND test-store-rows)
  set_tests_properties(store.rows PROPERTIES LABELS unit TIMEOUT 60)
endif()
if(TARGET gpd_dclient AND TARGET gpuprofd)
  add_executable(store-client ${CMAKE_CURRENT_LIST_DIR}/store/store-client.c)
  target_link_libraries(store-client PRIVATE gpd_dclient)
  set_target_properties(store-client PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
  # two programs with one layout and different function names (labels test)
  foreach(v honest crafty)
    add_executable(store-label-${v} ${CMAKE_CURRENT_LIST_DIR}/store/label-target.c)
    target_compile_definitions(store-label-${v} PRIVATE TARGET_FN=${v}_target_function)
    target_compile_options(store-label-${v} PRIVATE -O0 -g0 -fno-inline)
    target_link_options(store-label-${v} PRIVATE -Wl,--build-id=none)
    set_target_properties(store-label-${v} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
  endforeach()
  # a large -g binary: 20 000 functions in one compilation unit (~3 MB;
  # each call-site lookup in it walks the unit: store.symbolize)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/tests/bigdebug.c
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/store/bigdebug.sh 20000 ${CMAKE_BINARY_DIR}/tests/bigdebug.c
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/store/bigdebug.sh VERBATIM)
  add_executable(store-bigdebug ${CMAKE_BINARY_DIR}/tests/bigdebug.c)
  target_compile_options(store-bigdebug PRIVATE -O0 -g -fno-sanitize=all -w)
  set_target_properties(store-bigdebug PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
  foreach(t gpubin-files state-private labels handback disk-full retention-sigterm
          gpubin-quota release journal symbolize)
    add_test(NAME store.${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/store/${t}.sh ${CMAKE_BINARY_DIR})
    set_tests_properties(store.${t} PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()
