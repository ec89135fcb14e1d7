# tilesmith_add_test(...)
