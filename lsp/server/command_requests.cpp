// workspace/executeCommand: a table of command -> one small function that reads the arguments
// and starts the feature's work; plus the requests and notifications about that work (the
// sessions list, cancelling a job by its progress token).
#include <spdlog/spdlog.h>

#include <utility>

#include "lsp/server/language_server.h"

namespace mk::server {

using nlohmann::json;
using rpc::ParamReader;
using rpc::Reply;
namespace ec = rpc::error_code;

void LanguageServer::on_execute_command(const ParamReader& params, Reply reply) {
  using Command = void (LanguageServer::*)(const std::string&, const ParamReader&, Reply);
  static constexpr std::pair<const char*, Command> kCommands[] = {
      {"maxkernel.test", &LanguageServer::start_kernel_run},
      {"maxkernel.profile", &LanguageServer::start_kernel_run},
      {"maxkernel.optimizeStepByStep", &LanguageServer::start_step_by_step},
      {KernelWriting::kCommand, &LanguageServer::start_kernel_writing},
  };
  const std::string command = params.string("command");
  for (const auto& [name, handler] : kCommands)
    if (command == name) return (this->*handler)(command, params, reply);
  if (OptimizationRuns::handles(command)) return run_optimization_command(command, params, reply);
  throw rpc::RpcError(ec::kInvalidParams, "params.command: unknown command '" + command + "'");
}

void LanguageServer::start_kernel_run(const std::string& command, const ParamReader& params,
                                      Reply reply) {
  const json& args = params.raw("arguments");
  if (!args.is_array() || args.empty() || !args[0].is_object())
    params.fail("arguments", "expected [{uri, kernel}]");
  const ParamReader arg(args[0], "params.arguments[0]");
  OpenDocument* doc = documents_.find(arg.string("uri"));
  if (!doc) arg.fail("uri", "document is not open");
  doc->analyse(target());
  const int64_t index = arg.integer("kernel");
  if (index < 0) arg.fail("kernel", "must be a kernel index");
  reply.result(runs_.start(command == "maxkernel.test" ? "test" : "profile", *doc,
                           static_cast<size_t>(index), params.optional_raw("workDoneToken"),
                           target()));
}

void LanguageServer::start_step_by_step(const std::string&, const ParamReader& params,
                                        Reply reply) {
  const json& args = params.raw("arguments");
  if (!args.is_array() || args.empty())
    params.fail("arguments", "expected [{uri, kernel}] or [{session, uri}]");
  reply.result(hitl_.start(args[0]));
}

void LanguageServer::start_kernel_writing(const std::string&, const ParamReader& params,
                                          Reply reply) {
  writing_.execute(params, reply, settings_.target);
}

void LanguageServer::run_optimization_command(const std::string& command, const ParamReader& params,
                                              Reply reply) {
  optimizations_.execute(command, params, reply,
                         {host_settings(), settings_.budget, settings_.target,
                          llm_spec_of(settings_.llm), llm_api_key_, settings_.autotune_configs});
}

void LanguageServer::on_sessions(const ParamReader&, Reply reply) {
  reply.result(hitl_.sessions());
}

void LanguageServer::on_work_done_progress_cancel(const ParamReader& params) {
  const std::string token = params.raw("token").dump();
  if (const service::Job* job = workspace_.jobs().cancel_by_progress_token(token))
    spdlog::info("{} job {} cancelled by its progress token {}", job->group, job->id, token);
}

}  // namespace mk::server
