# launcher/nccl/: the NCCL transport report — a pure log parser and report, and the
# `tlaunch nccl-report` subcommand. Sets LAUNCHER_NCCL_SOURCES.
set(LAUNCHER_NCCL_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_log.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_line_tags.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_classify.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_state.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_report.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_verdict.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_report_output.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_report_command.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_check.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/nccl_job_check.cc
)
