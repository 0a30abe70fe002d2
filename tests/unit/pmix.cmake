# Unit tests of the pmix area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
# The in-process server test starts libpmix but no process; tests/pmix has the job-level tests.
tlaunch_add_unit_test(NAME pmix_tests
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/pmix_job_geometry_test.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/pmix_env_test.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/pmix_server_test.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/pmix_listener_guard_test.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/pmix_peer_guard_test.cc
  LIBS tlaunch_pmix PkgConfig::HWLOC)
