# History, best config, the generation loop, where its candidates run (in process or in
# worker processes), the run's setup and reports (see tuner/CMakeLists.txt).
list(APPEND TUNER_SOURCES
  best_config.cpp
  csv.cpp
  history.cpp
  journal.cpp
  generation.cpp
  resume.cpp
  compile_ahead.cpp
  candidate_runner.cpp
  worker_runner.cpp
  progress.cpp
  loop_rows.cpp
  best_entry.cpp
  retime.cpp
  loop.cpp
  run_setup.cpp
  history_report.cpp
  summary.cpp
)
