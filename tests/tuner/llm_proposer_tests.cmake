# LlmProposer and FallbackProposer against loopback servers. The two sources are compiled
# in directly so these tests build while the rest of tilesmith_tuner is in flux.
# cpp-httplib for the loopback server: see tests/llm/CMakeLists.txt.
if(NOT TARGET PkgConfig::TILESMITH_HTTPLIB)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(TILESMITH_HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
endif()
tilesmith_add_test(llm_proposer_test
  SOURCES llm_proposer_test.cpp fallback_proposer_test.cpp
          ${PROJECT_SOURCE_DIR}/tuner/llm_proposer.cpp ${PROJECT_SOURCE_DIR}/tuner/fallback_proposer.cpp
  LIBS tilesmith_llm PkgConfig::TILESMITH_HTTPLIB)
