// The front end of registry/expr.h: lexer, recursive-descent parser and the compiler
// from the parse tree to the postfix program registry/expr.cpp evaluates.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "registry/detail/expr_program.h"
#include "registry/expr.h"

namespace tilesmith {

int VariableTable::slot(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? -1 : it->second;
}

int VariableTable::add(std::string_view name) {
  int existing = slot(name);
  if (existing >= 0) return existing;
  int s = static_cast<int>(names_.size());
  names_.emplace_back(name);
  index_.emplace(names_.back(), s);
  return s;
}

namespace {

using expr_detail::Instr;
using expr_detail::Op;

// ---------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------
enum class Tok { kNumber, kName, kOp, kLParen, kRParen, kComma, kEnd };

struct Token {
  Tok kind;
  std::string text;
  double number = 0;
  int pos = 0;
};

std::string describe(const Token& t) {
  if (t.kind == Tok::kEnd) return "the end of the expression";
  return "'" + t.text + "'";
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  // Fills tokens or returns an error naming the offending character.
  Status run(std::vector<Token>* out) {
    size_t i = 0;
    while (true) {
      while (i < text_.size() && std::isspace(static_cast<unsigned char>(text_[i]))) ++i;
      if (i >= text_.size()) {
        out->push_back({Tok::kEnd, "", 0, static_cast<int>(i)});
        return {};
      }
      int pos = static_cast<int>(i);
      char c = text_[i];
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && i + 1 < text_.size() &&
           std::isdigit(static_cast<unsigned char>(text_[i + 1])))) {
        size_t j = i;
        while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
        if (j < text_.size() && text_[j] == '.') {
          ++j;
          while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
        }
        if (j < text_.size() && (text_[j] == 'e' || text_[j] == 'E')) {
          size_t k = j + 1;
          if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
          if (k < text_.size() && std::isdigit(static_cast<unsigned char>(text_[k]))) {
            while (k < text_.size() && std::isdigit(static_cast<unsigned char>(text_[k]))) ++k;
            j = k;
          }
        }
        if (j < text_.size() &&
            (std::isalpha(static_cast<unsigned char>(text_[j])) || text_[j] == '_'))
          return error_at(static_cast<int>(j),
                          "malformed number '" + std::string(text_.substr(i, j - i + 1)) + "'");
        std::string lit(text_.substr(i, j - i));
        out->push_back({Tok::kNumber, lit, std::strtod(lit.c_str(), nullptr), pos});
        i = j;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[j])) || text_[j] == '_'))
          ++j;
        out->push_back({Tok::kName, std::string(text_.substr(i, j - i)), 0, pos});
        i = j;
        continue;
      }
      if (c == '(') {
        out->push_back({Tok::kLParen, "(", 0, pos});
        ++i;
        continue;
      }
      if (c == ')') {
        out->push_back({Tok::kRParen, ")", 0, pos});
        ++i;
        continue;
      }
      if (c == ',') {
        out->push_back({Tok::kComma, ",", 0, pos});
        ++i;
        continue;
      }
      static const char* kTwo[] = {"**", "//", "<=", ">=", "==", "!=", "&&", "||"};
      bool matched = false;
      for (const char* two : kTwo) {
        if (text_.substr(i, 2) == two) {
          out->push_back({Tok::kOp, two, 0, pos});
          i += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (std::string_view("+-*/%<>!").find(c) != std::string_view::npos) {
        out->push_back({Tok::kOp, std::string(1, c), 0, pos});
        ++i;
        continue;
      }
      return error_at(pos, "unexpected character '" + std::string(1, c) + "'");
    }
  }

  Status error_at(int pos, const std::string& what) const {
    return Status::parse_error("syntax error at column " + std::to_string(pos + 1) + " of '" +
                               std::string(text_) + "': " + what);
  }

 private:
  std::string_view text_;
};

// ---------------------------------------------------------------------------------------
// Parser: recursive descent into a small tree, compiled to postfix afterwards (the tree
// makes chained comparisons easy: a < b < c becomes (a < b) and (b < c)).
// ---------------------------------------------------------------------------------------
enum class NodeKind { kNumber, kVar, kUnary, kBinary, kAnd, kOr, kNot, kCompare, kCall };

struct Node {
  NodeKind kind;
  int pos = 0;
  double number = 0;
  int slot = -1;
  Op op = Op::kConst;           // unary/binary/call operator
  std::vector<Op> compare_ops;  // kCompare: n-1 operators for n operands
  std::vector<std::unique_ptr<Node>> kids;
};

using NodePtr = std::unique_ptr<Node>;

NodePtr make(NodeKind kind, int pos) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->pos = pos;
  return n;
}

class Parser {
 public:
  Parser(std::string_view text, std::vector<Token> tokens, VariableTable& vars)
      : text_(text), tokens_(std::move(tokens)), vars_(vars) {}

  Result<NodePtr> parse_all() {
    NodePtr root = parse_or();
    if (!error_.ok()) return error_;
    if (peek().kind != Tok::kEnd) {
      fail(peek().pos,
           "expected an operator or the end of the expression, found " + describe(peek()));
      return error_;
    }
    return root;
  }

 private:
  const Token& peek() const { return tokens_[next_]; }
  const Token& take() { return tokens_[next_ == tokens_.size() - 1 ? next_ : next_++]; }
  bool is_op(const char* s) const { return peek().kind == Tok::kOp && peek().text == s; }
  bool is_word(const char* s) const { return peek().kind == Tok::kName && peek().text == s; }

  // Keeps the first error: later ones are consequences of it.
  void fail(int pos, const std::string& what) {
    if (error_.ok()) {
      error_ = Status::parse_error("syntax error at column " + std::to_string(pos + 1) + " of '" +
                                   std::string(text_) + "': " + what);
    }
  }

  NodePtr parse_or() {
    NodePtr left = parse_and();
    while (error_.ok() && (is_word("or") || is_op("||"))) {
      int pos = take().pos;
      NodePtr right = parse_and();
      if (!error_.ok()) return nullptr;
      auto n = make(NodeKind::kOr, pos);
      n->kids.push_back(std::move(left));
      n->kids.push_back(std::move(right));
      left = std::move(n);
    }
    return left;
  }

  NodePtr parse_and() {
    NodePtr left = parse_not();
    while (error_.ok() && (is_word("and") || is_op("&&"))) {
      int pos = take().pos;
      NodePtr right = parse_not();
      if (!error_.ok()) return nullptr;
      auto n = make(NodeKind::kAnd, pos);
      n->kids.push_back(std::move(left));
      n->kids.push_back(std::move(right));
      left = std::move(n);
    }
    return left;
  }

  NodePtr parse_not() {
    if (is_word("not") || is_op("!")) {
      int pos = take().pos;
      NodePtr operand = parse_not();
      if (!error_.ok()) return nullptr;
      auto n = make(NodeKind::kNot, pos);
      n->kids.push_back(std::move(operand));
      return n;
    }
    return parse_comparison();
  }

  bool comparison_op(Op* op) const {
    if (peek().kind != Tok::kOp) return false;
    const std::string& t = peek().text;
    if (t == "<")
      *op = Op::kLt;
    else if (t == "<=")
      *op = Op::kLe;
    else if (t == ">")
      *op = Op::kGt;
    else if (t == ">=")
      *op = Op::kGe;
    else if (t == "==")
      *op = Op::kEq;
    else if (t == "!=")
      *op = Op::kNe;
    else
      return false;
    return true;
  }

  NodePtr parse_comparison() {
    NodePtr first = parse_sum();
    Op op;
    if (!error_.ok() || !comparison_op(&op)) return first;
    auto n = make(NodeKind::kCompare, peek().pos);
    n->kids.push_back(std::move(first));
    while (error_.ok() && comparison_op(&op)) {
      take();
      n->compare_ops.push_back(op);
      n->kids.push_back(parse_sum());
    }
    if (!error_.ok()) return nullptr;
    return n;
  }

  NodePtr binary(Op op, int pos, NodePtr left, NodePtr right) {
    auto n = make(NodeKind::kBinary, pos);
    n->op = op;
    n->kids.push_back(std::move(left));
    n->kids.push_back(std::move(right));
    return n;
  }

  NodePtr parse_sum() {
    NodePtr left = parse_term();
    while (error_.ok() && (is_op("+") || is_op("-"))) {
      const Token& t = take();
      Op op = t.text == "+" ? Op::kAdd : Op::kSub;
      int pos = t.pos;
      NodePtr right = parse_term();
      if (!error_.ok()) return nullptr;
      left = binary(op, pos, std::move(left), std::move(right));
    }
    return left;
  }

  NodePtr parse_term() {
    NodePtr left = parse_factor();
    while (error_.ok() && (is_op("*") || is_op("/") || is_op("//") || is_op("%"))) {
      const Token& t = take();
      Op op = t.text == "*"    ? Op::kMul
              : t.text == "/"  ? Op::kDiv
              : t.text == "//" ? Op::kFloorDiv
                               : Op::kMod;
      int pos = t.pos;
      NodePtr right = parse_factor();
      if (!error_.ok()) return nullptr;
      left = binary(op, pos, std::move(left), std::move(right));
    }
    return left;
  }

  // factor: ('+'|'-') factor | power   (so -2**2 == -4 and 2**-1 == 0.5, as in Python)
  NodePtr parse_factor() {
    if (is_op("+") || is_op("-")) {
      const Token& t = take();
      bool neg = t.text == "-";
      int pos = t.pos;
      NodePtr operand = parse_factor();
      if (!error_.ok()) return nullptr;
      if (!neg) return operand;
      auto n = make(NodeKind::kUnary, pos);
      n->op = Op::kNeg;
      n->kids.push_back(std::move(operand));
      return n;
    }
    return parse_power();
  }

  NodePtr parse_power() {
    NodePtr base = parse_atom();
    if (error_.ok() && is_op("**")) {
      int pos = take().pos;
      NodePtr exponent = parse_factor();  // right-associative, binds a unary minus
      if (!error_.ok()) return nullptr;
      return binary(Op::kPow, pos, std::move(base), std::move(exponent));
    }
    return base;
  }

  NodePtr parse_atom() {
    const Token& t = peek();
    if (t.kind == Tok::kNumber) {
      take();
      auto n = make(NodeKind::kNumber, t.pos);
      n->number = t.number;
      return n;
    }
    if (t.kind == Tok::kLParen) {
      take();
      NodePtr inner = parse_or();
      if (!error_.ok()) return nullptr;
      if (peek().kind != Tok::kRParen) {
        fail(peek().pos, "expected ')' to close the '(' at column " + std::to_string(t.pos + 1) +
                             ", found " + describe(peek()));
        return nullptr;
      }
      take();
      return inner;
    }
    if (t.kind == Tok::kName) {
      static const char* kReserved[] = {"and", "or", "not"};
      for (const char* r : kReserved) {
        if (t.text == r) {
          fail(t.pos, "expected an operand, found the keyword '" + t.text + "'");
          return nullptr;
        }
      }
      Token name = take();
      if (name.text == "True" || name.text == "False") {
        auto n = make(NodeKind::kNumber, name.pos);
        n->number = name.text == "True" ? 1.0 : 0.0;
        return n;
      }
      if (peek().kind == Tok::kLParen) return parse_call(name);
      auto n = make(NodeKind::kVar, name.pos);
      n->slot = vars_.add(name.text);
      return n;
    }
    fail(t.pos, "expected a number, a name or '(', found " + describe(t));
    return nullptr;
  }

  NodePtr parse_call(const Token& name) {
    struct Fn {
      const char* name;
      Op op;
      int min_args, max_args;
    };
    static const Fn kFns[] = {
        {"min", Op::kMin, 2, 1 << 20}, {"max", Op::kMax, 2, 1 << 20},
        {"abs", Op::kAbs, 1, 1},       {"ceil_div", Op::kCeilDiv, 2, 2},
        {"int", Op::kTrunc, 1, 1},     {"float", Op::kConst, 1, 1},
    };
    const Fn* fn = nullptr;
    for (const Fn& f : kFns)
      if (name.text == f.name) fn = &f;
    if (!fn) {
      fail(name.pos,
           "unknown function '" + name.text + "' (known: min, max, abs, ceil_div, int, float)");
      return nullptr;
    }
    int open_pos = take().pos;  // '('
    auto n = make(NodeKind::kCall, name.pos);
    n->op = fn->op;
    if (peek().kind != Tok::kRParen) {
      while (true) {
        n->kids.push_back(parse_or());
        if (!error_.ok()) return nullptr;
        if (peek().kind == Tok::kComma) {
          take();
          continue;
        }
        break;
      }
    }
    if (peek().kind != Tok::kRParen) {
      fail(peek().pos, "expected ',' or ')' to close the call at column " +
                           std::to_string(open_pos + 1) + ", found " + describe(peek()));
      return nullptr;
    }
    take();
    int argc = static_cast<int>(n->kids.size());
    if (argc < fn->min_args || argc > fn->max_args) {
      std::string want = fn->min_args == fn->max_args ? std::to_string(fn->min_args)
                                                      : "at least " + std::to_string(fn->min_args);
      fail(name.pos, name.text + "() takes " + want + " argument(s), got " + std::to_string(argc));
      return nullptr;
    }
    return n;
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t next_ = 0;
  VariableTable& vars_;
  Status error_;
};

// ---------------------------------------------------------------------------------------
// Compiler: tree to postfix, tracking the stack depth the program needs.
// ---------------------------------------------------------------------------------------
class Compiler {
 public:
  std::vector<Instr> code;
  int depth = 0, max_depth = 0;

  void emit(Op op, int arg, int pos, int stack_change, double value = 0) {
    code.push_back({op, arg, pos, value});
    depth += stack_change;
    if (depth > max_depth) max_depth = depth;
  }

  void compile(const Node& n) {
    switch (n.kind) {
      case NodeKind::kNumber:
        emit(Op::kConst, 0, n.pos, +1, n.number);
        return;
      case NodeKind::kVar:
        emit(Op::kLoad, n.slot, n.pos, +1);
        return;
      case NodeKind::kUnary:
        compile(*n.kids[0]);
        emit(n.op, 0, n.pos, 0);
        return;
      case NodeKind::kNot:
        compile(*n.kids[0]);
        emit(Op::kNot, 0, n.pos, 0);
        return;
      case NodeKind::kBinary:
        compile(*n.kids[0]);
        compile(*n.kids[1]);
        emit(n.op, 0, n.pos, -1);
        return;
      case NodeKind::kAnd:
      case NodeKind::kOr: {
        compile(*n.kids[0]);
        size_t jump = code.size();
        emit(n.kind == NodeKind::kAnd ? Op::kJumpIfFalseElsePop : Op::kJumpIfTrueElsePop, 0, n.pos,
             -1);
        compile(*n.kids[1]);
        emit(Op::kBool, 0, n.pos, 0);
        code[jump].arg = static_cast<int>(code.size());
        return;
      }
      case NodeKind::kCompare: {
        // a op1 b op2 c  ==  (a op1 b) and (b op2 c); operands are pure, so evaluating b
        // twice changes nothing but time.
        std::vector<size_t> jumps;
        for (size_t i = 0; i < n.compare_ops.size(); ++i) {
          compile(*n.kids[i]);
          compile(*n.kids[i + 1]);
          emit(n.compare_ops[i], 0, n.pos, -1);
          if (i + 1 < n.compare_ops.size()) {
            jumps.push_back(code.size());
            emit(Op::kJumpIfFalseElsePop, 0, n.pos, -1);
          }
        }
        for (size_t j : jumps) code[j].arg = static_cast<int>(code.size());
        return;
      }
      case NodeKind::kCall: {
        for (const auto& k : n.kids) compile(*k);
        int argc = static_cast<int>(n.kids.size());
        if (n.op == Op::kConst) return;  // float(x) is x
        emit(n.op, argc, n.pos, 1 - argc);
        return;
      }
    }
  }
};

void collect_slots(const Node& n, std::vector<int>* out) {
  if (n.kind == NodeKind::kVar) out->push_back(n.slot);
  for (const auto& k : n.kids) collect_slots(*k, out);
}

}  // namespace

Expr::Expr() = default;
Expr::~Expr() = default;
Expr::Expr(const Expr&) = default;
Expr& Expr::operator=(const Expr&) = default;
Expr::Expr(Expr&&) noexcept = default;
Expr& Expr::operator=(Expr&&) noexcept = default;

Result<Expr> Expr::parse(std::string_view text, VariableTable& vars) {
  std::vector<Token> tokens;
  Lexer lexer(text);
  TS_RETURN_IF_ERROR(lexer.run(&tokens));
  if (tokens.size() == 1) return lexer.error_at(0, "the expression is empty");
  // Parse against a scratch copy so a failed parse adds no names to the caller's table.
  VariableTable scratch = vars;
  Parser parser(text, std::move(tokens), scratch);
  TS_ASSIGN_OR_RETURN(NodePtr root, parser.parse_all());
  vars = std::move(scratch);

  Compiler compiler;
  compiler.compile(*root);
  auto impl = std::make_shared<Impl>();
  impl->text = std::string(text);
  impl->code = std::move(compiler.code);
  impl->max_depth = compiler.max_depth;
  collect_slots(*root, &impl->used);
  std::sort(impl->used.begin(), impl->used.end());
  impl->used.erase(std::unique(impl->used.begin(), impl->used.end()), impl->used.end());
  Expr e;
  e.impl_ = std::move(impl);
  return e;
}

}  // namespace tilesmith
