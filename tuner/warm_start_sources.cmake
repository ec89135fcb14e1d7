# Warm start: earlier winners (best_config.json) as a run's first candidates; see
# tuner/CMakeLists.txt.
list(APPEND TUNER_SOURCES
  warm_start.cpp
  warm_start_proposer.cpp
)
