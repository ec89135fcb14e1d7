#pragma once
// What registry/expr_parse.cpp (lexer, parser, compiler) hands registry/expr.cpp (the
// evaluator): the postfix program of one expression. Private to the registry module.

#include <cstdint>
#include <string>
#include <vector>

#include "registry/expr.h"

namespace tilesmith {
namespace expr_detail {

// ---------------------------------------------------------------------------------------
// Program: postfix instructions over a value stack. and/or short-circuit with jumps so
// that "X != 0 and Y % X == 0" never divides by zero, exactly as in Python.
// ---------------------------------------------------------------------------------------
enum class Op : std::uint8_t {
  kConst,
  kLoad,
  kNeg,
  kNot,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kMod,
  kPow,
  kLt,
  kLe,
  kGt,
  kGe,
  kEq,
  kNe,
  kMin,
  kMax,
  kAbs,
  kCeilDiv,
  kTrunc,
  kJumpIfFalseElsePop,  // top == 0: top = 0, jump; else pop
  kJumpIfTrueElsePop,   // top != 0: top = 1, jump; else pop
  kBool,                // top = (top != 0)
};

struct Instr {
  Op op;
  int arg = 0;       // slot, argument count or jump target
  int pos = 0;       // offset in the text, for error messages
  double value = 0;  // kConst
};

}  // namespace expr_detail

struct Expr::Impl {
  std::string text;
  std::vector<expr_detail::Instr> code;
  int max_depth = 0;
  std::vector<int> used;
};

}  // namespace tilesmith
