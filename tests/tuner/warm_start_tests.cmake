# Warm start: seeds from best_config.json files and the proposer that evaluates them first.
# CPU only. The runs of autotune-loop with --warm-start are in tests/cli.
tilesmith_add_test(tuner_warm_start_test SOURCES warm_start_test.cpp LIBS tilesmith_tuner)
