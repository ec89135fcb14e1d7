/* libtilesmith_gemm: run the GEMM kernels of a tuned package (docs/package.md) from any
 * C or C++ program, on the caller's device pointers and stream.
 *
 *   ts_gemm_handle* h;
 *   if (ts_gemm_create(&h, "pkg", 0, NULL) != TS_OK) fprintf(stderr, "%s\n", ts_last_error());
 *   ts_gemm_problem p;
 *   ts_gemm_problem_init(&p, 16, 6144, 4096, TS_DTYPE_BF16);
 *   ts_gemm(h, &p, A, B, C, NULL, stream);
 *   ts_gemm_destroy(h);
 *
 * Which kernel runs a problem (exact tuned problem, nearest tuned shape, or the vendor
 * library) is decided once per problem and can be inspected with ts_gemm_explain; the rule
 * is in docs/gemm-library.md. A tuned kernel runs only where, at tuning, it beat the
 * vendor library by more than the noise of the two measurements. Every function returns a ts_status; the message of the
 * calling thread's last failure is ts_last_error(). No function throws or aborts.
 *
 * Threads: a handle may be used by several threads at once (ts_gemm, ts_gemm_explain);
 * ts_gemm_destroy must not race with other calls on the same handle. */
#ifndef TILESMITH_GEMM_H
#define TILESMITH_GEMM_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define TS_GEMM_API
#else
#define TS_GEMM_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ts_status {
  TS_OK = 0,
  TS_INVALID_ARGUMENT = 1, /* a null pointer, an invalid problem, a device ordinal out of range */
  TS_PACKAGE_ERROR = 2,    /* missing/malformed tuned.json, wrong schema, a path escaping the package,
                              a missing template source, a kernel that neither loads nor compiles */
  TS_NOT_SUPPORTED = 3,    /* this build or the vendor library cannot do it (built without CUDA,
                              an AMD package, an epilogue the vendor library cannot fuse) */
  TS_DEVICE_ERROR = 4,     /* no driver, no GPU, or a driver call failed */
  TS_INTERNAL_ERROR = 5    /* a bug in the library: please report it with ts_last_error() */
} ts_status;

typedef enum ts_dtype { TS_DTYPE_FP32 = 0, TS_DTYPE_FP16 = 1, TS_DTYPE_BF16 = 2 } ts_dtype;
typedef enum ts_layout { TS_ROW_MAJOR = 0, TS_COL_MAJOR = 1 } ts_layout;
typedef enum ts_epilogue {
  TS_EPILOGUE_NONE = 0,
  TS_EPILOGUE_BIAS_ROW = 1, /* bias has M entries, added to each row */
  TS_EPILOGUE_BIAS_COL = 2, /* bias has N entries, added to each column */
  TS_EPILOGUE_RELU = 3,
  TS_EPILOGUE_LEAKY_RELU = 4, /* slope: epilogue_slope */
  TS_EPILOGUE_GELU = 5,
  TS_EPILOGUE_BIAS_GELU = 6 /* bias has N entries, added to each column, then GELU (a Linear layer's) */
} ts_epilogue;

/* C = epilogue(alpha * op(A) * op(B) + beta * C): A is M x K, B is K x N, C is M x N, each
 * densely packed in its layout. A and B have dtype, C (and the bias) c_dtype. Mirrors
 * tilesmith's GemmProblem (registry/problem.h). */
typedef struct ts_gemm_problem {
  int64_t m, n, k;
  ts_dtype dtype;      /* A and B */
  ts_dtype c_dtype;    /* C and the bias */
  ts_dtype accumulate; /* TS_DTYPE_FP32 */
  ts_layout a_layout, b_layout, c_layout;
  double alpha, beta;
  ts_epilogue epilogue;
  double epilogue_slope;
} ts_gemm_problem;

/* level: 0 info, 1 warning. The line has no trailing newline. Called from whichever thread
 * made the decision or loaded the kernel, one line at a time (never concurrently). */
typedef void (*ts_log_fn)(void* user, int level, const char* line);

typedef struct ts_gemm_options {
  /* Nonzero: use the package's kernels even on a device other than the one it was tuned
   * on (compiled from the shipped sources for this device). Zero: such a device gets the
   * vendor library. */
  int allow_foreign_device;
  /* Where compiled fallbacks are cached; NULL: $XDG_CACHE_HOME/tilesmith, else
   * ~/.cache/tilesmith. */
  const char* cache_dir;
  ts_log_fn log;  /* NULL: no callback */
  void* log_user;
  int log_to_stderr; /* nonzero: also write each line to stderr, prefixed "tilesmith: " */
} ts_gemm_options;

typedef enum ts_path {
  TS_PATH_EXACT = 0,         /* the tuned kernel of this exact problem */
  TS_PATH_NEAREST = 1,       /* the kernel of the nearest tuned shape that is valid for it */
  TS_PATH_VENDOR = 2,        /* cuBLASLt: no tuned kernel fits, or the one that fits was not
                                faster than the vendor by more than the noise at tuning */
  TS_PATH_FOREIGN_DEVICE = 3 /* the package was tuned on another device: cuBLASLt */
} ts_path;

typedef struct ts_gemm_handle ts_gemm_handle;

/* Fills the defaults: row-major, alpha 1, beta 0, no epilogue, slope 0.01, C of dtype. */
TS_GEMM_API ts_status ts_gemm_problem_init(ts_gemm_problem* p, int64_t m, int64_t n, int64_t k, ts_dtype dtype);
/* Fills the defaults: no foreign device, default cache folder, no log. */
TS_GEMM_API ts_status ts_gemm_options_init(ts_gemm_options* o);

/* Reads and checks the package, then opens CUDA device `device` (its primary context).
 * options may be NULL. On failure *out is NULL and ts_last_error() says why. */
TS_GEMM_API ts_status ts_gemm_create(ts_gemm_handle** out, const char* package_dir, int device,
                                     const ts_gemm_options* options);
/* NULL is accepted. Waits for nothing: synchronize your streams first. */
TS_GEMM_API ts_status ts_gemm_destroy(ts_gemm_handle* h);

/* Enqueues the GEMM on `stream` (a CUstream / cudaStream_t; NULL: the default stream) and
 * returns without waiting. A, B, C, bias: device pointers (bias NULL unless the epilogue
 * is a bias one). */
TS_GEMM_API ts_status ts_gemm(ts_gemm_handle* h, const ts_gemm_problem* problem, const void* A, const void* B,
                              void* C, const void* bias, void* stream);

/* The decision for `problem` without running it: *path (may be NULL) and one line in buf
 * (NUL-terminated, cut to len; buf may be NULL when len is 0). */
TS_GEMM_API ts_status ts_gemm_explain(ts_gemm_handle* h, const ts_gemm_problem* problem, ts_path* path, char* buf,
                                      size_t len);

/* The calling thread's last error message ("" after a success); valid until its next call. */
TS_GEMM_API const char* ts_last_error(void);
TS_GEMM_API const char* ts_status_string(ts_status s); /* "TS_OK", ... */
TS_GEMM_API const char* ts_path_string(ts_path p);     /* "exact", "nearest", "vendor", "foreign-device" */
TS_GEMM_API const char* ts_gemm_version(void);          /* "0.1.0" */
/* 1 when this build can run CUDA packages (the CUDA toolkit was found at build time). */
TS_GEMM_API int ts_gemm_built_with_cuda(void);

#ifdef __cplusplus
}
#endif

#endif /* TILESMITH_GEMM_H */
