// The C API (include/tilesmith/gemm.h) over GemmHandle: argument checks, conversions,
// the thread-local error message, and a catch-all so nothing is thrown across the C
// boundary.

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "gemmlib/handle.h"
#include "tilesmith/gemm.h"

struct ts_gemm_handle {
  std::unique_ptr<tilesmith::gemmlib::GemmHandle> impl;
};

namespace {

using namespace tilesmith;
using namespace tilesmith::gemmlib;

static_assert(int(Path::kExact) == TS_PATH_EXACT && int(Path::kNearest) == TS_PATH_NEAREST &&
              int(Path::kVendor) == TS_PATH_VENDOR && int(Path::kForeignDevice) == TS_PATH_FOREIGN_DEVICE);
static_assert(int(Epilogue::kGelu) == TS_EPILOGUE_GELU && int(Epilogue::kBiasCol) == TS_EPILOGUE_BIAS_COL &&
              int(Epilogue::kBiasGelu) == TS_EPILOGUE_BIAS_GELU);

thread_local std::string t_last_error;

ts_status fail(ts_status s, const std::string& message) {
  t_last_error = message;
  return s;
}

ts_status to_c(ErrorKind k) {
  switch (k) {
    case ErrorKind::kInvalidArgument: return TS_INVALID_ARGUMENT;
    case ErrorKind::kPackage: return TS_PACKAGE_ERROR;
    case ErrorKind::kNotSupported: return TS_NOT_SUPPORTED;
    case ErrorKind::kDevice: return TS_DEVICE_ERROR;
    case ErrorKind::kInternal: return TS_INTERNAL_ERROR;
  }
  return TS_INTERNAL_ERROR;
}

ts_status fail(const Status& s) { return fail(to_c(error_kind(s)), s.message()); }

ts_status ok() {
  t_last_error.clear();
  return TS_OK;
}

// Runs f, turning any exception into TS_INTERNAL_ERROR (or the out-of-memory message).
template <typename F>
ts_status guarded(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(TS_INTERNAL_ERROR, std::string(what) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(TS_INTERNAL_ERROR, std::string(what) + ": " + e.what());
  } catch (...) {
    return fail(TS_INTERNAL_ERROR, std::string(what) + ": unknown exception");
  }
}

Result<DType> dtype(ts_dtype d, const char* field) {
  switch (d) {
    case TS_DTYPE_FP32: return DType::kF32;
    case TS_DTYPE_FP16: return DType::kF16;
    case TS_DTYPE_BF16: return DType::kBF16;
  }
  return Status::invalid(std::string("problem.") + field + " is not a ts_dtype (" + std::to_string(int(d)) + ")");
}

Result<Layout> layout(ts_layout l, const char* field) {
  if (l == TS_ROW_MAJOR) return Layout::kRowMajor;
  if (l == TS_COL_MAJOR) return Layout::kColMajor;
  return Status::invalid(std::string("problem.") + field + " is not a ts_layout (" + std::to_string(int(l)) + ")");
}

Result<GemmProblem> to_problem(const ts_gemm_problem* c) {
  if (!c) return Status::invalid("problem is NULL");
  GemmProblem p;
  p.m = c->m;
  p.n = c->n;
  p.k = c->k;
  TS_ASSIGN_OR_RETURN(p.a_type, dtype(c->dtype, "dtype"));
  p.b_type = p.a_type;
  TS_ASSIGN_OR_RETURN(p.c_type, dtype(c->c_dtype, "c_dtype"));
  TS_ASSIGN_OR_RETURN(p.accumulate, dtype(c->accumulate, "accumulate"));
  TS_ASSIGN_OR_RETURN(p.a_layout, layout(c->a_layout, "a_layout"));
  TS_ASSIGN_OR_RETURN(p.b_layout, layout(c->b_layout, "b_layout"));
  TS_ASSIGN_OR_RETURN(p.c_layout, layout(c->c_layout, "c_layout"));
  if (int(c->epilogue) < 0 || int(c->epilogue) > int(TS_EPILOGUE_BIAS_GELU))
    return Status::invalid("problem.epilogue is not a ts_epilogue (" + std::to_string(int(c->epilogue)) + ")");
  p.epilogue = static_cast<Epilogue>(c->epilogue);
  p.alpha = c->alpha;
  p.beta = c->beta;
  p.epilogue_slope = c->epilogue_slope;
  if (p.accumulate != DType::kF32) return Status(StatusCode::kUnimplemented, "only fp32 accumulation is supported");
  TS_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace

extern "C" {

ts_status ts_gemm_problem_init(ts_gemm_problem* p, int64_t m, int64_t n, int64_t k, ts_dtype dtype) {
  if (!p) return fail(TS_INVALID_ARGUMENT, "ts_gemm_problem_init: problem is NULL");
  *p = ts_gemm_problem{};
  p->m = m;
  p->n = n;
  p->k = k;
  p->dtype = dtype;
  p->c_dtype = dtype;
  p->accumulate = TS_DTYPE_FP32;
  p->a_layout = p->b_layout = p->c_layout = TS_ROW_MAJOR;
  p->alpha = 1.0;
  p->beta = 0.0;
  p->epilogue = TS_EPILOGUE_NONE;
  p->epilogue_slope = 0.01;
  return ok();
}

ts_status ts_gemm_options_init(ts_gemm_options* o) {
  if (!o) return fail(TS_INVALID_ARGUMENT, "ts_gemm_options_init: options is NULL");
  *o = ts_gemm_options{};
  return ok();
}

ts_status ts_gemm_create(ts_gemm_handle** out, const char* package_dir, int device, const ts_gemm_options* options) {
  if (!out) return fail(TS_INVALID_ARGUMENT, "ts_gemm_create: out is NULL");
  *out = nullptr;
  if (!package_dir || !*package_dir) return fail(TS_INVALID_ARGUMENT, "ts_gemm_create: no package folder given");
  return guarded("ts_gemm_create", [&] {
    ts_gemm_options o;
    ts_gemm_options_init(&o);
    if (options) o = *options;
    HandleOptions h;
    h.allow_foreign_device = o.allow_foreign_device != 0;
    if (o.cache_dir && *o.cache_dir) h.cache_dir = o.cache_dir;
    if (o.log || o.log_to_stderr) {
      ts_log_fn fn = o.log;
      void* user = o.log_user;
      bool to_stderr = o.log_to_stderr != 0;
      h.log = [fn, user, to_stderr](int level, const std::string& line) {
        if (fn) fn(user, level, line.c_str());
        if (to_stderr) std::fprintf(stderr, "tilesmith: %s\n", line.c_str());
      };
    }
    ErrorKind stage = ErrorKind::kInternal;
    auto handle = GemmHandle::create(package_dir, device, std::move(h), &stage);
    if (!handle.ok()) return fail(to_c(stage), handle.status().message());
    *out = new ts_gemm_handle{std::move(handle).value()};
    return ok();
  });
}

ts_status ts_gemm_destroy(ts_gemm_handle* h) {
  return guarded("ts_gemm_destroy", [&] {
    delete h;
    return ok();
  });
}

ts_status ts_gemm(ts_gemm_handle* h, const ts_gemm_problem* problem, const void* A, const void* B, void* C,
                  const void* bias, void* stream) {
  if (!h) return fail(TS_INVALID_ARGUMENT, "ts_gemm: handle is NULL");
  return guarded("ts_gemm", [&] {
    auto p = to_problem(problem);
    if (!p.ok()) return fail(p.status().with_context("ts_gemm"));
    Status s = h->impl->run(*p, GemmArgs{A, B, C, bias, stream});
    if (!s.ok()) return fail(s.with_context("ts_gemm " + p->describe()));
    return ok();
  });
}

ts_status ts_gemm_explain(ts_gemm_handle* h, const ts_gemm_problem* problem, ts_path* path, char* buf, size_t len) {
  if (!h) return fail(TS_INVALID_ARGUMENT, "ts_gemm_explain: handle is NULL");
  if (!buf && len > 0) return fail(TS_INVALID_ARGUMENT, "ts_gemm_explain: buf is NULL but len is not 0");
  return guarded("ts_gemm_explain", [&] {
    auto p = to_problem(problem);
    if (!p.ok()) return fail(p.status().with_context("ts_gemm_explain"));
    auto d = h->impl->decision(*p);
    if (!d.ok()) return fail(d.status().with_context("ts_gemm_explain " + p->describe()));
    if (path) *path = static_cast<ts_path>((*d)->path);
    if (len > 0) {
      const std::string& r = (*d)->reason;
      const std::size_t n = std::min(len - 1, r.size());
      std::memcpy(buf, r.data(), n);
      buf[n] = '\0';
    }
    return ok();
  });
}

const char* ts_last_error(void) { return t_last_error.c_str(); }

const char* ts_status_string(ts_status s) {
  switch (s) {
    case TS_OK: return "TS_OK";
    case TS_INVALID_ARGUMENT: return "TS_INVALID_ARGUMENT";
    case TS_PACKAGE_ERROR: return "TS_PACKAGE_ERROR";
    case TS_NOT_SUPPORTED: return "TS_NOT_SUPPORTED";
    case TS_DEVICE_ERROR: return "TS_DEVICE_ERROR";
    case TS_INTERNAL_ERROR: return "TS_INTERNAL_ERROR";
  }
  return "TS_UNKNOWN_STATUS";
}

const char* ts_path_string(ts_path p) {
  switch (p) {
    case TS_PATH_EXACT:
    case TS_PATH_NEAREST:
    case TS_PATH_VENDOR:
    case TS_PATH_FOREIGN_DEVICE: return path_name(static_cast<Path>(p));
  }
  return "unknown";
}

const char* ts_gemm_version(void) { return TILESMITH_VERSION; }

int ts_gemm_built_with_cuda(void) { return TILESMITH_HAVE_CUDA ? 1 : 0; }

}  // extern "C"
