// Python's operators between script values: tensor op anything (the tensor's method), scalar op
// tensor (the reflected method), int and float arithmetic with Python's // and % rounding,
// symbolic integers, and + and * on lists and tuples.
#include "Value.h"

#include "lazyjit/Support/Error.h"

#include <cmath>

namespace lazyjit::script {

namespace {

bool isIntLike(const Value &v) { return v.is<int64_t>() || v.is<bool>(); }

Value fromSInt(const SInt &x) { return x.isInt() ? Value(x.asInt()) : Value(x); }

[[noreturn]] void unsupported(const std::string &op, const Value &l, const Value &r) {
  throw Error(
      fmt::format("unsupported operand types for {}: '{}' and '{}'", op, typeName(l), typeName(r)));
}

Value tensorOp(const std::string &op, Tensor a, Value &&r) {
  if (op == "@") return std::move(a).matmul(toTensor(std::move(r), "the right operand of @"));
  Operand b = toOperand(std::move(r), "the right operand of " + op);
  if (op == "+") return std::move(a) + std::move(b);
  if (op == "-") return std::move(a) - std::move(b);
  if (op == "*") return std::move(a) * std::move(b);
  if (op == "/") return std::move(a) / std::move(b);
  if (op == "**") return std::move(a).pow(std::move(b));
  if (op == "<") return std::move(a) < std::move(b);
  if (op == ">") return std::move(a) > std::move(b);
  if (op == "<=") return std::move(a) <= std::move(b);
  if (op == ">=") return std::move(a) >= std::move(b);
  if (op == "==") return std::move(a) == std::move(b);
  if (op == "!=") return std::move(a) != std::move(b);
  throw InternalError("unknown operator " + op);
}

// scalar op Tensor: Python calls the tensor's reflected method.
Value reflectedOp(const std::string &op, double a, Tensor b) {
  if (op == "+") return a + std::move(b);
  if (op == "-") return a - std::move(b);
  if (op == "*") return a * std::move(b);
  if (op == "/") return a / std::move(b);
  if (op == "**") return std::move(b).pow(a, true);
  if (op == "<") return std::move(b) > a;
  if (op == ">") return std::move(b) < a;
  if (op == "<=") return std::move(b) >= a;
  if (op == ">=") return std::move(b) <= a;
  if (op == "==") return std::move(b) == a;
  if (op == "!=") return std::move(b) != a;
  throw Error(fmt::format("unsupported operand types for {}: 'float' and 'Tensor'", op));
}

Value numberOp(const std::string &op, const Value &l, const Value &r) {
  if (isIntLike(l) && isIntLike(r)) {
    int64_t a = toInt(l, "operand"), b = toInt(r, "operand");
    if (op == "+") return a + b;
    if (op == "-") return a - b;
    if (op == "*") return a * b;
    if (op == "**" && b >= 0) {
      int64_t p = 1;
      for (int64_t k = 0; k < b && k < 64; ++k) p *= a;
      return p;
    }
  }
  double a = toDouble(l, "operand"), b = toDouble(r, "operand");
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") {
    if (b == 0) throw Error("division by zero");
    return a / b;
  }
  if (op == "**") return std::pow(a, b);
  if (op == "<") return a < b;
  if (op == ">") return a > b;
  if (op == "<=") return a <= b;
  if (op == ">=") return a >= b;
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  unsupported(op, l, r);
}

} // namespace

Value binaryOp(const std::string &op, Value &&l, Value &&r) {
  if (l.is<Tensor>()) return tensorOp(op, std::move(l.as<Tensor>()), std::move(r));
  if (r.is<Tensor>()) {
    if (!l.isNumber() || op == "@") unsupported(op, l, r);
    return reflectedOp(op, toDouble(l, "operand"), std::move(r.as<Tensor>()));
  }
  if (l.is<SInt>() || r.is<SInt>()) {
    if (!(l.is<SInt>() || isIntLike(l)) || !(r.is<SInt>() || isIntLike(r))) unsupported(op, l, r);
    SInt a = toSInt(l, "operand"), b = toSInt(r, "operand");
    if (op == "+") return fromSInt(a + b);
    if (op == "-") return fromSInt(a - b);
    if (op == "*") return fromSInt(a * b);
    unsupported(op, l, r);
  }
  if (l.is<SeqV>() && r.is<SeqV>() && op == "+") {
    SeqV out = std::move(l.as<SeqV>());
    for (auto &x : r.as<SeqV>().items) out.items.push_back(std::move(x));
    return out;
  }
  if (op == "*" && ((l.is<SeqV>() && isIntLike(r)) || (isIntLike(l) && r.is<SeqV>()))) {
    const SeqV &s = l.is<SeqV>() ? l.as<SeqV>() : r.as<SeqV>();
    int64_t n = toInt(l.is<SeqV>() ? r : l, "repeat count");
    if (n * static_cast<int64_t>(s.items.size()) > 1000000) throw Error("sequence too long");
    SeqV out{{}, s.isList};
    for (int64_t k = 0; k < n; ++k)
      for (const auto &x : s.items) out.items.push_back(x);
    return out;
  }
  if (l.isNumber() && r.isNumber()) return numberOp(op, l, r);
  unsupported(op, l, r);
}

Value unaryOp(bool neg, Value &&v) {
  if (v.is<Tensor>()) return neg ? -std::move(v.as<Tensor>()) : std::move(v);
  if (v.is<SInt>()) return neg ? fromSInt(-v.as<SInt>()) : std::move(v);
  if (v.is<double>()) return neg ? -v.as<double>() : v.as<double>();
  if (isIntLike(v)) return neg ? -toInt(v, "operand") : toInt(v, "operand");
  throw Error(fmt::format("bad operand type for unary {}: '{}'", neg ? "-" : "+", typeName(v)));
}

} // namespace lazyjit::script
