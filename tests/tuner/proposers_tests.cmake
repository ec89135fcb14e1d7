# Offline proposers (random, exhaustive, evolve) and their helpers. CPU only.
tilesmith_add_test(tuner_offline_proposers_test SOURCES offline_proposers_test.cpp LIBS tilesmith_tuner)
tilesmith_add_test(tuner_proposer_detail_test SOURCES proposer_detail_test.cpp LIBS tilesmith_tuner)
# Against a recorded Kernel Tuner space through the replay backend.
set(TILESMITH_KT_DATA_DIR "${PROJECT_SOURCE_DIR}/../shared/data/kernel_tuner_gemm" CACHE PATH
    "Folder of the recorded Kernel Tuner GEMM cache files used by tests and benchmarks")
tilesmith_add_test(tuner_evolve_proposer_recorded_test SOURCES evolve_proposer_recorded_test.cpp
                   LIBS tilesmith_search_run)
target_compile_definitions(tuner_evolve_proposer_recorded_test PRIVATE TILESMITH_KT_DATA_DIR="${TILESMITH_KT_DATA_DIR}")
