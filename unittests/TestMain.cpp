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

// The name of the running test case, for the skip messages: doctest tells its listeners.
std::string currentTestCase;
std::set<std::string> skippedCases, skipReasons;

struct CurrentTestListener : doctest::IReporter {
  explicit CurrentTestListener(const doctest::ContextOptions &) {}
  void report_query(const doctest::QueryData &) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats &) override {}
  void test_case_start(const doctest::TestCaseData &tc) override { currentTestCase = tc.m_name; }
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
  bool newCase = skippedCases.insert(currentTestCase).second;
  bool newReason = skipReasons.insert(reason).second;
  if (!newCase && !newReason) return;
  std::printf("skipped: %s: %s\n", currentTestCase.c_str(), reason.c_str());
  std::fflush(stdout);
}

int skippedCount() { return static_cast<int>(skippedCases.size()); }

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
  for (const auto &reason : skipReasons)
    std::printf("SKIPPED: %s: %d test case(s), none failed (exit %d): %s\n", run.c_str(), skipped,
                lazyjit::test::kSkipExitCode, reason.c_str());
  return lazyjit::test::kSkipExitCode;
}
