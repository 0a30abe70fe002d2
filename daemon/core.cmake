set(DAEMON_CORE_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/line_splitter.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/rank_spawner.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/rank_supervisor.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/rank_env.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/inventory.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/daemon_session.cc
)
