# Offline proposers (random, exhaustive, evolve) and their helpers; paths relative to tuner/.
list(APPEND TUNER_SOURCES
  proposers/request_check.cpp
  proposers/detail/space_view.cpp
  proposers/detail/forest.cpp
  proposers/random_proposer.cpp
  proposers/exhaustive_proposer.cpp
  proposers/evolve_proposer.cpp
  proposers/offline_proposers.cpp
)
# The search-efficiency benchmark (tilesmith_search_bench), built beside the tuner library.
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/bench ${CMAKE_CURRENT_BINARY_DIR}/proposers_bench)
