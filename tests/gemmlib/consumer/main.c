/* Links libtilesmith_gemm from an install prefix and calls it without a GPU. */
#include <stdio.h>
#include <string.h>

#include <tilesmith/gemm.h>

int main(int argc, char** argv) {
  ts_gemm_handle* h = NULL;
  ts_gemm_problem p;
  if (ts_gemm_problem_init(&p, 16, 32, 64, TS_DTYPE_BF16) != TS_OK) return 1;
  /* A folder without tuned.json: a package error with a message, never a crash. */
  ts_status s = ts_gemm_create(&h, argc > 1 ? argv[1] : "/nonexistent", 0, NULL);
  printf("%s %s: %s\n", ts_gemm_version(), ts_status_string(s), ts_last_error());
  return s == TS_PACKAGE_ERROR && h == NULL && strlen(ts_last_error()) > 0 ? 0 : 2;
}
