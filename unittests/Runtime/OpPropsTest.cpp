// The op table's props (Ops.def) against the reference interpreter's arithmetic: an op marked
// zero-preserving gives 0 on all-zero operands, and every other ALU op does not (the padding of a
// reduce axis relies on the first; the second keeps the column from being too cautious unnoticed).
#include "InterpreterScalar.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace lazyjit;

TEST_CASE("Op table: the zero-preserving ops are those that give 0 on zeros in the interpreter") {
  int alu = 0;
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    // (CAST and WHERE are the interpreter's node evaluation's, not the ALU's: checked below)
    if (!isElementwise(op) || op == Op::Cast || op == Op::Where) continue;
    ++alu;
    // (XOR is for integers and bools only)
    for (DType dt : op == Op::Xor ? std::vector<DType>{dtypes::int32} : std::vector<DType>{dtypes::float32, dtypes::int32}) {
      std::vector<interp::Value> zeros(static_cast<size_t>(opArity(op)));
      interp::Value r = interp::alu(op, zeros, dt);
      // (CMPLT's bool comes back converted to dt)
      bool zero = dt.isFloating() ? r.f == 0 : r.i == 0;
      if (dt.isFloating()) {
        CHECK_MESSAGE(zero == isZeroPreserving(op), opName(op), " of zeros is ", r.f);
      } else if (isZeroPreserving(op)) {
        CHECK_MESSAGE(zero, opName(op), " of int32 zeros is ", r.i);
      }
    }
  }
  CHECK(alu == 15);
  // CAST of 0 is 0 (a bitcast too, of +0.0: Kernel::padTo refuses a bitcast, whose -0.0 is not);
  // WHERE of zeros picks a 0
  CHECK(isZeroPreserving(Op::Cast));
  CHECK(interp::convert(interp::Value{}, dtypes::float32, dtypes::int32).i == 0);
  CHECK(interp::bitcast(interp::Value{}, dtypes::float32, dtypes::int32).i == 0);
  CHECK(isZeroPreserving(Op::Where));
}
