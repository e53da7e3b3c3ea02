// The doctest entry point shared by every unit-test executable. It runs doctest as its own main
// would, and exits with test::kSkipExitCode when a test case skipped (test::skip) and none failed,
// so CTest reports such a run as skipped instead of passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include "TestSkip.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <set>
#include <string>

namespace {

// What this run skipped, and the running test case's name (doctest tells its listeners); built on
// first use rather than by a static constructor.
struct SkipState {
  std::string currentTestCase;
  std::set<std::string> cases, reasons;
};
SkipState &state() {
  static SkipState s;
  return s;
}

struct CurrentTestListener : doctest::IReporter {
  explicit CurrentTestListener(const doctest::ContextOptions &) {}
  void report_query(const doctest::QueryData &) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats &) override {}
  void test_case_start(const doctest::TestCaseData &tc) override { state().currentTestCase = tc.m_name; }
  void test_case_reenter(const doctest::TestCaseData &) override {}
  void test_case_end(const doctest::CurrentTestCaseStats &) override {}
  void test_case_exception(const doctest::TestCaseException &) override {}
  void subcase_start(const doctest::SubcaseSignature &) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData &) override {}
  void log_message(const doctest::MessageData &) override {}
  void test_case_skipped(const doctest::TestCaseData &) override {}
};
REGISTER_LISTENER("lazyjit-current-test", 1, CurrentTestListener);

} // namespace

namespace lazyjit::test {

void skip(const std::string &reason) {
  // a test case that skips several times (once per kernel, say) is reported once per reason
  SkipState &s = state();
  bool newCase = s.cases.insert(s.currentTestCase).second;
  bool newReason = s.reasons.insert(reason).second;
  if (!newCase && !newReason) return;
  std::printf("skipped: %s: %s\n", s.currentTestCase.c_str(), reason.c_str());
  std::fflush(stdout);
}

int skippedCount() { return static_cast<int>(state().cases.size()); }

} // namespace lazyjit::test

int main(int argc, char **argv) {
  doctest::Context context(argc, argv);
  int status = context.run();
  int skipped = lazyjit::test::skippedCount();
  if (context.shouldExit() || status != 0 || skipped == 0) return status;
  // one line per reason, naming the run (scripts/test.sh prints these after CTest's summary)
  std::string run = argv[0];
  run = run.substr(run.find_last_of('/') + 1);
  for (int i = 1; i < argc; ++i) run += std::string(" ") + argv[i];
  for (const auto &reason : state().reasons)
    std::printf("SKIPPED: %s: %d test case(s), none failed (exit %d): %s\n", run.c_str(), skipped,
                lazyjit::test::kSkipExitCode, reason.c_str());
  return lazyjit::test::kSkipExitCode;
}
