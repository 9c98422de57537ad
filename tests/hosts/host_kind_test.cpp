// A host kind added through the HostKind interface alone (no other file of tpu/host changes): a
// test-only kind `env` that starts the local worker through env(1) with variables from its own
// setting. Its definition is parsed and checked by the kind, and a real lower and a real evaluate
// run through it: the candidate sees the variable, so the worker was started by the kind's argv.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "tpu/host/host_config.h"
#include "tpu/host/host_kind.h"
#include "tpu/host/host_pool.h"
#include "tpu/host/kernel_host.h"
#include "worker_host_fixture.h"

namespace mk::tpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// {"kind": "env", "variables": {"NAME": "value", ...}}: the local worker, run as
// `env NAME=value ... python -u worker.py ...`. Its setting has no HostConfig field: the kind
// reads it from the definition.
class EnvHostKind : public HostKind {
 public:
  std::string_view name() const override { return "env"; }

  std::string check_settings(const HostConfig& host) const override {
    const json variables = host.definition.value("variables", json());
    bool strings = variables.is_object() && !variables.empty();
    for (const auto& [name, value] : variables.items()) strings &= value.is_string();
    return strings ? "" : "env needs variables (an object of names and string values)";
  }

  std::vector<std::string> worker_argv(const HostConfig& host, const WorkerBundle& bundle,
                                       Lane lane) const override {
    std::vector<std::string> argv = {"env"};
    for (const auto& [name, value] : host.definition.at("variables").items())
      argv.push_back(name + "=" + value.get<std::string>());
    const std::vector<std::string> worker = HostKind::worker_argv(host, bundle, lane);
    argv.insert(argv.end(), worker.begin(), worker.end());
    return argv;
  }

  bool workers_run_here() const override { return true; }
};

class HostKindTest : public WorkerHostTest {
 protected:
  void SetUp() override {
    WorkerHostTest::SetUp();
    add_host_kind(std::make_unique<EnvHostKind>());  // false on a repeat: already there
    ASSERT_NE(find_host_kind("env"), nullptr);
  }

  std::string definition(const json& variables) const {
    json d = {{"name", "via-env"}, {"kind", "env"}, {"python", config_.python}};
    if (!variables.is_null()) d["variables"] = variables;
    return d.dump();
  }

  // scale_add whose candidate, when traced, makes a folder named after $MK_VIA_ENV in the scratch
  // directory (candidates signal with folders: the worker's source gate refuses file writes).
  std::string source_noting_the_variable() const {
    return scale_add_with("    import os\n    os.makedirs(os.path.join(" +
                          json(scratch_.string()).dump() +
                          ", os.environ.get('MK_VIA_ENV', 'unset')), exist_ok=True)\n");
  }
};

TEST_F(HostKindTest, TheKindParsesAndChecksItsOwnSettings) {
  std::string error;
  EXPECT_FALSE(parse_host_config(definition(nullptr), error));
  EXPECT_EQ(error, "host 'via-env': env needs variables (an object of names and string values)");
  EXPECT_FALSE(parse_host_config(definition({{"MK_VIA_ENV", 1}}), error));
  EXPECT_FALSE(parse_host_config(R"({"kind": "telnet"})", error));
  EXPECT_EQ(error, "host 'local': kind must be local, ssh, command, ray or env, not 'telnet'");

  auto host = parse_host_config(definition({{"MK_VIA_ENV", "set-by-the-kind"}}), error);
  ASSERT_TRUE(host) << error;
  EXPECT_EQ(host->kind->name(), "env");
  EXPECT_EQ(host->effective_worker_nice(), 10);  // its workers run here
}

TEST_F(HostKindTest, ALowerAndAnEvaluateRunThroughTheKind) {
  std::string error;
  auto config = parse_host_config(definition({{"MK_VIA_ENV", "set-by-the-kind"}}), error);
  ASSERT_TRUE(config) << error;
  config->compile_slots = 1;
  config->timing_slots = 1;
  HostPool pool;
  pool.add(std::make_unique<KernelHost>(*config, bundle_));
  EXPECT_TRUE(pool.all_local());

  const json lower = {{"op", "lower"},
                      {"source", source_noting_the_variable()},
                      {"filename", (scratch_ / "k.py").string()},
                      {"task", {{"form", "infile"}}},
                      {"target", "tpu"}};
  std::string ran_on;
  // Both on the timing lane: one worker start (a JAX import) instead of two; the lanes' argv
  // differ only in --lane, which the kind takes from HostKind::worker_argv.
  WorkerReply lowered = pool.run(Lane::Timing, lower, {}, std::nullopt, {}, &ran_on);
  ASSERT_TRUE(lowered.ok()) << lowered.message << lowered.stderr_tail;
  EXPECT_TRUE(lowered.body.value("lowered", false)) << lowered.body.dump();
  EXPECT_EQ(ran_on, "via-env");
  EXPECT_TRUE(fs::is_directory(scratch_ / "set-by-the-kind"));
  EXPECT_FALSE(fs::exists(scratch_ / "unset"));

  fs::remove_all(scratch_ / "set-by-the-kind");
  const json evaluate = {{"op", "evaluate"},
                         {"source", source_noting_the_variable()},
                         {"filename", (scratch_ / "k.py").string()},
                         {"task", {{"form", "infile"}}},
                         {"seeds", {1}},
                         {"timing", one_timed_run()}};
  WorkerReply evaluated = pool.run(Lane::Timing, evaluate);
  ASSERT_TRUE(evaluated.ok()) << evaluated.message << evaluated.stderr_tail;
  EXPECT_TRUE(evaluated.body.value("correct", false)) << evaluated.body.dump();
  EXPECT_EQ(pool.host(0).live_workers(), 1u);
  EXPECT_TRUE(fs::is_directory(scratch_ / "set-by-the-kind"));
  EXPECT_FALSE(fs::exists(scratch_ / "unset"));
  pool.shutdown();
}

}  // namespace
}  // namespace mk::tpu
