// Statement execution and expression evaluation, with Python's evaluation order (receiver first,
// then arguments left to right); the operators themselves are in ScriptOperators.cpp.
#include "Builtins.h"
#include "ScriptEval.h"
#include "ToolError.h"

#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Error.h"

#include <cmath>
#include <ostream>

namespace lazyjit::script {

using tool::ToolError;

void Evaluator::fail(Loc loc, const std::string &msg, int code) const {
  throw ToolError(fmt::format("{}:{}:{}: error: {}", script.filename, loc.line, loc.col, msg),
                  code);
}

// Runs `f`, turning any error it raises into a ToolError located at `loc` (the innermost
// location wins: an error that already carries one passes through).
template <typename F> auto Evaluator::located(Loc loc, F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const ToolError &) {
    throw;
  } catch (const InternalError &e) {
    fail(loc, std::string("internal error: ") + e.what(), 2);
  } catch (const Error &e) {
    fail(loc, e.what());
  } catch (const std::bad_alloc &) {
    fail(loc, "out of memory: the script needs more memory than this host has");
  } catch (const std::exception &e) {
    fail(loc, std::string("internal error: ") + e.what(), 2);
  }
}

// ---- subscripts --------------------------------------------------------------------------------

namespace {

std::optional<int64_t> sliceBound(const Value &v, const char *what) {
  if (v.is<NoneV>()) return std::nullopt;
  return toInt(v, what);
}

} // namespace

// ---- statements ---------------------------------------------------------------------------------

void Evaluator::run() {
  for (const Stmt &st : script.stmts) exec(st);
  line = 0;
}

void Evaluator::bind(const std::string &name, Value v) {
  env[name] = std::move(v);
  assignOrder.erase(std::remove(assignOrder.begin(), assignOrder.end(), name), assignOrder.end());
  assignOrder.push_back(name);
}

void Evaluator::exec(const Stmt &st) {
  line = st.loc.line;
  switch (st.kind) {
  case StmtKind::With: {
    // `with Tensor.train():` sets Tensor.training for the block; `with exec_count() as k:` stops
    // the count when the block ends
    Value ctx = eval(*st.value);
    std::optional<bool> prevTraining;
    if (ctx.is<TrainV>()) {
      prevTraining = Tensor::training;
      Tensor::training = ctx.as<TrainV>().val;
    } else if (!ctx.is<CounterV>()) {
      fail(st.loc, fmt::format("a '{}' cannot be used in 'with' (Tensor.train() and "
                               "exec_count() can)",
                               typeName(ctx)));
    }
    if (!st.targets.empty()) {
      bind(st.targets[0][0], ctx.is<CounterV>() ? ctx : Value(NoneV{}));
      lastAssigned = st.targets[0][0];
      lastAssignedLoc = st.loc;
    }
    for (const Stmt &b : st.body) exec(b);
    if (prevTraining) Tensor::training = *prevTraining;
    if (ctx.is<CounterV>()) *ctx.as<CounterV>().stop = globalCounters().kernelCount;
    return;
  }
  case StmtKind::Assign: {
    Value v = eval(*st.value);
    for (size_t g = 0; g < st.targets.size(); ++g) {
      bool last = g + 1 == st.targets.size();
      const auto &names = st.targets[g];
      if (names.size() == 1) {
        // a single name binds the whole value (even a tuple)
        bind(names[0], last ? std::move(v) : v);
      } else {
        Value src = last ? std::move(v) : v;
        if (!src.is<SeqV>())
          fail(st.loc,
               fmt::format("cannot unpack a {} into {} names", typeName(src), names.size()));
        auto &items = src.as<SeqV>().items;
        if (items.size() != names.size())
          fail(st.loc,
               fmt::format("cannot unpack {} values into {} names", items.size(), names.size()));
        for (size_t k = 0; k < names.size(); ++k) bind(names[k], std::move(items[k]));
      }
    }
    lastAssigned = st.targets.back().back();
    lastAssignedLoc = st.loc;
    return;
  }
  case StmtKind::SetAttr: {
    // Python evaluates the value, then the object, then sets the attribute
    Value v = eval(*st.value);
    Value obj = eval(*st.target);
    located(st.attrLoc, [&] { setAttribute(std::move(obj), st.attrName, std::move(v)); });
    return;
  }
  case StmtKind::SetItem: {
    // Python evaluates the value, then the object, then the index
    Value v = eval(*st.value);
    Value obj = eval(*st.target->kids[0]);
    std::vector<Value> items = evalIndexItems(*st.target);
    located(st.loc, [&] {
      if (!obj.is<Tensor>())
        throw Error(fmt::format("'{}' object does not support item assignment", typeName(obj)));
      setTensorItem(obj.as<Tensor>(), std::move(items), v);
    });
    return;
  }
  case StmtKind::Del:
    for (size_t k = 0; k < st.names.size(); ++k) {
      if (env.erase(st.names[k])) continue;
      if (isBuiltinName(st.names[k]))
        deletedBuiltins.push_back(st.names[k]);
      else
        fail(st.nameLocs[k], "name '" + st.names[k] + "' is not defined");
    }
    return;
  case StmtKind::Realize: {
    std::vector<Tensor> ts;
    for (size_t k = 0; k < st.names.size(); ++k) {
      Value v = lookup(st.names[k], st.nameLocs[k]);
      if (!v.is<Tensor>())
        fail(st.nameLocs[k], fmt::format("cannot realize '{}': it is a {}, not a Tensor",
                                         st.names[k], typeName(v)));
      ts.push_back(std::move(v.as<Tensor>()));
    }
    located(st.loc, [&] { Tensor::corealize(ts); });
    return;
  }
  case StmtKind::Out:
    outNames = st.names;
    outLocs = st.nameLocs;
    return;
  case StmtKind::Eval: {
    Value discarded = eval(*st.value);
    return;
  }
  }
}

std::vector<std::pair<std::string, Tensor>> Evaluator::outputs() const {
  std::vector<std::string> names = outNames;
  std::vector<Loc> locs = outLocs;
  if (names.empty()) {
    // the last assigned name; when it holds no tensor (a layer, an optimizer, a count), the last
    // assigned name that does
    std::string name;
    if (auto it = env.find(lastAssigned); it == env.end() || !it->second.is<Tensor>())
      for (auto n = assignOrder.rbegin(); n != assignOrder.rend() && name.empty(); ++n)
        if (auto e = env.find(*n); e != env.end() && e->second.is<Tensor>()) name = *n;
    if (name.empty()) name = lastAssigned;
    if (name.empty())
      throw ToolError(script.filename + ":1:1: error: the script has no outputs: assign a "
                                        "tensor or name the outputs with 'out'",
                      1);
    names.push_back(name);
    locs.push_back(lastAssignedLoc);
  }
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t k = 0; k < names.size(); ++k) {
    auto it = env.find(names[k]);
    if (it == env.end()) fail(locs[k], "output '" + names[k] + "' is not defined");
    if (!it->second.is<Tensor>() || !it->second.as<Tensor>().defined())
      fail(locs[k],
           fmt::format("output '{}' is a {}, not a Tensor", names[k], typeName(it->second)));
    out.emplace_back(names[k], it->second.as<Tensor>());
  }
  return out;
}

// ---- expressions --------------------------------------------------------------------------------

Value Evaluator::lookup(const std::string &name, Loc loc) const {
  if (auto it = env.find(name); it != env.end()) return it->second; // a new reference
  if (isBuiltinName(name) &&
      std::find(deletedBuiltins.begin(), deletedBuiltins.end(), name) == deletedBuiltins.end())
    return BuiltinV{name};
  fail(loc, "name '" + name + "' is not defined");
}

Value Evaluator::eval(const Expr &e) {
  switch (e.kind) {
  case ExprKind::Int:
    return e.ival;
  case ExprKind::Float:
    return e.fval;
  case ExprKind::Str:
    return e.name;
  case ExprKind::Bool:
    return e.ival != 0;
  case ExprKind::None:
    return NoneV{};
  case ExprKind::Ellipsis:
    return EllipsisV{};
  case ExprKind::Name:
    return lookup(e.name, e.loc);
  case ExprKind::Tuple:
  case ExprKind::List: {
    SeqV s{{}, e.kind == ExprKind::List};
    for (const auto &k : e.kids) s.items.push_back(eval(*k));
    return s;
  }
  case ExprKind::Neg:
  case ExprKind::Pos: {
    Value v = eval(*e.kids[0]);
    return located(e.loc, [&] { return unaryOp(e.kind == ExprKind::Neg, std::move(v)); });
  }
  case ExprKind::Binary:
  case ExprKind::Compare: {
    Value l = eval(*e.kids[0]);
    Value r = eval(*e.kids[1]);
    return located(e.loc, [&] { return binaryOp(e.op, std::move(l), std::move(r)); });
  }
  case ExprKind::Attr: {
    Value obj = eval(*e.kids[0]);
    return located(e.loc, [&] { return getAttribute(std::move(obj), e.name); });
  }
  case ExprKind::Call:
    return evalCall(e);
  case ExprKind::Subscript:
    return evalSubscript(e);
  case ExprKind::Slice:
    fail(e.loc, "a slice is only allowed inside []");
  case ExprKind::Starred:
    fail(e.loc, "'*' is only allowed in call arguments");
  }
  fail(e.loc, "unknown expression", 2);
}

Value Evaluator::evalCall(const Expr &e) {
  const Expr &callee = *e.kids[0];
  // Python evaluates the callee (the receiver of a method) before the arguments.
  std::optional<Value> receiver, function;
  if (callee.kind == ExprKind::Attr)
    receiver = eval(*callee.kids[0]);
  else
    function = eval(callee);

  size_t nkw = e.kwNames.size();
  size_t npos = e.kids.size() - 1 - nkw;
  std::vector<Value> pos;
  for (size_t k = 0; k < npos; ++k) {
    const Expr &arg = *e.kids[1 + k];
    if (arg.kind == ExprKind::Starred) {
      Value seq = eval(*arg.kids[0]);
      if (!seq.is<SeqV>())
        fail(arg.loc, fmt::format("'*' needs a tuple or a list, got {}", typeName(seq)));
      for (auto &x : seq.as<SeqV>().items) pos.push_back(std::move(x));
    } else {
      pos.push_back(eval(arg));
    }
  }
  std::vector<std::pair<std::string, Value>> kw;
  for (size_t k = 0; k < nkw; ++k) kw.emplace_back(e.kwNames[k], eval(*e.kids[1 + npos + k]));

  std::string name = callee.kind == ExprKind::Attr   ? callee.name
                     : callee.kind == ExprKind::Name ? callee.name
                                                     : "call";
  CallArgs args(name, std::move(pos), std::move(kw));
  if (function && function->is<BuiltinV>()) {
    const std::string &fn = function->as<BuiltinV>().name;
    if (fn == "exec_count") return located(e.loc, [&] { return execCount(args); });
    if (fn == "print") return located(e.loc, [&] { return print(args); });
  }
  if (receiver) {
    NodeRef variableBefore;
    if (name == "bind" && receiver->is<SInt>()) variableBefore = receiver->as<SInt>().node();
    Value out = located(callee.loc, [&] { return callMethod(std::move(*receiver), name, args); });
    if (variableBefore) rebindVariable(variableBefore, out.as<SInt>());
    return out;
  }
  return located(e.loc, [&] { return callValue(std::move(*function), args); });
}

void Evaluator::rebindVariable(const NodeRef &unbound, const SInt &bound) {
  // Python's bind mutates the Variable object, so every name that holds it sees the value (as in
  // `x.shrink(((0, i.bind(2)), (i, i + 2)))`). Library nodes never change; the script emulates
  // the mutation on its names. Expressions built before the bind keep the unbound variable.
  if (bound.node() == unbound) return;
  for (auto &[n, v] : env)
    if (v.is<SInt>() && v.as<SInt>().node() == unbound) v = bound;
}

Value Evaluator::execCount(CallArgs &args) {
  args.finish();
  // exec_count of external_test_opt.py: realize every live tensor, then count from here
  std::vector<Tensor> live;
  std::unordered_set<const TensorImpl *> seen;
  for (const auto &[name, v] : env) collectTensors(v, live, seen);
  for (Tensor &t : live) t.realize();
  return CounterV{globalCounters().kernelCount};
}

Value Evaluator::print(CallArgs &args) {
  std::vector<Value> values = args.rest(0);
  auto sep = args.take(SIZE_MAX, "sep");
  auto end = args.take(SIZE_MAX, "end");
  args.finish();
  auto text = [](const std::optional<Value> &v, const char *dflt, const char *what) {
    if (!v || v->is<NoneV>()) return std::string(dflt);
    if (!v->is<std::string>()) throw Error(fmt::format("print(): {} must be a string", what));
    return v->as<std::string>();
  };
  std::string s = text(sep, " ", "sep"), line;
  for (size_t i = 0; i < values.size(); ++i)
    line += (i ? s : "") +
            (values[i].is<std::string>() ? values[i].as<std::string>() : repr(values[i]));
  printOut << line << text(end, "\n", "end");
  return NoneV{};
}

std::vector<Value> Evaluator::evalIndexItems(const Expr &e) {
  std::vector<Value> items;
  for (size_t k = 1; k < e.kids.size(); ++k) {
    const Expr &it = *e.kids[k];
    if (it.kind == ExprKind::Slice) {
      Value a = eval(*it.kids[0]), b = eval(*it.kids[1]), c = eval(*it.kids[2]);
      SliceV s;
      located(it.loc, [&] {
        s.start = sliceBound(a, "slice start");
        s.stop = sliceBound(b, "slice stop");
        s.step = sliceBound(c, "slice step");
      });
      items.emplace_back(s);
    } else {
      items.push_back(eval(it));
    }
  }
  return items;
}

Value Evaluator::evalSubscript(const Expr &e) {
  Value obj = eval(*e.kids[0]);
  std::vector<Value> items = evalIndexItems(e);
  if (!obj.is<SeqV>() && !obj.is<DictV>()) spreadIndexSequence(items);
  return located(e.loc, [&]() -> Value {
    if (obj.is<SeqV>()) {
      auto &seq = obj.as<SeqV>().items;
      if (items.size() != 1) throw Error("tuple indices must be one int or slice");
      int64_t n = static_cast<int64_t>(seq.size());
      if (items[0].is<SliceV>()) {
        const SliceV &s = items[0].as<SliceV>();
        int64_t step = s.step.value_or(1);
        if (step != 1) throw Error("tuple slices with a step are not supported");
        auto clampIdx = [&](std::optional<int64_t> x, int64_t dflt) {
          if (!x) return dflt;
          int64_t v = *x < 0 ? *x + n : *x;
          return std::clamp<int64_t>(v, 0, n);
        };
        SeqV out{{}, obj.as<SeqV>().isList};
        for (int64_t k = clampIdx(s.start, 0); k < clampIdx(s.stop, n); ++k)
          out.items.push_back(seq[static_cast<size_t>(k)]);
        return out;
      }
      int64_t i = toInt(items[0], "tuple index");
      if (i < -n || i >= n) throw Error(fmt::format("tuple index {} out of range", i));
      return std::move(seq[static_cast<size_t>(i < 0 ? i + n : i)]);
    }
    if (obj.is<DictV>()) {
      if (items.size() != 1 || !items[0].is<std::string>())
        throw Error("a dict is indexed by one string key");
      for (auto &[k, v] : obj.as<DictV>().items)
        if (k == items[0].as<std::string>()) return std::move(v);
      throw Error(fmt::format("KeyError: '{}'", items[0].as<std::string>()));
    }
    if (!obj.is<Tensor>())
      throw Error(fmt::format("'{}' object is not subscriptable", typeName(obj)));
    Tensor t = std::move(obj.as<Tensor>());
    if (items.size() == 1 && items[0].is<Tensor>())
      return std::move(t).getitem(std::move(items[0].as<Tensor>()));
    return std::move(t).getitem(tensorIndices(items, t.device()));
  });
}

} // namespace lazyjit::script
