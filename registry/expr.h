#pragma once
// Expressions in Kernel Tuner's restriction syntax (a Python subset), used for
// constraints ("BLOCK_M % (WARP_M * VEC) == 0"), derived values ("THREADS") and launch
// geometry ("(M + BLOCK_M - 1) // BLOCK_M").
//
// Grammar (Python precedence, lowest first): `or`, `and`, `not`, comparisons (chained:
// a < b <= c), + -, * / // %, unary + -, ** (right-assoc), atoms: integer and float
// literals, True/False, names, parentheses, calls min(a,b,...), max(a,b,...), abs(a),
// ceil_div(a,b). `&&`, `||` and `!` are accepted as and/or/not.
// Semantics are Python's on doubles: `/` is true division, `//` floor division, `%` takes
// the sign of the divisor, comparisons and and/or yield 1.0 / 0.0, nonzero is true.
// Division or modulo by zero is an evaluation error, never a silent value.
//
// An Expr is immutable after parse; eval is const and thread-safe.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace tilesmith {

// Maps names to slots in a value array. Parsing adds unknown names.
class VariableTable {
 public:
  int slot(std::string_view name) const;  // -1 when absent
  int add(std::string_view name);         // existing slot or a new one
  const std::vector<std::string>& names() const { return names_; }
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> index_;
};

class Expr {
 public:
  Expr();
  ~Expr();
  Expr(const Expr&);
  Expr& operator=(const Expr&);
  Expr(Expr&&) noexcept;
  Expr& operator=(Expr&&) noexcept;

  // Parses `text`; every name it uses is added to `vars`. A syntax error names the
  // position and what was expected.
  static Result<Expr> parse(std::string_view text, VariableTable& vars);

  // values[slot] for each slot of the table given to parse (values.size() >= table size).
  // Returns false and sets *error on division by zero or a bad call.
  bool eval(std::span<const double> values, double* out, std::string* error) const;
  // Convenience for tests and one-off uses.
  Result<double> eval(std::span<const double> values) const;

  const std::string& text() const;
  // Slots of the names this expression reads (sorted, unique).
  const std::vector<int>& used_slots() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;  // immutable, so sharing on copy is safe
};

}  // namespace tilesmith
