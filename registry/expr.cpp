// The evaluator of registry/expr.h: runs the postfix program registry/expr_parse.cpp
// compiled, with Python's arithmetic on doubles.

#include "registry/expr.h"

#include <cmath>
#include <memory>
#include <string>

#include "registry/detail/expr_program.h"

namespace tilesmith {
namespace {

using expr_detail::Instr;
using expr_detail::Op;

// ---------------------------------------------------------------------------------------
// Python arithmetic on doubles. CPython's float_divmod, so that -7 // 2 == -4,
// -7 % 2 == 1, 7 % -2 == -1 and results of integer-valued operands stay exact.
// ---------------------------------------------------------------------------------------
void python_divmod(double a, double b, double* floordiv, double* mod) {
  double m = std::fmod(a, b);
  double div = (a - m) / b;
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) {
      m += b;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, b);
  }
  double fd;
  if (div != 0.0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, a / b);
  }
  *floordiv = fd;
  *mod = m;
}

bool eval_error(const std::string& text, int pos, const char* what, std::string* error) {
  if (error)
    *error = std::string(what) + " at column " + std::to_string(pos + 1) + " of '" + text + "'";
  return false;
}

}  // namespace

bool Expr::eval(std::span<const double> values, double* out, std::string* error) const {
  if (!impl_) {
    if (error) *error = "empty expression";
    return false;
  }
  const Impl& im = *impl_;
  // Most expressions need a handful of stack slots; deep ones fall back to the heap.
  constexpr int kInline = 32;
  double inline_stack[kInline];
  std::unique_ptr<double[]> heap;
  double* st = inline_stack;
  if (im.max_depth > kInline) {
    heap = std::make_unique<double[]>(static_cast<size_t>(im.max_depth));
    st = heap.get();
  }
  int sp = 0;  // number of values on the stack
  const Instr* code = im.code.data();
  const int n = static_cast<int>(im.code.size());
  for (int pc = 0; pc < n; ++pc) {
    const Instr& in = code[pc];
    switch (in.op) {
      case Op::kConst:
        st[sp++] = in.value;
        break;
      case Op::kLoad:
        if (static_cast<size_t>(in.arg) >= values.size())
          return eval_error(im.text, in.pos, "no value for a name", error);
        st[sp++] = values[static_cast<size_t>(in.arg)];
        break;
      case Op::kNeg:
        st[sp - 1] = -st[sp - 1];
        break;
      case Op::kNot:
        st[sp - 1] = st[sp - 1] == 0.0 ? 1.0 : 0.0;
        break;
      case Op::kBool:
        st[sp - 1] = st[sp - 1] != 0.0 ? 1.0 : 0.0;
        break;
      case Op::kAdd:
        --sp;
        st[sp - 1] += st[sp];
        break;
      case Op::kSub:
        --sp;
        st[sp - 1] -= st[sp];
        break;
      case Op::kMul:
        --sp;
        st[sp - 1] *= st[sp];
        break;
      case Op::kDiv:
        --sp;
        if (st[sp] == 0.0) return eval_error(im.text, in.pos, "division by zero", error);
        st[sp - 1] /= st[sp];
        break;
      case Op::kFloorDiv:
      case Op::kMod: {
        --sp;
        if (st[sp] == 0.0)
          return eval_error(im.text, in.pos,
                            in.op == Op::kMod ? "modulo by zero" : "floor division by zero", error);
        double q, r;
        python_divmod(st[sp - 1], st[sp], &q, &r);
        st[sp - 1] = in.op == Op::kMod ? r : q;
        break;
      }
      case Op::kPow: {
        --sp;
        double a = st[sp - 1], b = st[sp];
        if (a == 0.0 && b < 0.0)
          return eval_error(im.text, in.pos, "zero raised to a negative power (division by zero)",
                            error);
        if (a < 0.0 && b != std::floor(b))
          return eval_error(im.text, in.pos, "negative number raised to a fractional power", error);
        st[sp - 1] = std::pow(a, b);
        break;
      }
      case Op::kLt:
        --sp;
        st[sp - 1] = st[sp - 1] < st[sp] ? 1.0 : 0.0;
        break;
      case Op::kLe:
        --sp;
        st[sp - 1] = st[sp - 1] <= st[sp] ? 1.0 : 0.0;
        break;
      case Op::kGt:
        --sp;
        st[sp - 1] = st[sp - 1] > st[sp] ? 1.0 : 0.0;
        break;
      case Op::kGe:
        --sp;
        st[sp - 1] = st[sp - 1] >= st[sp] ? 1.0 : 0.0;
        break;
      case Op::kEq:
        --sp;
        st[sp - 1] = st[sp - 1] == st[sp] ? 1.0 : 0.0;
        break;
      case Op::kNe:
        --sp;
        st[sp - 1] = st[sp - 1] != st[sp] ? 1.0 : 0.0;
        break;
      case Op::kMin:
      case Op::kMax: {
        int argc = in.arg;
        double r = st[sp - argc];
        for (int i = sp - argc + 1; i < sp; ++i)
          r = in.op == Op::kMin ? (st[i] < r ? st[i] : r) : (st[i] > r ? st[i] : r);
        sp -= argc - 1;
        st[sp - 1] = r;
        break;
      }
      case Op::kAbs:
        st[sp - 1] = std::fabs(st[sp - 1]);
        break;
      case Op::kTrunc:
        st[sp - 1] = std::trunc(st[sp - 1]);
        break;
      case Op::kCeilDiv: {
        --sp;
        if (st[sp] == 0.0) return eval_error(im.text, in.pos, "ceil_div by zero", error);
        double q, r;
        python_divmod(-st[sp - 1], st[sp], &q, &r);  // ceil(a / b) == -((-a) // b)
        st[sp - 1] = -q + 0.0;                       // + 0.0 turns -0 into 0
        break;
      }
      case Op::kJumpIfFalseElsePop:
        if (st[sp - 1] == 0.0) {
          st[sp - 1] = 0.0;
          pc = in.arg - 1;
        } else {
          --sp;
        }
        break;
      case Op::kJumpIfTrueElsePop:
        if (st[sp - 1] != 0.0) {
          st[sp - 1] = 1.0;
          pc = in.arg - 1;
        } else {
          --sp;
        }
        break;
    }
  }
  *out = st[0];
  return true;
}

Result<double> Expr::eval(std::span<const double> values) const {
  double out = 0;
  std::string error;
  if (!eval(values, &out, &error)) return Status::invalid(error);
  return out;
}

const std::string& Expr::text() const {
  static const std::string kEmpty;
  return impl_ ? impl_->text : kEmpty;
}

const std::vector<int>& Expr::used_slots() const {
  static const std::vector<int> kNone;
  return impl_ ? impl_->used : kNone;
}

}  // namespace tilesmith
