# Unit tests of the topology area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
tlaunch_add_unit_test(NAME topology_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_load_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_plan_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_plan_synthetic_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_manifest_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_report_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_apply_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_nvml_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/topology_cache_test.cc
  LIBS tlaunch_topology PkgConfig::HWLOC)
# Stand-ins for the driver's libnvidia-ml.so.1, one per scenario, that the real NVML reader loads.
foreach(scenario 0 1 2 3 4 5)
  add_library(fake_nvml_${scenario} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/unit/fake_nvml.c)
  target_compile_definitions(fake_nvml_${scenario} PRIVATE FAKE_NVML_SCENARIO=${scenario})
  target_include_directories(fake_nvml_${scenario} PRIVATE ${PROJECT_SOURCE_DIR})
  add_dependencies(topology_tests fake_nvml_${scenario})
endforeach()
target_compile_definitions(topology_tests PRIVATE FAKE_NVML_DIR="$<TARGET_FILE_DIR:fake_nvml_0>")
