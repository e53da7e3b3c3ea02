// The restricted unpickler of torchLoad (see Pickle.h): pickle's stack machine for the opcodes a
// checkpoint uses, with globals resolved to inert names and calls limited to the tensor rebuild
// functions and OrderedDict.
#include "Pickle.h"

#include "lazyjit/Support/Error.h"

#include <array>
#include <cstring>
#include <unordered_map>

namespace lazyjit::nn::pickle {

namespace {

struct StorageName {
  const char *name;
  DType dtype;
};
constexpr StorageName kStorages[] = {
    {"torch.FloatStorage", dtypes::float32},     {"torch.HalfStorage", dtypes::float16},
    {"torch.BFloat16Storage", dtypes::bfloat16}, {"torch.DoubleStorage", dtypes::float64},
    {"torch.LongStorage", dtypes::int64},        {"torch.IntStorage", dtypes::int32},
    {"torch.ShortStorage", dtypes::int16},       {"torch.CharStorage", dtypes::int8},
    {"torch.ByteStorage", dtypes::uint8},        {"torch.BoolStorage", dtypes::boolean},
};

// Inert names: the tensor types the old tar format records next to each tensor.
constexpr const char *kTensorTypes[] = {
    "torch.FloatTensor", "torch.HalfTensor", "torch.BFloat16Tensor", "torch.DoubleTensor",
    "torch.LongTensor",  "torch.IntTensor",  "torch.ShortTensor",    "torch.CharTensor",
    "torch.ByteTensor",  "torch.BoolTensor",
};

constexpr const char *kRebuildV2 = "torch._utils._rebuild_tensor_v2";
constexpr const char *kRebuild = "torch._utils._rebuild_tensor";
constexpr const char *kParameter = "torch._utils._rebuild_parameter";
constexpr const char *kParameterState = "torch._utils._rebuild_parameter_with_state";
constexpr const char *kOrderedDict = "collections.OrderedDict";

bool allowedGlobal(const std::string &g) {
  if (g == kRebuildV2 || g == kRebuild || g == kParameter || g == kParameterState ||
      g == kOrderedDict)
    return true;
  if (storageDType(g)) return true;
  for (const char *t : kTensorTypes)
    if (g == t) return true;
  return false;
}

// The opcodes of protocols 2-5 that the machine runs (pickletools' names).
// clang-format off
enum Opcode : uint8_t {
  MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', BINFLOAT = 'G', BININT = 'J', BININT1 = 'K',
  BININT2 = 'M', NONE = 'N', BINPERSID = 'Q', REDUCE = 'R', BINUNICODE = 'X', EMPTY_LIST = ']',
  APPEND = 'a', BUILD = 'b', GLOBAL = 'c', APPENDS = 'e', BINGET = 'h', LONG_BINGET = 'j',
  BINPUT = 'q', LONG_BINPUT = 'r', SETITEM = 's', TUPLE = 't', SETITEMS = 'u', EMPTY_DICT = '}',
  EMPTY_TUPLE = ')', BINBYTES = 'B', SHORT_BINBYTES = 'C', PROTO = 0x80, NEWOBJ = 0x81,
  TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89, LONG1 = 0x8a,
  LONG4 = 0x8b, SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e, STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94, FRAME = 0x95,
};
// clang-format on

/// One pickle's run: the stack, the marks and the memo.
class Machine {
public:
  Machine(Unpickler &u, const Unpickler::PersistentLoad &persistentLoad,
          std::span<const uint8_t> data, size_t pos)
      : u(u), persistentLoad(persistentLoad), data(data), pos(pos) {}

  Object *run(size_t &end) {
    while (true) {
      at = pos;
      uint8_t op = byte();
      if (op == STOP) {
        if (stack.size() != 1 || !marks.empty())
          u.fail(at, fmt::format("STOP with {} values on the stack", stack.size()));
        end = pos;
        return stack.back();
      }
      step(op);
    }
  }

private:
  Unpickler &u;
  const Unpickler::PersistentLoad &persistentLoad;
  std::span<const uint8_t> data;
  size_t pos, at = 0; // `at`: the offset of the opcode running
  std::vector<Object *> stack;
  std::vector<size_t> marks;
  std::unordered_map<uint64_t, Object *> memo;

  const uint8_t *take(uint64_t n) {
    if (n > data.size() - pos)
      u.fail(at, fmt::format("truncated: the opcode needs {} more bytes, {} are left", n,
                             data.size() - pos));
    const uint8_t *p = data.data() + pos;
    pos += static_cast<size_t>(n);
    return p;
  }
  uint8_t byte() {
    if (pos >= data.size()) u.fail(pos, "truncated: the pickle ends before its STOP");
    return data[pos++];
  }
  uint64_t le(int n) {
    const uint8_t *p = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
  }
  std::string str(uint64_t n) {
    const uint8_t *p = take(n);
    return std::string(reinterpret_cast<const char *>(p), static_cast<size_t>(n));
  }
  std::string line() {
    size_t start = pos;
    while (pos < data.size() && data[pos] != '\n') ++pos;
    if (pos >= data.size()) u.fail(at, "truncated: GLOBAL's name has no end of line");
    return std::string(reinterpret_cast<const char *>(data.data() + start), pos++ - start);
  }

  Object *push(Object *o) {
    stack.push_back(o);
    return o;
  }
  Object *push(Kind k) { return push(u.make(k)); }
  Object *pop() {
    if (stack.size() <= (marks.empty() ? 0 : marks.back()))
      u.fail(at, "the opcode pops from an empty stack");
    Object *o = stack.back();
    stack.pop_back();
    return o;
  }
  Object *top() {
    if (stack.size() <= (marks.empty() ? 0 : marks.back()))
      u.fail(at, "the opcode reads an empty stack");
    return stack.back();
  }
  /// The values pushed since the last MARK, which is removed.
  std::vector<Object *> popMark() {
    if (marks.empty()) u.fail(at, "the opcode needs a MARK, and there is none");
    std::vector<Object *> out(stack.begin() + static_cast<ptrdiff_t>(marks.back()), stack.end());
    stack.resize(marks.back());
    marks.pop_back();
    return out;
  }
  Object *tuple(std::vector<Object *> items) {
    Object *t = u.make(Kind::Tuple);
    t->items = std::move(items);
    return t;
  }
  Object *intObject(int64_t v) {
    Object *o = u.make(Kind::Int);
    o->i = v;
    return o;
  }
  Object *container(Kind k, const char *opName) {
    Object *c = top();
    if (c->kind != k) u.fail(at, fmt::format("{} on {}", opName, kindName(c->kind)));
    return c;
  }
  void memoize(uint64_t key) { memo[key] = top(); }
  Object *memoGet(uint64_t key) {
    auto it = memo.find(key);
    if (it == memo.end()) u.fail(at, fmt::format("the memo has no entry {}", key));
    return it->second;
  }
  Object *global(std::string module, std::string name) {
    std::string g = module + "." + name;
    if (!allowedGlobal(g))
      u.fail(at,
             fmt::format(
                 "disallowed global '{}' (a checkpoint of tensors uses only torch's tensor rebuild "
                 "functions, torch.*Storage and collections.OrderedDict; nothing is executed)",
                 g));
    Object *o = u.make(Kind::Global);
    o->s = std::move(g);
    return o;
  }

  void step(uint8_t op);
  Object *call(const Object &fn, const Object &args);
  Object *rebuildTensor(const Object &args, bool v2);
  std::vector<int64_t> ints(const Object &o, const char *what);
};

void Machine::step(uint8_t op) {
  switch (op) {
  case PROTO:
    if (uint8_t v = byte(); v > 5)
      u.fail(at, fmt::format("pickle protocol {} (this reader knows 2 to 5)", v));
    return;
  case FRAME:
    (void)le(8);
    return;
  case MARK:
    marks.push_back(stack.size());
    return;
  case POP:
    (void)pop();
    return;
  case POP_MARK:
    (void)popMark();
    return;
  case NONE:
    push(Kind::None);
    return;
  case NEWTRUE:
    push(Kind::Bool)->i = 1;
    return;
  case NEWFALSE:
    push(Kind::Bool)->i = 0;
    return;
  case BININT:
    push(intObject(static_cast<int32_t>(le(4))));
    return;
  case BININT1:
    push(intObject(static_cast<int64_t>(le(1))));
    return;
  case BININT2:
    push(intObject(static_cast<int64_t>(le(2))));
    return;
  case LONG1:
  case LONG4: {
    uint64_t n = op == LONG1 ? le(1) : le(4);
    std::string bytes = str(n);
    if (n > 8) { // beyond int64 (the legacy format's magic number): kept as bytes
      push(Kind::BigInt)->s = std::move(bytes);
      return;
    }
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
    if (n > 0 && n < 8 && (static_cast<uint8_t>(bytes[n - 1]) & 0x80))
      v |= ~uint64_t(0) << (8 * n); // sign-extend
    push(intObject(static_cast<int64_t>(v)));
    return;
  }
  case BINFLOAT: {
    const uint8_t *p = take(8);
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i]; // big-endian
    std::memcpy(&push(Kind::Float)->f, &bits, 8);
    return;
  }
  case SHORT_BINUNICODE:
    push(Kind::Str)->s = str(le(1));
    return;
  case BINUNICODE:
    push(Kind::Str)->s = str(le(4));
    return;
  case BINUNICODE8:
    push(Kind::Str)->s = str(le(8));
    return;
  case SHORT_BINBYTES:
    push(Kind::Bytes)->s = str(le(1));
    return;
  case BINBYTES:
    push(Kind::Bytes)->s = str(le(4));
    return;
  case BINBYTES8:
    push(Kind::Bytes)->s = str(le(8));
    return;
  case EMPTY_TUPLE:
    push(Kind::Tuple);
    return;
  case EMPTY_LIST:
    push(Kind::List);
    return;
  case EMPTY_DICT:
    push(Kind::Dict);
    return;
  case TUPLE:
    push(tuple(popMark()));
    return;
  case TUPLE1:
  case TUPLE2:
  case TUPLE3: {
    std::vector<Object *> items(op - TUPLE1 + 1);
    for (size_t i = items.size(); i-- > 0;) items[i] = pop();
    push(tuple(std::move(items)));
    return;
  }
  case APPEND: {
    Object *v = pop();
    container(Kind::List, "APPEND")->items.push_back(v);
    return;
  }
  case APPENDS: {
    std::vector<Object *> vs = popMark();
    Object *l = container(Kind::List, "APPENDS");
    l->items.insert(l->items.end(), vs.begin(), vs.end());
    return;
  }
  case SETITEM: {
    Object *v = pop(), *k = pop();
    Object *d = container(Kind::Dict, "SETITEM");
    d->items.push_back(k);
    d->items.push_back(v);
    return;
  }
  case SETITEMS: {
    std::vector<Object *> kvs = popMark();
    if (kvs.size() % 2) u.fail(at, "SETITEMS with an odd number of values");
    Object *d = container(Kind::Dict, "SETITEMS");
    d->items.insert(d->items.end(), kvs.begin(), kvs.end());
    return;
  }
  case BINPUT:
    memoize(le(1));
    return;
  case LONG_BINPUT:
    memoize(le(4));
    return;
  case MEMOIZE:
    memoize(memo.size());
    return;
  case BINGET:
    push(memoGet(le(1)));
    return;
  case LONG_BINGET:
    push(memoGet(le(4)));
    return;
  case GLOBAL: {
    std::string module = line();
    push(global(std::move(module), line()));
    return;
  }
  case STACK_GLOBAL: {
    Object *name = pop(), *module = pop();
    if (name->kind != Kind::Str || module->kind != Kind::Str)
      u.fail(at, "STACK_GLOBAL of values that are not strings");
    push(global(module->s, name->s));
    return;
  }
  case REDUCE:
  case NEWOBJ: {
    Object *args = pop(), *fn = pop();
    push(call(*fn, *args));
    return;
  }
  case BUILD: {
    (void)pop(); // the state: an OrderedDict's _metadata, a tensor's hooks; not needed
    Object *o = top();
    if (o->kind != Kind::Dict && o->kind != Kind::Tensor)
      u.fail(at, fmt::format("BUILD on {}", kindName(o->kind)));
    return;
  }
  case BINPERSID: {
    Object *pid = pop();
    if (!persistentLoad) u.fail(at, "a persistent id where the format has none");
    push(persistentLoad(u, *pid, at));
    return;
  }
  default:
    u.fail(at, fmt::format("unsupported pickle opcode 0x{:02x}", op));
  }
}

std::vector<int64_t> Machine::ints(const Object &o, const char *what) {
  if (o.kind != Kind::Tuple && o.kind != Kind::List)
    u.fail(at, fmt::format("the tensor's {} is {}, not a tuple", what, kindName(o.kind)));
  std::vector<int64_t> out;
  for (const Object *x : o.items) {
    if (x->kind != Kind::Int)
      u.fail(at, fmt::format("the tensor's {} holds {}, not an int", what, kindName(x->kind)));
    out.push_back(x->i);
  }
  return out;
}

/// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[,
/// metadata]) and the older _rebuild_tensor(storage, storage_offset, size, stride).
Object *Machine::rebuildTensor(const Object &args, bool v2) {
  const auto &a = args.items;
  if (v2 ? (a.size() < 6 || a.size() > 7) : a.size() != 4)
    u.fail(at, fmt::format("{} with {} arguments", v2 ? kRebuildV2 : kRebuild, a.size()));
  if (a[0]->kind != Kind::Storage)
    u.fail(at, fmt::format("a tensor over {}, not a storage", kindName(a[0]->kind)));
  if (a[1]->kind != Kind::Int)
    u.fail(at, fmt::format("a tensor's storage offset is {}", kindName(a[1]->kind)));
  Object *t = u.make(Kind::Tensor);
  t->tensor.storage = a[0]->storage;
  t->tensor.offset = a[1]->i;
  t->tensor.size = ints(*a[2], "size");
  t->tensor.stride = ints(*a[3], "stride");
  return t;
}

Object *Machine::call(const Object &fn, const Object &args) {
  if (fn.kind != Kind::Global) u.fail(at, fmt::format("a call of {}", kindName(fn.kind)));
  if (args.kind != Kind::Tuple)
    u.fail(at, fmt::format("a call of {} with {} for arguments", fn.s, kindName(args.kind)));
  if (fn.s == kOrderedDict) {
    if (!args.items.empty()) u.fail(at, "OrderedDict called with arguments");
    return u.make(Kind::Dict);
  }
  if (fn.s == kRebuildV2 || fn.s == kRebuild) return rebuildTensor(args, fn.s == kRebuildV2);
  if (fn.s == kParameter || fn.s == kParameterState) {
    if (args.items.empty() || args.items[0]->kind != Kind::Tensor)
      u.fail(at, fmt::format("{} of something not a tensor", fn.s));
    return args.items[0];
  }
  u.fail(at, fmt::format("a call of {}, which is not a function", fn.s));
}

} // namespace

std::string_view kindName(Kind k) {
  switch (k) {
  case Kind::None:
    return "None";
  case Kind::Bool:
    return "a bool";
  case Kind::Int:
    return "an int";
  case Kind::BigInt:
    return "an int beyond 64 bits";
  case Kind::Float:
    return "a float";
  case Kind::Str:
    return "a string";
  case Kind::Bytes:
    return "bytes";
  case Kind::Tuple:
    return "a tuple";
  case Kind::List:
    return "a list";
  case Kind::Dict:
    return "a dict";
  case Kind::Global:
    return "a global";
  case Kind::Storage:
    return "a storage";
  case Kind::Tensor:
    return "a tensor";
  }
  return "a value";
}

std::optional<DType> storageDType(std::string_view global) {
  for (const auto &s : kStorages)
    if (global == s.name) return s.dtype;
  return std::nullopt;
}

Object *Unpickler::make(Kind k) {
  arena.push_back(std::make_unique<Object>());
  arena.back()->kind = k;
  return arena.back().get();
}

void Unpickler::fail(size_t offset, const std::string &message) const {
  throw ParseError(fmt::format("{}: {}: {} at offset {}", path_, what, message, offset));
}

Object *Unpickler::load(std::span<const uint8_t> data, size_t &pos, const std::string &whatIn) {
  what = whatIn;
  return Machine(*this, persistentLoad, data, pos).run(pos);
}

} // namespace lazyjit::nn::pickle
