# Sources of the topology / placement / manifest area.
list(APPEND BINDING_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/hwloc_topology.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/topology_json.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/binding_plan.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/binding_manifest.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/topo_report.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/apply_binding.cc
)
