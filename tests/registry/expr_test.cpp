#include "registry/expr.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tilesmith {
namespace {

// Parses and evaluates `text` with the given name=value bindings.
Result<double> run(const std::string& text,
                   const std::vector<std::pair<std::string, double>>& vars = {}) {
  VariableTable table;
  for (const auto& [name, value] : vars) table.add(name);
  auto e = Expr::parse(text, table);
  if (!e.ok()) return e.status();
  std::vector<double> values(table.size(), 0.0);
  for (const auto& [name, value] : vars) values[static_cast<size_t>(table.slot(name))] = value;
  return e->eval(values);
}

double value(const std::string& text,
             const std::vector<std::pair<std::string, double>>& vars = {}) {
  auto r = run(text, vars);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : std::nan("");
}

TEST(Expr, Precedence) {
  EXPECT_EQ(value("1 + 2 * 3"), 7);
  EXPECT_EQ(value("(1 + 2) * 3"), 9);
  EXPECT_EQ(value("2 ** 3 ** 2"), 512);  // right-associative
  EXPECT_EQ(value("-2 ** 2"), -4);       // ** binds tighter than unary minus
  EXPECT_EQ(value("2 ** -1"), 0.5);
  EXPECT_EQ(value("10 - 4 - 3"), 3);  // left-associative
  EXPECT_EQ(value("2 * 3 % 4"), 2);   // * and % share a level, left to right
  EXPECT_EQ(value("1 + 2 < 4"), 1);
  EXPECT_EQ(value("not 1 == 2"), 1);    // not binds looser than comparisons
  EXPECT_EQ(value("1 or 0 and 0"), 1);  // and binds tighter than or
  EXPECT_EQ(value("(1 or 0) and 0"), 0);
  EXPECT_EQ(value("--3"), 3);
  EXPECT_EQ(value("+3 - -3"), 6);
}

TEST(Expr, PythonDivisionAndModulo) {
  EXPECT_EQ(value("7 / 2"), 3.5);
  EXPECT_EQ(value("7 // 2"), 3);
  EXPECT_EQ(value("-7 // 2"), -4);
  EXPECT_EQ(value("7 // -2"), -4);
  EXPECT_EQ(value("-7 // -2"), 3);
  EXPECT_EQ(value("7 % 3"), 1);
  EXPECT_EQ(value("-7 % 3"), 2);  // sign of the divisor
  EXPECT_EQ(value("7 % -3"), -2);
  EXPECT_EQ(value("-7 % -3"), -1);
  EXPECT_EQ(value("7.5 // 2"), 3);
  EXPECT_EQ(value("7.5 % 2"), 1.5);
  EXPECT_EQ(value("-0.5 // 1"), -1);
  EXPECT_EQ(value("32 % ((8 * 16) / 16)"), 0);  // true division inside a modulo
  EXPECT_EQ(value("32 % ((8 * 8) / 16)"), 0);
  EXPECT_EQ(value("32 % ((8 * 16) / 32)"), 0);
  EXPECT_EQ(value("32 % ((16 * 32) / 8)"), 32);
  EXPECT_EQ(value("10 % (64 / 24)"), std::fmod(10.0, 64.0 / 24.0));
}

TEST(Expr, ChainedComparisons) {
  EXPECT_EQ(value("1 < 2 < 3"), 1);
  EXPECT_EQ(value("1 < 3 < 2"), 0);
  EXPECT_EQ(value("3 > 2 > 1"), 1);
  EXPECT_EQ(value("1 < 2 > 1"), 1);  // not (1 < 2) > 1
  EXPECT_EQ(value("(1 < 2) > 1"), 0);
  EXPECT_EQ(value("1 <= 1 == 1 != 2"), 1);
  EXPECT_EQ(value("A <= B <= C", {{"A", 4}, {"B", 8}, {"C", 8}}), 1);
  EXPECT_EQ(value("A <= B <= C", {{"A", 4}, {"B", 9}, {"C", 8}}), 0);
}

TEST(Expr, LogicAndFunctions) {
  EXPECT_EQ(value("3 and 5"), 1);  // yields 1/0, not the operand
  EXPECT_EQ(value("0 or 7"), 1);
  EXPECT_EQ(value("0 or 0"), 0);
  EXPECT_EQ(value("1 && !0"), 1);
  EXPECT_EQ(value("0 || !1"), 0);
  EXPECT_EQ(value("True + True"), 2);
  EXPECT_EQ(value("False or True"), 1);
  EXPECT_EQ(value("min(3, 1, 2)"), 1);
  EXPECT_EQ(value("max(3, 1, 2)"), 3);
  EXPECT_EQ(value("abs(-4.5)"), 4.5);
  EXPECT_EQ(value("ceil_div(7, 2)"), 4);
  EXPECT_EQ(value("ceil_div(8, 2)"), 4);
  EXPECT_EQ(value("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(value("int(-3.7)"), -3);
  EXPECT_EQ(value("float(3)"), 3);
  EXPECT_EQ(value("1.5e2 + .5"), 150.5);
  EXPECT_EQ(value("(M + BM - 1) // BM", {{"M", 1000}, {"BM", 128}}), 8);
}

TEST(Expr, ShortCircuitAvoidsErrors) {
  EXPECT_EQ(value("X != 0 and Y % X == 0", {{"X", 0}, {"Y", 5}}), 0);
  EXPECT_EQ(value("X == 0 or Y // X > 1", {{"X", 0}, {"Y", 5}}), 1);
  EXPECT_EQ(value("X != 0 and Y % X == 0", {{"X", 5}, {"Y", 10}}), 1);
  EXPECT_EQ(value("0 < X < Y // X", {{"X", 0}, {"Y", 10}}), 0);
}

TEST(Expr, DivisionByZeroIsAnError) {
  for (const char* text : {"1 / X", "1 // X", "1 % X", "ceil_div(1, X)", "X ** -1"}) {
    auto r = run(text, {{"X", 0}});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("by zero"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().message();
  }
  auto r = run("A + B % (C - 2)", {{"A", 1}, {"B", 1}, {"C", 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("column 7"), std::string::npos) << r.status().message();
  EXPECT_FALSE(run("(-8) ** 0.5").ok());
}

TEST(Expr, SyntaxErrorsNamePositionAndExpectation) {
  struct Case {
    const char* text;
    const char* column;
    const char* what;
  };
  const Case cases[] = {
      {"A + * B", "column 5", "expected a number, a name or '('"},
      {"(A + B", "column 7", "expected ')'"},
      {"A B", "column 3", "expected an operator"},
      {"A % ", "column 5", "the end of the expression"},
      {"A $ B", "column 3", "unexpected character '$'"},
      {"foo(1)", "column 1", "unknown function 'foo'"},
      {"min(1)", "column 1", "takes at least 2"},
      {"abs(1, 2)", "column 1", "takes 1"},
      {"max(1, 2", "column 9", "expected ',' or ')'"},
      {"A and or B", "column 7", "keyword 'or'"},
      {"12abc", "column 3", "malformed number"},
      {"", "column 1", "empty"},
  };
  for (const Case& c : cases) {
    VariableTable vars;
    auto r = Expr::parse(c.text, vars);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kParseError);
    EXPECT_NE(r.status().message().find(c.column), std::string::npos)
        << c.text << " -> " << r.status().message();
    EXPECT_NE(r.status().message().find(c.what), std::string::npos)
        << c.text << " -> " << r.status().message();
    EXPECT_EQ(vars.size(), 0u) << "a failed parse must not add names";
  }
}

TEST(Expr, SlotsAndTable) {
  VariableTable vars;
  vars.add("K");
  auto e = Expr::parse("B * A + B - K", vars);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(vars.size(), 3u);
  EXPECT_EQ(vars.slot("K"), 0);
  EXPECT_EQ(vars.slot("B"), 1);
  EXPECT_EQ(vars.slot("A"), 2);
  EXPECT_EQ(vars.slot("Z"), -1);
  EXPECT_EQ(e->used_slots(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(e->text(), "B * A + B - K");
  std::vector<double> values = {1, 3, 4};
  EXPECT_EQ(*e->eval(values), 14);
  // Too few values is an error, not a read past the end.
  std::vector<double> short_values = {1};
  EXPECT_FALSE(e->eval(short_values).ok());
  // Copies share the program and evaluate alike.
  Expr copy = *e;
  EXPECT_EQ(*copy.eval(values), 14);
  EXPECT_FALSE(Expr().eval(values).ok());
}

TEST(Expr, DeepExpressionsUseTheHeapStack) {
  std::string text = "1";
  for (int i = 0; i < 100; ++i) text = "(1 + " + text + ")";
  EXPECT_EQ(value(text), 101);
  std::string right = "1";
  for (int i = 0; i < 50; ++i) right = "1 + (" + right + ")";
  EXPECT_EQ(value(right), 51);
}

}  // namespace
}  // namespace tilesmith
