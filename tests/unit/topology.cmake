# Unit tests of the topology area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
tlaunch_add_unit_test(NAME topology_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_load_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_plan_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_plan_synthetic_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_manifest_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_report_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_apply_test.cc
  LIBS tlaunch_topology PkgConfig::HWLOC)
