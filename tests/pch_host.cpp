// Builds the tests' precompiled header (tests/CMakeLists.txt, tilesmith_test_pch_host): gtest,
// nlohmann/json and the standard headers the tests include, parsed once for all of them. The
// program itself does nothing.
int main() { return 0; }
