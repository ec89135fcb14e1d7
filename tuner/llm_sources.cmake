# The LLM proposer and the fallback (circuit breaker); see tuner/CMakeLists.txt.
list(APPEND TUNER_SOURCES
  llm_proposer.cpp
  fallback_proposer.cpp
)
