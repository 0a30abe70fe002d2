# Unit tests of the fabric area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
tlaunch_add_unit_test(NAME fabric_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/fabric_discovery_test.cc
  LIBS tlaunch_binding)
