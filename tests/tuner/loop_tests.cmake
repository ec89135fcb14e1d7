# History, journal, resume, best_config, reports, and the generation loop in-process
# (replayed synthetic recordings; no GPU). The end-to-end runs of the executables are in
# tests/cli.
tilesmith_add_test(tuner_history_test
  SOURCES history_test.cpp resume_test.cpp best_config_test.cpp history_report_test.cpp
  LIBS tilesmith_tuner)
tilesmith_add_test(tuner_loop_test
  SOURCES loop_test.cpp
  LIBS tilesmith_tuner)
