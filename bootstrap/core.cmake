set(BOOTSTRAP_CORE_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/exit_status.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/frame_codec.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/message.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/auth.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/connection.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/node_launch_json.cc
)
