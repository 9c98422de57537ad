// The GoogleTest main of every test binary. A skip in CI is a failure unless its message says
// why this kind of machine may skip it ("declared: ..."), the rule tests/skip_policy.py applies
// to pytest: a regression that shows up as a skip must not pass unnoticed. Every skip is appended
// to $MAXKERNEL_SKIP_LOG, which scripts/test.sh prints at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr const char* kDeclaredPrefix = "declared: ";

// Strict when CI=true or MAXKERNEL_STRICT_SKIPS=1; MAXKERNEL_STRICT_SKIPS=0 turns it off.
bool strict_skips() {
  if (const char* explicit_value = std::getenv("MAXKERNEL_STRICT_SKIPS");
      explicit_value && *explicit_value)
    return std::string(explicit_value) == "1";
  std::string ci = std::getenv("CI") ? std::getenv("CI") : "";
  std::transform(ci.begin(), ci.end(), ci.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ci == "true" || ci == "1" || ci == "yes";
}

// GTEST_SKIP() << "why" reports "Skipped\nwhy" or "why", depending on how it was written.
std::string skip_reason(const testing::TestPartResult& result) {
  std::string text = result.message() ? result.message() : "";
  if (text.rfind("Skipped\n", 0) == 0) text.erase(0, 8);
  return text;
}

// Records skips as they are reported. It never calls back into GoogleTest from
// OnTestPartResult (UnitTest holds its mutex there); an undeclared skip in strict mode fails the
// binary's exit status instead, and ctest runs each test as its own process.
class SkipPolicy : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo& info) override {
    current_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.skipped()) return;
    const std::string reason = skip_reason(result);
    const bool declared = reason.rfind(kDeclaredPrefix, 0) == 0;
    const bool fail = !declared && strict_skips();
    if (fail) undeclared_.push_back(current_ + ": " + reason);
    if (const char* log = std::getenv("MAXKERNEL_SKIP_LOG"); log && *log) {
      std::ofstream(log, std::ios::app) << "gtest: "
                                        << (declared ? "declared"
                                            : fail   ? "FAILED undeclared"
                                                     : "undeclared")
                                        << " skip: " << current_ << ": " << reason << "\n";
    }
  }
  const std::vector<std::string>& undeclared() const { return undeclared_; }

 private:
  std::string current_;
  std::vector<std::string> undeclared_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  auto* policy = new SkipPolicy;  // the listener list owns it
  testing::UnitTest::GetInstance()->listeners().Append(policy);
  const int status = RUN_ALL_TESTS();
  for (const std::string& skip : policy->undeclared())
    std::fprintf(stderr,
                 "undeclared skip (CI=true or MAXKERNEL_STRICT_SKIPS=1): %s\nA skip in CI is a "
                 "failure unless its message starts with \"%s\" and says why this machine kind "
                 "may skip it.\n",
                 skip.c_str(), kDeclaredPrefix);
  return policy->undeclared().empty() ? status : 1;
}
