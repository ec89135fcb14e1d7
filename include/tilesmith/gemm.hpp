// C++ wrapper over gemm.h, header-only: tilesmith::Gemm owns a handle (move-only, RAII)
// and throws tilesmith::GemmError (carrying the ts_status and ts_last_error's message)
// where the C function returns an error. Thread-safety as in gemm.h.
//
//   tilesmith::Gemm gemm("pkg", /*device=*/0);
//   gemm.run(tilesmith::problem(16, 6144, 4096, TS_DTYPE_BF16), A, B, C, nullptr, stream);
//   std::cout << gemm.explain(p) << "\n";
#ifndef TILESMITH_GEMM_HPP
#define TILESMITH_GEMM_HPP

#include <stdexcept>
#include <string>
#include <utility>

#include "tilesmith/gemm.h"

namespace tilesmith {

class GemmError : public std::runtime_error {
 public:
  GemmError(ts_status status, const std::string& message)
      : std::runtime_error(std::string(ts_status_string(status)) + ": " + message), status_(status) {}
  ts_status status() const noexcept { return status_; }

 private:
  ts_status status_;
};

inline void check(ts_status s) {
  if (s != TS_OK) throw GemmError(s, ts_last_error());
}

inline ts_gemm_problem problem(int64_t m, int64_t n, int64_t k, ts_dtype dtype) {
  ts_gemm_problem p;
  check(ts_gemm_problem_init(&p, m, n, k, dtype));
  return p;
}

inline ts_gemm_options default_options() {
  ts_gemm_options o;
  check(ts_gemm_options_init(&o));
  return o;
}

struct Explanation {
  ts_path path;
  std::string reason;
};

class Gemm {
 public:
  Gemm(const std::string& package_dir, int device, const ts_gemm_options& options = default_options()) {
    check(ts_gemm_create(&h_, package_dir.c_str(), device, &options));
  }
  ~Gemm() { ts_gemm_destroy(h_); }
  Gemm(Gemm&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Gemm& operator=(Gemm&& o) noexcept {
    if (this != &o) {
      ts_gemm_destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // Enqueues C = epilogue(alpha*op(A)*op(B) + beta*C) on `stream` (nullptr: default stream).
  void run(const ts_gemm_problem& p, const void* a, const void* b, void* c, const void* bias = nullptr,
           void* stream = nullptr) {
    check(ts_gemm(h_, &p, a, b, c, bias, stream));
  }

  Explanation explain(const ts_gemm_problem& p) {
    char buf[1024];
    ts_path path = TS_PATH_VENDOR;
    check(ts_gemm_explain(h_, &p, &path, buf, sizeof buf));
    return {path, buf};
  }

  ts_gemm_handle* get() const noexcept { return h_; }

 private:
  ts_gemm_handle* h_ = nullptr;
};

}  // namespace tilesmith

#endif  // TILESMITH_GEMM_HPP
