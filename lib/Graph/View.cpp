// Views and their movement ops, a rule-for-rule port of the reference's shape/view.py. All
// arithmetic goes through SInt so that symbolic shapes, strides, offsets and masks follow the same
// rules as the reference.
#include "lazyjit/Graph/View.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>
#include <set>

namespace lazyjit {

namespace {

std::string fmtShape(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].render();
  return out + "]";
}

std::string fmtPairs(const PadArg &p) {
  std::string out = "(";
  for (size_t i = 0; i < p.size(); ++i)
    out += (i ? ", " : "") + std::string("(") + p[i].first.render() + ", " + p[i].second.render() + ")";
  if (p.size() == 1) out += ",";
  return out + ")";
}

bool containsZero(const Shape &s) {
  return std::any_of(s.begin(), s.end(), [](const SInt &x) { return pyEq(x, 0); });
}

bool pairEq(const SIntPair &a, const SIntPair &b) {
  return pyEq(a.first, b.first) && pyEq(a.second, b.second);
}

SInt absInt(int64_t v) { return v < 0 ? -v : v; }

} // namespace

Shape filterStrides(const Shape &shape, const Shape &strides) {
  Shape out;
  out.reserve(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) out.push_back(pyNe(shape[i], 1) ? strides[i] : SInt(0));
  return out;
}

Shape stridesForShape(const Shape &shape) {
  // row-major strides (stride[i] = shape[i+1] * stride[i+1], products formed in the reference's
  // order), 0 where the dim is 1; built in place, one allocation
  Shape strides(shape.size());
  SInt acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = pyNe(shape[i], 1) ? acc : SInt(0);
    if (i > 0) acc = shape[i] * acc;
  }
  return strides;
}

View View::create(const Shape &shape, const std::optional<Shape> &strides, const SInt &offset,
                  const std::optional<Mask> &mask) {
  View v;
  v.shape = shape;
  Shape rowMajor = stridesForShape(shape); // (inline up to four dimensions: no allocation)
  bool given = strides && !strides->empty();
  v.contiguous = pyEq(offset, 0) && !mask;
  if (given) {
    v.strides = filterStrides(shape, *strides);
    v.contiguous = v.contiguous && v.strides == rowMajor;
  } else {
    v.strides = std::move(rowMajor);
  }
  v.offset = offset;
  v.mask = mask;
  return v;
}

std::vector<MergedDim> mergeDims(const Shape &shape, const Shape &strides,
                                 const std::optional<Mask> &mask) {
  std::vector<MergedDim> ret;
  if (shape.empty()) return ret;
  bool hasMask = mask && !mask->empty();
  auto maskLenIs1 = [&](size_t i) {
    return pyEq((*mask)[i].second - (*mask)[i].first, 1);
  };
  ret.emplace_back(shape[0], strides[0], truthy(strides[0]) ? shape[0] : SInt(0));
  int state = (hasMask && pyEq(strides[0], 0) && pyNe(shape[0], 1) && maskLenIs1(0)) ? 1 : 0;
  for (size_t i = 1; i < shape.size(); ++i) {
    const SInt &sh = shape[i], &st = strides[i];
    if (pyEq(sh, 1)) continue;
    auto &[lsize, lstride, lreal] = ret.back();
    if (state == 1 || pyEq(lstride, sh * st)) {
      SInt real = truthy(st) ? (state == 1 ? sh : lreal * sh) : SInt(0);
      ret.back() = MergedDim(lsize * sh, st, real);
    } else {
      ret.emplace_back(sh, st, truthy(st) ? sh : SInt(0));
    }
    state = (pyEq(st, 0) && hasMask && maskLenIs1(i)) ? 1 : (state != 0 ? 2 : 0);
  }
  return ret;
}

namespace {

struct ReshapeMaskResult {
  std::optional<Mask> mask;
  std::optional<Shape> offsets;
  bool fail = false;
};

// _reshape_mask: the mask of the reshaped view, the offsets that combining length-1 masked dims
// introduces, or a failure that forces a second view.
ReshapeMaskResult reshapeMask(const View &view, const Shape &newShape) {
  if (!view.mask) return {view.mask, std::nullopt, false};
  for (const auto &m : *view.mask)
    if (!m.first.isInt() || !m.second.isInt()) return {view.mask, std::nullopt, true};
  Mask allInvalid(newShape.size(), SIntPair(0, 0));

  // Reversed iterators with Python's next(it, default).
  size_t im = view.mask->size(), is = view.shape.size(), in = newShape.size();
  auto nextMask = [&]() -> SIntPair { return im ? (*view.mask)[--im] : SIntPair(0, 1); };
  auto nextShape = [&]() -> SInt { return is ? view.shape[--is] : SInt(1); };
  auto nextNew = [&]() -> SInt { return in ? newShape[--in] : SInt(1); };

  Mask newMask;
  Shape offsets;
  SInt currStride = 1, off = 0;
  SInt oldDim = nextShape(), newDim = nextNew();
  SIntPair mask = nextMask();
  if (truthy(lt(mask.second - mask.first, 1))) return {allInvalid, std::nullopt, false};

  while (newMask.size() < newShape.size()) {
    SInt l = mask.first, r = mask.second;
    SInt nextStride = newDim * currStride;
    if (truthy(ge(oldDim, nextStride))) {
      offsets.push_back(off);
      if (pyEq(oldDim, nextStride)) {
        newMask.emplace_back(floordiv(l, currStride), floordiv(r - 1, currStride) + 1);
        currStride = 1;
        off = 0;
        oldDim = nextShape();
        newDim = nextNew();
        mask = nextMask();
        if (truthy(lt(mask.second - mask.first, 1))) return {allInvalid, std::nullopt, false};
      } else {
        if ((pyNe(mod(l, nextStride), 0) || pyNe(mod(r, nextStride), 0)) &&
            pyNe(floordiv(l, nextStride), floordiv(r - 1, nextStride)))
          return {view.mask, std::nullopt, true};
        newMask.emplace_back(floordiv(mod(l, nextStride), currStride),
                             floordiv(mod(r - 1, nextStride), currStride) + 1);
        currStride = nextStride;
        newDim = nextNew();
      }
    } else {
      SIntPair nm = nextMask();
      if (!pairEq(mask, SIntPair(0, oldDim)) && pyNe(nm.second - nm.first, 1))
        return {view.mask, std::nullopt, true};
      if (!pairEq(nm, SIntPair(0, 1)) && !pairEq(mask, SIntPair(0, 1)) &&
          pyEq(nm.second - nm.first, 1))
        off = off + nm.first * oldDim;
      mask = SIntPair(nm.first * oldDim + l, (nm.second - 1) * oldDim + r);
      oldDim = oldDim * nextShape();
    }
  }
  while (im) {
    SIntPair m = (*view.mask)[--im];
    if (!pairEq(m, SIntPair(0, 1))) return {allInvalid, std::nullopt, false};
  }
  std::reverse(newMask.begin(), newMask.end());
  return {newMask, offsets, false};
}

} // namespace

View View::unsafeResize(const PadArg &arg, const std::optional<Mask> &newMask) const {
  SInt offs = 0;
  for (size_t i = 0; i < strides.size() && i < arg.size(); ++i) offs = offs + strides[i] * arg[i].first;
  std::optional<Mask> m = newMask;
  if (hasMask()) {
    Mask nmask;
    for (size_t i = 0; i < mask->size(); ++i) {
      const auto &[mx, my] = (*mask)[i];
      const auto &[ax, ay] = arg[i];
      nmask.emplace_back(pyMax(0, pyMin(mx - ax, ay - ax)), pyMax(0, pyMin(my - ax, ay - ax)));
    }
    if (m) {
      Mask merged;
      for (size_t i = 0; i < nmask.size(); ++i)
        merged.emplace_back(pyMax(nmask[i].first, (*m)[i].first),
                            pyMin(nmask[i].second, (*m)[i].second));
      m = merged;
    } else {
      m = nmask;
    }
  }
  Shape newShape;
  for (const auto &[x, y] : arg) {
    SInt s = y - x;
    if (s.isNode() && s.node()->isNum()) s = s.node()->num;
    newShape.push_back(s);
  }
  return create(newShape, strides, offset + offs, m);
}

View View::pad(const PadArg &arg) const {
  LAZYJIT_USER_CHECK(arg.size() == shape.size(), ShapeError,
                     "pad: padding {} has {} entries for shape {} of {} dims", fmtPairs(arg),
                     arg.size(), fmtShape(shape), shape.size());
  for (const auto &[b, e] : arg)
    LAZYJIT_USER_CHECK(truthy(ge(b, 0)) && truthy(ge(e, 0)), ShapeError,
                       "pad: negative padding {} for shape {}", fmtPairs(arg), fmtShape(shape));
  bool any = false;
  for (const auto &[b, e] : arg) any = any || truthy(b) || truthy(e);
  if (!any) return *this;
  PadArg zvarg;
  Mask m;
  for (size_t i = 0; i < shape.size(); ++i) {
    zvarg.emplace_back(-arg[i].first, shape[i] + arg[i].second);
    m.emplace_back(arg[i].first, shape[i] + arg[i].first);
  }
  return unsafeResize(zvarg, m);
}

View View::shrink(const PadArg &arg) const {
  LAZYJIT_USER_CHECK(arg.size() == shape.size(), ShapeError,
                     "shrink: bounds {} have {} entries for shape {} of {} dims", fmtPairs(arg),
                     arg.size(), fmtShape(shape), shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    const auto &[b, e] = arg[i];
    LAZYJIT_USER_CHECK(truthy(le(0, b)) && truthy(le(b, e)) && truthy(le(e, shape[i])), ShapeError,
                       "shrink: bounds {} are outside shape {} (dim {} needs 0 <= begin <= end <= {})",
                       fmtPairs(arg), fmtShape(shape), i, shape[i].render());
  }
  return unsafeResize(arg, std::nullopt);
}

View View::expand(const Shape &newShape) const {
  LAZYJIT_USER_CHECK(newShape.size() == shape.size(), ShapeError,
                     "expand: cannot expand shape {} to {}: the number of dims differs",
                     fmtShape(shape), fmtShape(newShape));
  if (containsZero(shape)) {
    for (size_t i = 0; i < shape.size(); ++i) {
      const SInt &s = shape[i], &x = newShape[i];
      bool ok = (pyEq(s, x) && pyEq(x, 0)) || (truthy(gt(s, 0)) && pyEq(mod(x, s), 0));
      LAZYJIT_USER_CHECK(ok, ShapeError, "expand: cannot expand shape {} to {}", fmtShape(shape),
                         fmtShape(newShape));
    }
    return create(newShape);
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    bool ok = pyEq(shape[i], newShape[i]) || (pyEq(shape[i], 1) && pyEq(strides[i], 0));
    LAZYJIT_USER_CHECK(ok, ShapeError,
                       "expand: cannot expand shape {} to {}: dim {} has size {}, not 1",
                       fmtShape(shape), fmtShape(newShape), i, shape[i].render());
  }
  std::optional<Mask> m;
  if (hasMask()) {
    m = Mask();
    for (size_t i = 0; i < shape.size(); ++i) {
      const SIntPair &mm = (*mask)[i];
      if (pyNe(shape[i], newShape[i]))
        m->push_back(pairEq(mm, SIntPair(0, 1)) ? SIntPair(0, newShape[i]) : SIntPair(0, 0));
      else
        m->push_back(mm);
    }
  }
  return create(newShape, strides, offset, m);
}

View View::permute(const std::vector<int64_t> &axis) const {
  std::set<int64_t> seen(axis.begin(), axis.end());
  bool ok = axis.size() == shape.size() && seen.size() == axis.size() &&
            std::all_of(axis.begin(), axis.end(),
                        [&](int64_t a) { return a >= 0 && a < (int64_t)shape.size(); });
  if (!ok) {
    std::string s = "(";
    for (size_t i = 0; i < axis.size(); ++i) s += (i ? ", " : "") + std::to_string(axis[i]);
    LAZYJIT_USER_CHECK(false, ShapeError,
                       "permute: {}) is not a permutation of the {} dims of shape {}", s,
                       shape.size(), fmtShape(shape));
  }
  Shape ns, nst;
  std::optional<Mask> m;
  if (mask) m = Mask();
  for (int64_t a : axis) {
    ns.push_back(shape[a]);
    nst.push_back(strides[a]);
    if (mask) m->push_back((*mask)[a]);
  }
  return create(ns, nst, offset, m);
}

View View::stride(const std::vector<int64_t> &mul) const {
  std::string s = "(";
  for (size_t i = 0; i < mul.size(); ++i) s += (i ? ", " : "") + std::to_string(mul[i]);
  s += ")";
  LAZYJIT_USER_CHECK(mul.size() == shape.size(), ShapeError,
                     "stride: {} has {} entries for shape {} of {} dims", s, mul.size(),
                     fmtShape(shape), shape.size());
  for (int64_t m : mul)
    LAZYJIT_USER_CHECK(m != 0, ShapeError, "stride: stride 0 in {} for shape {}", s,
                       fmtShape(shape));
  Shape nst, ns;
  SInt offs = 0;
  std::optional<Mask> m;
  if (mask) m = Mask();
  for (size_t i = 0; i < shape.size(); ++i) {
    SInt am = absInt(mul[i]);
    nst.push_back(strides[i] * mul[i]);
    ns.push_back(floordiv(shape[i] + (am - 1), am));
    if (mul[i] < 0) offs = offs + (shape[i] - 1) * strides[i];
    if (mask) {
      const auto &[mx, my] = (*mask)[i];
      SInt lo = mul[i] > 0 ? mx : shape[i] - my;
      SInt hi = mul[i] > 0 ? my : shape[i] - mx;
      m->emplace_back(floordiv(lo + (am - 1), am), floordiv(hi + (am - 1), am));
    }
  }
  return create(ns, nst, offset + offs, m);
}

namespace {
// (flat position, buffer index, valid count) of the first and last valid elements of a masked
// view, or nullopt when they are not plain integers or the view has no valid element.
struct ValidBox {
  int64_t firstFlat, firstIdx, lastFlat, lastIdx, count;
};
std::optional<ValidBox> validBox(const View &v) {
  if (!v.mask || !v.offset.isInt()) return std::nullopt;
  int64_t firstFlat = 0, firstIdx = v.offset.asInt(), lastFlat = 0, lastIdx = v.offset.asInt(), count = 1;
  int64_t rowStride = 1;
  for (size_t k = v.shape.size(); k-- > 0;) {
    const auto &[lo, hi] = (*v.mask)[k];
    if (!lo.isInt() || !hi.isInt() || !v.shape[k].isInt() || !v.strides[k].isInt()) return std::nullopt;
    if (lo.asInt() >= hi.asInt()) return std::nullopt;
    firstFlat += lo.asInt() * rowStride;
    lastFlat += (hi.asInt() - 1) * rowStride;
    firstIdx += lo.asInt() * v.strides[k].asInt();
    lastIdx += (hi.asInt() - 1) * v.strides[k].asInt();
    count *= hi.asInt() - lo.asInt();
    rowStride *= v.shape[k].asInt();
  }
  return ValidBox{firstFlat, firstIdx, lastFlat, lastIdx, count};
}
bool sameValidBox(const View &a, const View &b) {
  auto x = validBox(a), y = validBox(b);
  if (!x || !y) return x.has_value() == y.has_value();
  return x->firstFlat == y->firstFlat && x->firstIdx == y->firstIdx && x->lastFlat == y->lastFlat &&
         x->lastIdx == y->lastIdx && x->count == y->count;
}
} // namespace

std::optional<View> View::reshape(const Shape &newShape) const {
  if (shape == newShape) return *this;
  for (const auto &x : newShape)
    LAZYJIT_USER_CHECK(truthy(ge(x, 0)), ShapeError,
                       "reshape: cannot reshape {} to {}: negative dimension", fmtShape(shape),
                       fmtShape(newShape));
  if (containsZero(shape)) {
    LAZYJIT_USER_CHECK(containsZero(newShape), ShapeError,
                       "reshape: cannot reshape {} (0 elements) to {}", fmtShape(shape),
                       fmtShape(newShape));
    return create(newShape);
  }
  if (allInt(shape)) {
    int64_t want = prodInt(shape), got = 1;
    for (const auto &s : newShape) {
      LAZYJIT_USER_CHECK(s.isInt() || s.node()->isVar(), ShapeError,
                         "reshape: cannot reshape {} to {}: {} is not an int or a Variable",
                         fmtShape(shape), fmtShape(newShape), s.render());
      if (s.isInt()) {
        got *= s.asInt();
      } else {
        auto v = s.node()->boundValue();
        LAZYJIT_USER_CHECK(v.has_value(), ShapeError,
                           "reshape: cannot reshape {} to {}: variable {} is not bound",
                           fmtShape(shape), fmtShape(newShape), s.render());
        got *= *v;
      }
    }
    LAZYJIT_USER_CHECK(want == got, ShapeError,
                       "reshape: cannot reshape {} ({} elements) to {} ({} elements)",
                       fmtShape(shape), want, fmtShape(newShape), got);
  }
  if (newShape.empty() && hasMask()) {
    for (const auto &[mx, my] : *mask)
      if (pyEq(mx, my)) return std::nullopt;
  }
  if (contiguous) return create(newShape);

  Shape outStrides; // innermost first
  size_t next = newShape.size();
  auto merged = mergeDims(shape, strides, mask);
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) {
    const auto &[mergedDim, s, realDim] = *it;
    SInt acc = 1, newStride = s;
    while (truthy(le(acc, mergedDim)) && pyNe(acc, mergedDim)) {
      if (next == 0) break;
      SInt newDim = newShape[--next];
      if (!truthy(newDim)) break;
      outStrides.push_back(pyNe(newDim, 1) ? newStride : SInt(0));
      if (pyEq(newDim, 1)) continue;
      acc = acc * newDim;
      newStride = newStride * (truthy(lt(acc, realDim)) ? newDim : SInt(0));
    }
    if (pyNe(acc, mergedDim)) return std::nullopt;
  }
  while (outStrides.size() < newShape.size()) outStrides.push_back(0);
  ReshapeMaskResult rm = reshapeMask(*this, newShape);
  if (rm.fail) return std::nullopt;
  SInt totalOffset = 0;
  if (rm.offsets && !rm.offsets->empty())
    for (size_t i = 0; i < rm.offsets->size() && i < outStrides.size(); ++i)
      totalOffset = totalOffset + (*rm.offsets)[i] * outStrides[i];
  std::reverse(outStrides.begin(), outStrides.end());
  View out = create(newShape, outStrides, offset - totalOffset, rm.mask);
  // Deliberate fix of a reference bug: _reshape_mask can shift the offset or the mask of a padded
  // view. A reshape preserves the row-major order of the valid box, so its first and last valid
  // elements must keep their flat positions and buffer indices; if not, use a second view.
  if (hasMask() && !sameValidBox(*this, out)) return std::nullopt;
  return out;
}

std::vector<NodeRef> View::vars() const {
  std::vector<NodeRef> out;
  auto add = [&](const SInt &x) {
    if (!x.isNode()) return;
    for (const auto &v : x.node()->vars()) {
      bool dup = std::any_of(out.begin(), out.end(), [&](const NodeRef &o) { return o->identity() == v->identity(); });
      if (!dup) out.push_back(v);
    }
  };
  for (const auto &s : shape) add(s);
  for (const auto &s : strides) add(s);
  add(offset);
  if (mask)
    for (const auto &[a, b] : *mask) {
      add(a);
      add(b);
    }
  return out;
}

View View::unbind() const {
  std::map<std::string, NodeRef> m;
  for (const auto &v : vars())
    if (v->boundValue()) m.emplace(v->key(), v->unbindVar().first);
  if (m.empty()) return *this;
  auto sub = [&](const SInt &x) -> SInt { return x.isInt() ? x : SInt(x.node()->substitute(m)); };
  Shape ns, nst;
  for (const auto &s : shape) ns.push_back(sub(s));
  for (const auto &s : strides) nst.push_back(sub(s));
  std::optional<Mask> nm;
  if (mask) {
    nm = Mask();
    for (const auto &[a, b] : *mask) nm->emplace_back(sub(a), sub(b));
  }
  return create(ns, nst, sub(offset), nm);
}

bool View::operator==(const View &o) const {
  if (contiguous != o.contiguous || shape != o.shape || strides != o.strides ||
      !pyEq(offset, o.offset) || mask.has_value() != o.mask.has_value())
    return false;
  if (mask) {
    if (mask->size() != o.mask->size()) return false;
    for (size_t i = 0; i < mask->size(); ++i)
      if (!pairEq((*mask)[i], (*o.mask)[i])) return false;
  }
  return true;
}

size_t View::hash() const {
  size_t h = hashShape(shape);
  hashCombine(h, hashShape(strides));
  hashCombine(h, hashSInt(offset));
  if (mask)
    for (const auto &[a, b] : *mask) {
      hashCombine(h, hashSInt(a));
      hashCombine(h, hashSInt(b));
    }
  hashCombine(h, contiguous);
  return h;
}

std::string View::repr() const {
  std::string m = "None";
  if (mask) {
    m = "(";
    for (size_t i = 0; i < mask->size(); ++i)
      m += (i ? ", " : "") + std::string("(") + (*mask)[i].first.render() + ", " +
           (*mask)[i].second.render() + ")";
    if (mask->size() == 1) m += ",";
    m += ")";
  }
  return "View(shape=" + renderShape(shape) + ", strides=" + renderShape(strides) +
         ", offset=" + offset.render() + ", mask=" + m +
         ", contiguous=" + (contiguous ? "True" : "False") + ")";
}

} // namespace lazyjit
