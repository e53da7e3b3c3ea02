// Tests that need what a machine may lack (a CUDA device, the CUDA toolkit's ptxas) say so instead
// of passing: `if (!have) return test::skip(why);`. A run in which a test case skipped and none
// failed exits with kSkipExitCode, which CTest's SKIP_RETURN_CODE turns into "Skipped"; such tests
// get their own CTest entry (lazyjit_add_unittest_entry in cmake/LazyjitAddLibrary.cmake) so the
// skip does not hide the results of the tests that did run.
#ifndef LAZYJIT_UNITTESTS_TESTSKIP_H
#define LAZYJIT_UNITTESTS_TESTSKIP_H

#include <string>

namespace lazyjit::test {

// The exit status of a run that skipped a test case (automake's and CTest's convention).
inline constexpr int kSkipExitCode = 77;

// Marks the running test case as skipped for `reason` and prints the reason with its name. The
// caller returns from the test case; checks it still makes count as usual.
void skip(const std::string &reason);

// The test cases skipped in this run so far.
int skippedCount();

} // namespace lazyjit::test

#endif // LAZYJIT_UNITTESTS_TESTSKIP_H
