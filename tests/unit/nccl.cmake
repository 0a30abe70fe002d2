# Unit tests of the NCCL transport report (see tests/CMakeLists.txt for tlaunch_add_unit_test).
tlaunch_add_unit_test(NAME nccl_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/nccl_log_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/nccl_report_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/nccl_check_test.cc
  LIBS tlaunch_nccl)
tlaunch_add_unit_test(NAME nccl_watch_tests
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/nccl_log_watch_test.cc
  LIBS tlaunch_daemon)
