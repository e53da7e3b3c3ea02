// ONNX ops that decide on the data at run time: control flow (If, Loop, Scan: conditions and trip
// counts are read on the host and bodies run through the importer's subgraph runner), and the
// lookups whose results are worked out on the host (NonMaxSuppression, whose output size depends
// on the boxes, and TfIdfVectorizer's n-gram counts).
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace lazyjit::onnx::ops {

namespace {

using Slices = std::vector<std::optional<SIntPair>>;

Tensor hostScalarTensor(int64_t v) { return Tensor::fromVector(std::vector<int64_t>{v}, Shape{}); }

// ---- control flow -------------------------------------------------------------------------------

const GraphProto &graphAttr(const NodeProto &n, std::string_view name) {
  const AttributeProto *a = typedAttr(n, name, AttributeType::Graph);
  LAZYJIT_USER_CHECK(a && a->g, Error, "the required graph attribute '{}' is missing", name);
  return *a->g;
}

/// Sequences and optionals are not tensors, which is all the importer has.
void checkTensorOutputs(const GraphProto &g) {
  for (const ValueInfoProto &v : g.output)
    LAZYJIT_USER_CHECK(!v.type || v.type->kind == TypeProto::Kind::Tensor ||
                           v.type->kind == TypeProto::Kind::Unset,
                       UnsupportedError,
                       "subgraph '{}' output '{}' is not a tensor (sequences and optionals are "
                       "not supported)",
                       g.name, v.name);
}

void checkIf(const NodeContext &ctx) {
  for (std::string_view b : {"then_branch", "else_branch"}) {
    const GraphProto &g = graphAttr(ctx.node, b);
    checkTensorOutputs(g);
    LAZYJIT_USER_CHECK(g.output.size() == ctx.node.output.size(), Error,
                       "{} has {} outputs, the node {}", b, g.output.size(),
                       ctx.node.output.size());
  }
}

Out runIf(const NodeContext &ctx, const Inputs &in) {
  bool cond = hostScalar(in[0], "the condition") != 0;
  return ctx.runSubgraph(graphAttr(ctx.node, cond ? "then_branch" : "else_branch"), {});
}

/// A scan output of a body that never ran: empty along `axis`, with the rest of the shape and the
/// dtype the body declares for it (float32 and no other dims when it declares none).
Tensor emptyScanOutput(const ValueInfoProto &v, int64_t axis) {
  std::vector<int64_t> dims;
  DType dt = dtypes::float32;
  if (v.type && v.type->kind == TypeProto::Kind::Tensor) {
    if (std::optional<DType> t = toDType(v.type->elemType)) dt = *t;
    if (v.type->shape)
      for (const Dimension &d : *v.type->shape)
        dims.push_back(d.kind == Dimension::Kind::Value ? d.value : 0);
  }
  axis = std::clamp<int64_t>(axis, 0, int64_t(dims.size()));
  dims.insert(dims.begin() + axis, 0);
  return Tensor::zeros(toShape(dims), TensorOptions(dt));
}

void checkLoop(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  const GraphProto &body = graphAttr(n, "body");
  checkTensorOutputs(body);
  LAZYJIT_USER_CHECK(n.input.size() >= 2, Error, "Loop takes M, cond and the loop-carried values");
  LAZYJIT_USER_CHECK(!n.input[0].empty() || !n.input[1].empty(), UnsupportedError,
                     "a Loop without a trip count or a condition never ends");
  size_t carried = n.input.size() - 2;
  LAZYJIT_USER_CHECK(body.input.size() == carried + 2, Error,
                     "the body takes {} inputs; it must take 2 + {} loop-carried values",
                     body.input.size(), carried);
  LAZYJIT_USER_CHECK(body.output.size() >= carried + 1, Error,
                     "the body has {} outputs; it must have 1 + {} loop-carried values and the "
                     "scan outputs",
                     body.output.size(), carried);
  LAZYJIT_USER_CHECK(n.output.size() <= body.output.size() - 1, Error,
                     "the node has {} outputs, but the body makes only {} values", n.output.size(),
                     body.output.size() - 1);
}

Out runLoop(const NodeContext &ctx, const Inputs &in) {
  const GraphProto &body = graphAttr(ctx.node, "body");
  int64_t trips = has(in, 0) ? hostInt(in[0], "the trip count M") : INT64_MAX;
  bool useCond = has(in, 1);
  bool cond = useCond ? hostScalar(in[1], "the condition") != 0 : true;
  Tensor condT =
      useCond ? in[1].reshape(Shape{}) : Tensor::fromVector(std::vector<bool>{true}, Shape{});
  std::vector<Tensor> carried(in.begin() + 2, in.end());
  size_t numCarried = carried.size(), numScan = body.output.size() - 1 - numCarried;
  std::vector<std::vector<Tensor>> scans(numScan);
  for (int64_t i = 0; i < trips && cond; ++i) {
    std::vector<Tensor> args{hostScalarTensor(i), condT};
    args.insert(args.end(), carried.begin(), carried.end());
    std::vector<Tensor> outs = ctx.runSubgraph(body, args);
    condT = outs[0];
    if (useCond) cond = hostScalar(outs[0], "the body's condition") != 0;
    for (size_t k = 0; k < numCarried; ++k) carried[k] = outs[1 + k];
    for (size_t k = 0; k < numScan; ++k) scans[k].push_back(outs[1 + numCarried + k]);
    if ((i + 1) % 32 == 0)
      for (Tensor &t : carried) t.realize();
  }
  Out out = carried;
  for (size_t k = 0; k < numScan; ++k)
    out.push_back(scans[k].empty() ? emptyScanOutput(body.output[1 + numCarried + k], 0)
                                   : stackMany(scans[k], 0));
  return out;
}

/// Scan's axes and directions of its scan inputs and outputs.
struct ScanSpec {
  std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
};

/// Runs `body` over `steps` slices of `inputs` (each sliced along its axis, in its direction),
/// threading `states`; returns the final states and the scan outputs stacked along their axes.
Out scanOnce(const NodeContext &ctx, const GraphProto &body, std::vector<Tensor> states,
             const std::vector<Tensor> &inputs, const ScanSpec &s, int64_t steps) {
  size_t numStates = states.size();
  LAZYJIT_USER_CHECK(body.output.size() >= numStates, Error,
                     "the body has {} outputs, fewer than the {} state variables",
                     body.output.size(), numStates);
  size_t numOut = body.output.size() - numStates;
  std::vector<std::vector<Tensor>> elems(numOut);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Tensor> args = states;
    for (size_t k = 0; k < inputs.size(); ++k)
      args.push_back(takeAt(inputs[k], s.inAxes[k], s.inDirs[k] ? steps - 1 - t : t));
    std::vector<Tensor> outs = ctx.runSubgraph(body, args);
    for (size_t k = 0; k < numStates; ++k) states[k] = outs[k];
    for (size_t k = 0; k < numOut; ++k) elems[k].push_back(outs[numStates + k]);
    if ((t + 1) % 32 == 0)
      for (Tensor &st : states) st.realize();
  }
  Out out = states;
  for (size_t k = 0; k < numOut; ++k) {
    int64_t axis = k < s.outAxes.size() ? s.outAxes[k] : 0;
    if (elems[k].empty()) {
      out.push_back(emptyScanOutput(body.output[numStates + k], axis < 0 ? 0 : axis));
      continue;
    }
    if (k < s.outDirs.size() && s.outDirs[k]) std::reverse(elems[k].begin(), elems[k].end());
    axis = normalizeAxis(axis, elems[k][0].ndim() + 1, "scan_output_axes value");
    out.push_back(stackMany(elems[k], axis));
  }
  return out;
}

void checkScan(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  const GraphProto &body = graphAttr(n, "body");
  checkTensorOutputs(body);
  int64_t m = requiredIntAttr(n, "num_scan_inputs");
  size_t lead = ctx.opset < 9 ? 1 : 0; // Scan-8's sequence_lens
  LAZYJIT_USER_CHECK(m >= 1 && size_t(m) + lead <= n.input.size(), Error,
                     "num_scan_inputs {} does not fit {} inputs", m, n.input.size());
  size_t states = n.input.size() - lead - size_t(m);
  LAZYJIT_USER_CHECK(body.input.size() == states + size_t(m), Error,
                     "the body takes {} inputs, not {} states + {} scan inputs", body.input.size(),
                     states, m);
  auto directions = [&](std::string_view name, size_t count) {
    if (auto d = intsAttr(n, name)) {
      LAZYJIT_USER_CHECK(d->size() == count, Error, "attribute '{}' must have {} values", name,
                         count);
      for (int64_t v : *d)
        LAZYJIT_USER_CHECK(v == 0 || v == 1, Error, "attribute '{}' values must be 0 or 1", name);
    }
  };
  size_t outs = body.output.size() >= states ? body.output.size() - states : 0;
  if (ctx.opset < 9) {
    directions("directions", size_t(m));
  } else {
    directions("scan_input_directions", size_t(m));
    directions("scan_output_directions", outs);
    std::pair<std::string_view, size_t> axes[] = {{"scan_input_axes", size_t(m)},
                                                  {"scan_output_axes", outs}};
    for (auto [name, count] : axes)
      if (auto a = intsAttr(n, name))
        LAZYJIT_USER_CHECK(a->size() == count, Error, "attribute '{}' must have {} values", name,
                           count);
  }
}

Out runScan(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const GraphProto &body = graphAttr(n, "body");
  size_t m = size_t(intAttr(n, "num_scan_inputs", 1));
  if (ctx.opset >= 9) {
    size_t numStates = in.size() - m;
    std::vector<Tensor> states(in.begin(), in.begin() + numStates),
        inputs(in.begin() + numStates, in.end());
    ScanSpec s;
    s.inAxes = intsAttr(n, "scan_input_axes").value_or(std::vector<int64_t>(m, 0));
    s.inDirs = intsAttr(n, "scan_input_directions").value_or(std::vector<int64_t>(m, 0));
    s.outAxes = intsAttr(n, "scan_output_axes").value_or(std::vector<int64_t>{});
    s.outDirs = intsAttr(n, "scan_output_directions").value_or(std::vector<int64_t>{});
    int64_t steps = -1;
    for (size_t k = 0; k < m; ++k) {
      s.inAxes[k] = normalizeAxis(s.inAxes[k], inputs[k].ndim(), "scan_input_axes value");
      int64_t len = inputs[k].intShape()[size_t(s.inAxes[k])];
      LAZYJIT_USER_CHECK(steps < 0 || len == steps, ShapeError,
                         "scan input {} has {} steps, the first {}", k, len, steps);
      steps = len;
    }
    return scanOnce(ctx, body, states, inputs, s, steps);
  }
  // Scan-8: every input has a batch dim first and scan inputs scan their dim 1; each batch entry
  // is scanned on its own, over its sequence length
  size_t numStates = in.size() - 1 - m;
  std::vector<Tensor> states(in.begin() + 1, in.begin() + 1 + numStates);
  std::vector<Tensor> inputs(in.begin() + 1 + numStates, in.end());
  LAZYJIT_USER_CHECK(inputs[0].ndim() >= 2, ShapeError, "scan inputs must be [batch, steps, ...]");
  int64_t batch = inputs[0].intShape()[0], steps = inputs[0].intShape()[1];
  LAZYJIT_USER_CHECK(batch >= 1, ShapeError, "the batch of scan inputs {} is empty",
                     dimsText(inputs[0].intShape()));
  for (const Tensor &t : in)
    if (t.defined())
      LAZYJIT_USER_CHECK(t.ndim() >= 1 && t.intShape()[0] == batch, ShapeError,
                         "every input must have the batch size {} first, not {}", batch,
                         dimsText(t.intShape()));
  std::vector<int64_t> lens(size_t(batch), steps);
  if (has(in, 0)) lens = hostInts(in[0], "sequence_lens");
  ScanSpec s;
  s.inAxes.assign(m, 0);
  s.inDirs = intsAttr(n, "directions").value_or(std::vector<int64_t>(m, 0));
  std::vector<std::vector<Tensor>> perBatch;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = lens[size_t(b)];
    LAZYJIT_USER_CHECK(len >= 0 && len <= steps, ShapeError,
                       "sequence length {} is out of range for {} steps", len, steps);
    std::vector<Tensor> st, xs;
    for (const Tensor &t : states) st.push_back(takeAt(t, 0, b));
    for (const Tensor &t : inputs) xs.push_back(sliceAxis(takeAt(t, 0, b), 0, 0, len));
    Out r = scanOnce(ctx, body, st, xs, s, len);
    for (size_t k = numStates; k < r.size(); ++k) // pad short sequences with zeros
      if (len < steps) {
        Slices pad(size_t(r[k].ndim()));
        pad[0] = SIntPair(0, steps - len);
        r[k] = r[k].pad(pad);
      }
    perBatch.push_back(std::move(r));
  }
  Out out;
  for (size_t k = 0; k < perBatch[0].size(); ++k) {
    std::vector<Tensor> parts;
    for (const Out &r : perBatch) parts.push_back(r[k]);
    out.push_back(stackMany(parts, 0));
  }
  return out;
}

// ---- NonMaxSuppression --------------------------------------------------------------------------

void checkNms(const NodeContext &ctx) {
  int64_t cpb = intAttr(ctx.node, "center_point_box", 0);
  LAZYJIT_USER_CHECK(cpb == 0 || cpb == 1, Error, "center_point_box must be 0 or 1, not {}", cpb);
}

struct Box {
  float ymin, xmin, ymax, xmax;
};

/// Whether `a` and `b` overlap by more than `threshold` (IoU), as ONNX Runtime decides it: a box
/// of no area suppresses nothing.
bool suppresses(const Box &a, const Box &b, float threshold) {
  float ixmin = std::max(a.xmin, b.xmin), ixmax = std::min(a.xmax, b.xmax);
  float iymin = std::max(a.ymin, b.ymin), iymax = std::min(a.ymax, b.ymax);
  if (ixmin >= ixmax || iymin >= iymax) return false;
  float areaA = (a.ymax - a.ymin) * (a.xmax - a.xmin),
        areaB = (b.ymax - b.ymin) * (b.xmax - b.xmin);
  if (areaA <= 0 || areaB <= 0) return false;
  float inter = (ixmax - ixmin) * (iymax - iymin);
  return inter / (areaA + areaB - inter) > threshold;
}

Out runNms(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> bd = in[0].intShape(), sd = in[1].intShape();
  LAZYJIT_USER_CHECK(bd.size() == 3 && bd[2] == 4, ShapeError,
                     "boxes {} must be [batches, boxes, 4]", dimsText(bd));
  LAZYJIT_USER_CHECK(sd.size() == 3 && sd[0] == bd[0] && sd[2] == bd[1], ShapeError,
                     "scores {} must be [{}, classes, {}]", dimsText(sd), bd[0], bd[1]);
  int64_t maxOut = has(in, 2) ? int64_t(hostScalar(in[2], "max_output_boxes_per_class")) : 0;
  float iouThreshold = has(in, 3) ? float(hostScalar(in[3], "iou_threshold")) : 0;
  std::optional<float> scoreThreshold;
  if (has(in, 4)) scoreThreshold = float(hostScalar(in[4], "score_threshold"));
  bool centered = intAttr(ctx.node, "center_point_box", 0) == 1;
  std::vector<float> boxes = in[0].toVector<float>(), scores = in[1].toVector<float>();
  int64_t batches = bd[0], numBoxes = bd[1], classes = sd[1];
  auto boxAt = [&](int64_t b, int64_t i) {
    const float *p = &boxes[size_t((b * numBoxes + i) * 4)];
    if (centered) return Box{p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    return Box{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]),
               std::max(p[1], p[3])};
  };
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float *s = &scores[size_t((b * classes + c) * numBoxes)];
      std::vector<int64_t> order;
      for (int64_t i = 0; i < numBoxes; ++i)
        if (!scoreThreshold || s[i] > *scoreThreshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= maxOut) break;
        Box bi = boxAt(b, i);
        if (std::none_of(kept.begin(), kept.end(),
                         [&](int64_t k) { return suppresses(boxAt(b, k), bi, iouThreshold); }))
          kept.push_back(i);
      }
      for (int64_t i : kept) selected.insert(selected.end(), {b, c, i});
    }
  int64_t rows = int64_t(selected.size() / 3);
  if (rows == 0) return {Tensor::zeros(toShape({0, 3}), TensorOptions(dtypes::int64))};
  return {Tensor::fromVector(selected, toShape({rows, 3}))};
}

// ---- TfIdfVectorizer ----------------------------------------------------------------------------

/// TfIdfVectorizer's pool: the n-grams of lengths [min_gram_length, max_gram_length], each with
/// its output coordinate, and what to count them with.
struct TfIdfPool {
  std::string mode;
  int64_t minGram = 1, maxGram = 1, maxSkip = 0;
  std::map<std::vector<int64_t>, int64_t> coordOf;
  int64_t outSize = 0;
  std::vector<float> weights; ///< by output coordinate; empty: all 1
};

/// The pool of a TfIdfVectorizer node, its attributes checked as ONNX Runtime checks them. The
/// pool lists the 1-grams from ngram_counts[0], the 2-grams from ngram_counts[1], and so on; the
/// i-th n-gram in that order counts into output coordinate ngram_indexes[i].
TfIdfPool tfIdfPool(const NodeProto &n) {
  LAZYJIT_USER_CHECK(!findAttr(n, "pool_strings"), UnsupportedError,
                     "attribute 'pool_strings' (string n-grams) is not supported");
  LAZYJIT_USER_CHECK(findAttr(n, "mode"), Error, "the required attribute 'mode' is missing");
  checkStringAttr(n, "mode", {"TF", "IDF", "TFIDF"});
  TfIdfPool p;
  p.mode = stringAttr(n, "mode", "TF");
  p.minGram = requiredIntAttr(n, "min_gram_length");
  p.maxGram = requiredIntAttr(n, "max_gram_length");
  p.maxSkip = requiredIntAttr(n, "max_skip_count");
  LAZYJIT_USER_CHECK(p.minGram >= 1 && p.maxGram >= p.minGram, Error,
                     "min_gram_length {} and max_gram_length {} must satisfy 1 <= min <= max",
                     p.minGram, p.maxGram);
  LAZYJIT_USER_CHECK(p.maxSkip >= 0, Error, "max_skip_count {} must not be negative", p.maxSkip);
  auto required = [&](std::string_view name) {
    std::optional<std::vector<int64_t>> v = intsAttr(n, name);
    LAZYJIT_USER_CHECK(v && !v->empty(), Error, "the required attribute '{}' is missing or empty",
                       name);
    return *v;
  };
  std::vector<int64_t> counts = required("ngram_counts"), indexes = required("ngram_indexes");
  std::vector<int64_t> pool = required("pool_int64s");
  LAZYJIT_USER_CHECK(p.maxGram <= int64_t(counts.size()), Error,
                     "max_gram_length {} has no level in ngram_counts {}", p.maxGram,
                     dimsText(counts));
  for (int64_t i : indexes)
    LAZYJIT_USER_CHECK(i >= 0, Error, "ngram_indexes {} has a negative index", dimsText(indexes));
  p.outSize = *std::max_element(indexes.begin(), indexes.end()) + 1;
  if (std::optional<std::vector<float>> w = floatsAttr(n, "weights")) {
    LAZYJIT_USER_CHECK(w->size() == indexes.size(), Error,
                       "weights has {} values for the {} ngram_indexes", w->size(), indexes.size());
    // (ONNX Runtime and ONNX's reference weigh output coordinate i by weights[i])
    LAZYJIT_USER_CHECK(int64_t(w->size()) >= p.outSize, Error,
                       "weights has {} values for {} output coordinates", w->size(), p.outSize);
    p.weights = *w;
  }
  size_t id = 0; // the n-gram's position in the pool, over all levels
  for (size_t level = 0; level < counts.size(); ++level) {
    int64_t len = int64_t(level) + 1, begin = counts[level];
    int64_t end = level + 1 < counts.size() ? counts[level + 1] : int64_t(pool.size());
    LAZYJIT_USER_CHECK(0 <= begin && begin <= end && end <= int64_t(pool.size()) &&
                           (end - begin) % len == 0,
                       Error, "ngram_counts {} does not split the pool of {} into whole {}-grams",
                       dimsText(counts), pool.size(), len);
    for (int64_t at = begin; at < end; at += len, ++id) {
      if (len < p.minGram || len > p.maxGram) continue;
      LAZYJIT_USER_CHECK(id < indexes.size(), Error,
                         "ngram_indexes has {} values, but the pool has more n-grams",
                         indexes.size());
      std::vector<int64_t> gram(pool.begin() + at, pool.begin() + at + len);
      LAZYJIT_USER_CHECK(p.coordOf.emplace(gram, indexes[id]).second, Error,
                         "the pool has the {}-gram {} twice", len, dimsText(gram));
    }
  }
  return p;
}

void checkTfIdf(const NodeContext &ctx) { tfIdfPool(ctx.node); }

/// Each row's counts of the pool's n-grams, with up to max_skip_count elements skipped between
/// consecutive items (a 1-gram counts once however many skips are allowed), weighted by mode.
/// The lookup depends on the values, so it runs on the host.
Out runTfIdf(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  TfIdfPool p = tfIdfPool(ctx.node);
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() <= 2, ShapeError, "the input {} must be [C] or [N, C]",
                     dimsText(dims));
  LAZYJIT_USER_CHECK(x.dtype() == dtypes::int32 || x.dtype() == dtypes::int64, UnsupportedError,
                     "the input must be int32 or int64, not {}", x.dtype().name());
  int64_t rows = dims.size() == 2 ? dims[0] : 1;
  int64_t cols = dims.empty() ? 1 : dims.back();
  std::vector<int64_t> outDims =
      dims.size() == 2 ? std::vector<int64_t>{rows, p.outSize} : std::vector<int64_t>{p.outSize};
  if (rows * cols == 0) return {Tensor::zeros(toShape(outDims), TensorOptions(dtypes::float32))};
  std::vector<int64_t> v = x.cast(dtypes::int64).toVector<int64_t>();
  std::vector<int64_t> counts(size_t(rows * p.outSize), 0);
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t *row = v.data() + r * cols;
    int64_t *count = counts.data() + r * p.outSize;
    for (int64_t len = p.minGram; len <= p.maxGram; ++len)
      for (int64_t dist = 1; dist <= (len == 1 ? 1 : p.maxSkip + 1); ++dist)
        for (int64_t start = 0; start + (len - 1) * dist < cols; ++start) {
          gram.clear();
          for (int64_t k = 0; k < len; ++k) gram.push_back(row[start + k * dist]);
          auto hit = p.coordOf.find(gram);
          if (hit != p.coordOf.end()) ++count[hit->second];
        }
  }
  std::vector<float> y(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    float w = p.weights.empty() ? 1.0f : p.weights[i % size_t(p.outSize)];
    float c = p.mode == "IDF" ? float(counts[i] > 0) : float(counts[i]);
    y[i] = p.mode == "TF" ? c : c * w;
  }
  return {Tensor::fromVector(y, toShape(outDims))};
}

// ---- the table ----------------------------------------------------------------------------------

const OpDef opTable[] = {
    OpDef{"If", 1, 1, SIZE_MAX, checkIf, runIf},
    OpDef{"Loop", 2, SIZE_MAX, SIZE_MAX, checkLoop, runLoop},
    OpDef{"Scan", 1, SIZE_MAX, SIZE_MAX, checkScan, runScan},
    OpDef{"NonMaxSuppression", 2, 5, 1, checkNms, runNms},
    OpDef{"TfIdfVectorizer", 1, 1, 1, checkTfIdf, runTfIdf},
};

} // namespace

std::span<const OpDef> controlOps() { return opTable; }

} // namespace lazyjit::onnx::ops
