// The generate request names the kernel form from the host's device: a GPU host (its timing
// worker's hello says "gpu") asks for the GPU form; any other host leaves the worker's default
// (the TPU form); a form the caller names is kept. A scripted JobRunner answers the hello.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "knowledge/tpu_generations.h"
#include "service/generation.h"
#include "tpu/jobs/kernel_jobs.h"

namespace mk::service {
namespace {

using nlohmann::json;

class HelloRunner : public tpu::JobRunner {
 public:
  explicit HelloRunner(std::string platform) : platform_(std::move(platform)) {}
  tpu::WorkerReply run(tpu::Lane lane, json request, const std::function<bool()>&,
                       std::optional<std::chrono::milliseconds>, const ProgressFn&,
                       std::string*) override {
    lanes.push_back(lane);
    requests.push_back(request);
    tpu::WorkerReply r;
    r.status = tpu::WorkerReply::Status::Ok;
    r.body = {{"ok", true},
              {"class", "elementwise"},
              {"source", "def f(x):\n    return x\n"},
              {"entry", "f"}};
    return r;
  }
  tpu::WorkerReply hello() override {
    tpu::WorkerReply r;
    r.status = tpu::WorkerReply::Status::Ok;
    r.body = {{"ok", true}, {"platform", platform_}};
    return r;
  }
  std::string fingerprint() override { return platform_ + "/x/jax-0"; }
  std::string name() const override { return "local"; }
  void shutdown() override {}

  std::vector<json> requests;
  std::vector<tpu::Lane> lanes;

 private:
  std::string platform_;
};

json generate_request(HelloRunner& runner) {
  tpu::KernelJobs jobs(runner, nullptr);
  const GeneratedKernel k =
      generate_kernel(jobs, "/tmp/ref.py", {{"form", "infile"}, {"path", "/tmp/ref.py"}},
                      *knowledge::find_tpu_generation("v5e"), std::nullopt, [] { return false; });
  EXPECT_TRUE(k.ok) << k.error;
  EXPECT_EQ(runner.requests.size(), 1u);
  EXPECT_EQ(runner.lanes.at(0), tpu::Lane::Compile);
  return runner.requests.at(0);
}

TEST(GenerationForm, AGpuHostAsksForTheGpuForm) {
  HelloRunner gpu("gpu");
  const json r = generate_request(gpu);
  EXPECT_EQ(r.value("op", ""), "generate");
  EXPECT_EQ(r.value("kernel_form", ""), "gpu");
}

TEST(GenerationForm, OtherHostsLeaveTheWorkersDefault) {
  for (const char* platform : {"cpu", "tpu"}) {
    HelloRunner other(platform);
    EXPECT_FALSE(generate_request(other).contains("kernel_form")) << platform;
  }
}

TEST(GenerationForm, TheGeneratorPlansAgainstTheCoresWholeVmem) {
  // v5e: 128 MiB a core; the default scoped limit (16 MiB) is what a kernel gets without setting
  // vmem_limit_bytes, and the generated kernels always set it.
  HelloRunner cpu("cpu");
  const json r = generate_request(cpu);
  const auto* v5e = knowledge::find_tpu_generation("v5e");
  ASSERT_TRUE(v5e->vmem_bytes.has_value());
  EXPECT_EQ(r["target"].value("vmem_limit_bytes", int64_t{0}), *v5e->vmem_bytes);
  EXPECT_EQ(*v5e->vmem_bytes, int64_t{128} << 20);
}

TEST(GenerationForm, AFormTheCallerNamesIsKept) {
  HelloRunner gpu("gpu");
  tpu::KernelJobs jobs(gpu, nullptr);
  tpu::KernelRequest request;
  request.task = {{"form", "infile"}, {"path", "/tmp/ref.py"}};
  request.options["kernel_form"] = "tpu";
  const tpu::JobResult result = jobs.generate(request, [] { return false; });
  ASSERT_TRUE(result.reply.ok());
  EXPECT_EQ(gpu.requests.at(0).value("kernel_form", ""), "tpu");
}

}  // namespace
}  // namespace mk::service
