# History, best config, the generation loop.
list(APPEND TUNER_SOURCES best_config.cpp)
