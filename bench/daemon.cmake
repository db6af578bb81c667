# Daemon benchmarks: bench-ingest (records/s per monitor thread).
if(TARGET gpd_daemon_core)
  add_executable(bench-ingest ${CMAKE_CURRENT_LIST_DIR}/bench-ingest.c)
  target_link_libraries(bench-ingest PRIVATE gpd_daemon_core)
  set_target_properties(bench-ingest PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
