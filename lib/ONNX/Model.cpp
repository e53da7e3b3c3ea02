// The ONNX importer's driver: load checks the graph once (opset, op table, names in topological
// order), run walks the nodes in order with the op table's Tensor code.
#include "lazyjit/ONNX/Model.h"

#include "HostFold.h"
#include "Ops.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/MappedFile.h"

#include <fmt/format.h>
#include <fstream>
#include <set>

namespace lazyjit::onnx {

namespace {

/// "node 'fc1' (Gemm, opset 13)", or "node #3 (...)" for a node without a name.
std::string nodeLabel(const NodeProto &n, size_t index, int64_t opset) {
  std::string name = n.name.empty() ? fmt::format("#{}", index) : "'" + n.name + "'";
  return fmt::format("node {} ({}, opset {})", name, n.opType, opset);
}

/// Rethrows the exception being handled with `where: ` in front of its message, as the same type.
/// Internal errors go through unchanged.
[[noreturn]] void rethrowIn(const std::string &where) {
  try {
    throw;
  } catch (const InternalError &) {
    throw;
  } catch (const ShapeError &e) {
    throw ShapeError(where + ": " + e.what());
  } catch (const DTypeError &e) {
    throw DTypeError(where + ": " + e.what());
  } catch (const UnsupportedError &e) {
    throw UnsupportedError(where + ": " + e.what());
  } catch (const Error &e) {
    throw Error(where + ": " + e.what());
  }
}

std::string elemName(DataType t) {
  if (std::optional<DType> dt = ops::toDType(t)) return std::string(dt->name());
  std::string_view n = dataTypeName(t);
  return n.empty() ? fmt::format("data type {}", int32_t(t)) : std::string(n);
}

/// "float32[batch, 3]" ("?" for an unknown dim).
std::string typeText(const ModelValue &v) {
  std::vector<std::string> dims;
  for (const Dimension &d : v.dims)
    dims.push_back(d.kind == Dimension::Kind::Value   ? std::to_string(d.value)
                   : d.kind == Dimension::Kind::Param ? d.param
                                                      : "?");
  return elemName(v.dataType) + (v.hasShape ? fmt::format("[{}]", fmt::join(dims, ", ")) : "");
}

std::string tensorText(const Tensor &t) {
  return fmt::format("{}[{}]", t.dtype().name(), fmt::join(t.intShape(), ", "));
}

/// A value the load-time checks guarantee is defined by the time it is read.
const Tensor &valueOf(const std::map<std::string, Tensor> &env, const std::string &name) {
  auto it = env.find(name);
  LAZYJIT_INTERNAL_CHECK(it != env.end(), "onnx: value '{}' read before it was computed", name);
  return it->second;
}

ModelValue toModelValue(const ValueInfoProto &v) {
  ModelValue m;
  m.name = v.name;
  if (v.type && v.type->kind == TypeProto::Kind::Tensor) {
    m.dataType = v.type->elemType;
    if (v.type->shape) {
      m.hasShape = true;
      m.dims = *v.type->shape;
    }
  }
  return m;
}

} // namespace

Model Model::load(const std::string &path) {
  ModelFile mf = loadModel(path);
  return Model(mf.file, std::move(mf.model), path);
}

Model Model::fromBytes(std::vector<uint8_t> bytes, const std::string &name) {
  auto held = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  ModelProto proto = parseModel(std::span<const uint8_t>(*held), name);
  return Model(held, std::move(proto), name);
}

Model::Model(std::shared_ptr<const void> storage, ModelProto proto, std::string fileName)
    : storage_(std::move(storage)), proto_(std::make_shared<const ModelProto>(std::move(proto))),
      fileName_(std::move(fileName)) {
  check();
}

void Model::check() {
  LAZYJIT_USER_CHECK(proto_->graph, Error, "{}: the model has no graph", fileName_);
  const GraphProto &g = *proto_->graph;
  for (const OperatorSetId &o : proto_->opsetImport) {
    std::string domain = o.domain == "ai.onnx" ? "" : o.domain;
    opsets_[domain] = o.version;
    if (domain.empty()) opset_ = o.version;
  }

  std::set<std::string> defined;
  for (const TensorProto &t : g.initializer) {
    initializers_[t.name] =
        ops::tensorFromProto(t, storage_, fileName_, "initializer '" + t.name + "'");
    if (std::optional<fold::HostValue> v = fold::fromProto(t))
      hostInitializers_[t.name] = std::make_shared<const fold::HostValue>(std::move(*v));
    defined.insert(t.name);
  }
  for (const ValueInfoProto &v : g.input) {
    defined.insert(v.name);
    if (initializers_.count(v.name)) continue;
    LAZYJIT_USER_CHECK(v.type && v.type->kind == TypeProto::Kind::Tensor, UnsupportedError,
                       "{}: input '{}' is not a tensor, which is not supported yet", fileName_,
                       v.name);
    LAZYJIT_USER_CHECK(ops::toDType(v.type->elemType), UnsupportedError,
                       "{}: input '{}' has data type {}, which is not supported", fileName_, v.name,
                       elemName(v.type->elemType));
    inputs_.push_back(toModelValue(v));
  }
  for (const ValueInfoProto &v : g.output) outputs_.push_back(toModelValue(v));

  checkGraph(g, defined, 0);
  for (const NodeProto &n : g.node)
    for (const std::string &out : n.output)
      if (!out.empty()) defined.insert(out); // ("" is an omitted optional output)
  for (const ModelValue &v : outputs_)
    LAZYJIT_USER_CHECK(!v.name.empty() && defined.count(v.name), Error,
                       "{}: graph output '{}' is not produced by any node, input or initializer",
                       fileName_, v.name);
}

int64_t Model::opsetOf(const NodeProto &n) const {
  auto it = opsets_.find(n.domain == "ai.onnx" ? "" : n.domain);
  return it == opsets_.end() ? 0 : it->second;
}

void Model::checkGraph(const GraphProto &g, std::set<std::string> defined, int depth) const {
  // a subgraph nested this deep is a malformed (or hostile) file, not a model
  LAZYJIT_USER_CHECK(depth <= 64, Error, "{}: graphs are nested more than 64 deep", fileName_);
  for (size_t i = 0; i < g.node.size(); ++i) {
    const NodeProto &n = g.node[i];
    int64_t opset = opsetOf(n);
    std::string where = fileName_ + ": " + nodeLabel(n, i, opset);
    if (depth > 0) where += fmt::format(" in subgraph '{}'", g.name);
    std::string domain = n.domain == "ai.onnx" ? "" : n.domain;
    LAZYJIT_USER_CHECK(opsets_.count(domain), Error,
                       "{}: the model imports no opset of the domain '{}'", where,
                       domain.empty() ? "ai.onnx" : domain);
    const ops::OpDef *op = ops::findOp(n.opType, domain);
    LAZYJIT_USER_CHECK(op, UnsupportedError, "{}: op type {}{} is not supported yet", where,
                       domain.empty() ? "" : domain + ":", n.opType);
    LAZYJIT_USER_CHECK(n.input.size() >= op->minInputs && n.input.size() <= op->maxInputs, Error,
                       "{}: it has {} inputs; {} takes {} to {}", where, n.input.size(), n.opType,
                       op->minInputs, op->maxInputs);
    LAZYJIT_USER_CHECK(n.output.size() >= 1 && n.output.size() <= op->numOutputs, Error,
                       "{}: it has {} outputs; {} has {}", where, n.output.size(), n.opType,
                       op->numOutputs);
    for (const std::string &in : n.input)
      LAZYJIT_USER_CHECK(in.empty() || defined.count(in), Error,
                         "{}: input '{}' is not a graph input, an initializer or the output of "
                         "an earlier node",
                         where, in);
    try {
      op->check(ops::NodeContext{n, opset, fileName_, storage_});
    } catch (const Error &) {
      rethrowIn(where);
    }
    for (const AttributeProto &a : n.attribute) {
      std::vector<const GraphProto *> subs;
      if (a.g) subs.push_back(a.g.get());
      for (const GraphProto &sg : a.graphs) subs.push_back(&sg);
      for (const GraphProto *sg : subs) {
        std::set<std::string> inner = defined;
        for (const ValueInfoProto &v : sg->input) inner.insert(v.name);
        for (const TensorProto &t : sg->initializer) inner.insert(t.name);
        checkGraph(*sg, std::move(inner), depth + 1);
      }
    }
    for (const std::string &out : n.output)
      if (!out.empty()) defined.insert(out);
  }
}

void Model::runGraph(const GraphProto &g, RunState &state) const {
  for (size_t i = 0; i < g.node.size(); ++i) {
    const NodeProto &n = g.node[i];
    const ops::OpDef *op = ops::findOp(n.opType, n.domain);
    int64_t opset = opsetOf(n);
    std::vector<Tensor> in;
    for (const std::string &name : n.input)
      in.push_back(name.empty() ? Tensor() : valueOf(state.env, name));

    // shape arithmetic and constants: evaluated on the host, no kernel
    std::vector<const fold::HostValue *> hostIn;
    std::vector<std::vector<int64_t>> shapes;
    bool allHost = true;
    for (size_t k = 0; k < n.input.size(); ++k) {
      auto it = n.input[k].empty() ? state.host.end() : state.host.find(n.input[k]);
      hostIn.push_back(it == state.host.end() ? nullptr : it->second.get());
      allHost = allHost && (n.input[k].empty() || hostIn.back());
      try {
        shapes.push_back(in[k].defined() ? in[k].intShape() : std::vector<int64_t>{});
      } catch (const Error &) {
        shapes.emplace_back(); // a symbolic shape: nothing to fold
      }
    }
    bool defaultDomain = n.domain.empty() || n.domain == "ai.onnx";
    if (defaultDomain && (allHost || n.opType == "Shape" || n.opType == "Size")) {
      if (std::optional<std::vector<fold::HostValue>> vs =
              fold::evaluate(n, opset, hostIn, shapes)) {
        for (size_t k = 0; k < n.output.size() && k < vs->size(); ++k) {
          if (n.output[k].empty()) continue;
          auto v = std::make_shared<const fold::HostValue>(std::move((*vs)[k]));
          state.env[n.output[k]] = v->toTensor();
          state.host[n.output[k]] = std::move(v);
        }
        continue;
      }
    }

    std::vector<Tensor> out;
    ops::NodeContext ctx{n, opset, fileName_, storage_};
    ctx.runSubgraph = [this, &state](const GraphProto &sg, const std::vector<Tensor> &inputs) {
      LAZYJIT_USER_CHECK(inputs.size() == sg.input.size(), Error,
                         "subgraph '{}' takes {} inputs, not {}", sg.name, sg.input.size(),
                         inputs.size());
      RunState inner = state;
      for (const TensorProto &t : sg.initializer) {
        inner.env[t.name] =
            ops::tensorFromProto(t, storage_, fileName_, "initializer '" + t.name + "'");
        inner.host.erase(t.name);
      }
      for (size_t k = 0; k < inputs.size(); ++k) {
        inner.env[sg.input[k].name] = inputs[k];
        inner.host.erase(sg.input[k].name);
      }
      runGraph(sg, inner);
      std::vector<Tensor> outs;
      for (const ValueInfoProto &v : sg.output) {
        auto it = inner.env.find(v.name);
        LAZYJIT_USER_CHECK(it != inner.env.end(), Error,
                           "subgraph '{}' does not produce its output '{}'", sg.name, v.name);
        outs.push_back(it->second);
      }
      return outs;
    };
    try {
      out = op->run(ctx, in);
    } catch (const Error &) {
      rethrowIn(fileName_ + ": " + nodeLabel(n, i, opset));
    }
    for (size_t k = 0; k < n.output.size(); ++k)
      LAZYJIT_USER_CHECK(n.output[k].empty() || (k < out.size() && out[k].defined()), Error,
                         "{}: {}: output {} ('{}') is not produced (the op gives {} here)",
                         fileName_, nodeLabel(n, i, opset), k, n.output[k], out.size());
    for (size_t k = 0; k < n.output.size() && k < out.size(); ++k)
      if (!n.output[k].empty()) {
        state.env[n.output[k]] = out[k];
        state.host.erase(n.output[k]);
      }
  }
}

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor> &inputs) const {
  std::map<std::string, Tensor> env = initializers_;
  for (const auto &[name, t] : inputs) {
    bool known = initializers_.count(name) != 0;
    for (const ModelValue &v : inputs_) known = known || v.name == name;
    LAZYJIT_USER_CHECK(known, Error, "{}: the model has no input named '{}'", fileName_, name);
    LAZYJIT_USER_CHECK(t.defined(), Error, "{}: input '{}' is an undefined Tensor", fileName_,
                       name);
    env[name] = t;
  }
  for (const ModelValue &v : inputs_) {
    auto it = inputs.find(v.name);
    LAZYJIT_USER_CHECK(it != inputs.end(), Error, "{}: input '{}' ({}) is missing", fileName_,
                       v.name, typeText(v));
    const Tensor &t = it->second;
    LAZYJIT_USER_CHECK(t.dtype() == *ops::toDType(v.dataType), DTypeError,
                       "{}: input '{}': expected {}, got {}", fileName_, v.name, typeText(v),
                       tensorText(t));
    if (!v.hasShape) continue;
    std::vector<int64_t> dims = t.intShape();
    bool fits = dims.size() == v.dims.size();
    for (size_t i = 0; fits && i < dims.size(); ++i)
      fits = v.dims[i].kind != Dimension::Kind::Value || v.dims[i].value == dims[i];
    LAZYJIT_USER_CHECK(fits, ShapeError, "{}: input '{}': expected {}, got {}", fileName_, v.name,
                       typeText(v), tensorText(t));
  }

  RunState state{std::move(env), hostInitializers_};
  for (const auto &[name, t] : inputs) state.host.erase(name); // a given value replaces a default
  runGraph(*proto_->graph, state);
  env = std::move(state.env);

  std::map<std::string, Tensor> result;
  for (const ModelValue &v : outputs_) result[v.name] = valueOf(env, v.name);
  return result;
}

Tensor loadTensorFile(const std::string &path) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path);
  TensorProto t = parseTensorProto(file->bytes(), path);
  return ops::tensorFromProto(t, file, path, t.name.empty() ? "the tensor" : "tensor '" + t.name + "'");
}

Tensor tensorFromProto(const TensorProto &t, std::shared_ptr<const void> storage,
                       const std::string &where) {
  return ops::tensorFromProto(t, std::move(storage), where,
                              t.name.empty() ? "the tensor" : "tensor '" + t.name + "'");
}

namespace {

void putVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
void putBytes(std::string &out, uint32_t field, std::string_view bytes) {
  putVarint(out, uint64_t(field) << 3 | 2);
  putVarint(out, bytes.size());
  out.append(bytes);
}

} // namespace

void saveTensorFile(const Tensor &t, const std::string &path, const std::string &name) {
  DataType dt = toDataType(t.dtype());
  LAZYJIT_USER_CHECK(dt != DataType::Undefined, Error, "{}: ONNX has no element type for {}", path,
                     t.dtype().name());
  std::string msg;
  for (int64_t d : t.intShape()) { // field 1 dims: repeated int64, unpacked in onnx.proto (proto2)
    putVarint(msg, 1 << 3);
    putVarint(msg, uint64_t(d));
  }
  putVarint(msg, 2 << 3); // field 2 data_type
  putVarint(msg, uint64_t(dt));
  if (!name.empty()) putBytes(msg, 8, name);
  std::vector<uint8_t> bytes = t.toBytes();
  putBytes(msg, 9, std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size()));
  std::ofstream f(path, std::ios::binary);
  f.write(msg.data(), std::streamsize(msg.size()));
  f.close();
  LAZYJIT_USER_CHECK(bool(f), Error, "{}: cannot write the tensor file", path);
}

std::vector<Tensor> Model::runInOrder(const std::vector<Tensor> &inputs) const {
  LAZYJIT_USER_CHECK(inputs.size() == inputs_.size(), Error, "{}: {} inputs given, the model takes {}",
                     fileName_, inputs.size(), inputs_.size());
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < inputs.size(); ++i) named[inputs_[i].name] = inputs[i];
  std::map<std::string, Tensor> out = run(named);
  std::vector<Tensor> outs;
  for (const ModelValue &v : outputs_) outs.push_back(out.at(v.name));
  return outs;
}

std::optional<DType> toDType(DataType t) { return ops::toDType(t); }

std::vector<std::string> supportedOpTypes() { return ops::supportedOps(); }

DataType toDataType(DType dt) {
  for (int32_t k = 1; k <= int32_t(DataType::BFloat16); ++k)
    if (std::optional<DType> d = ops::toDType(DataType(k)); d && *d == dt) return DataType(k);
  return DataType::Undefined;
}

} // namespace lazyjit::onnx
