// The lifecycle (initialize, shutdown, exit), the LLM key and the settings: one function each.
#include <spdlog/spdlog.h>

#include "lsp/server/language_server.h"
#include "lsp/server/uri.h"

namespace mk::server {

using nlohmann::json;
using rpc::ParamReader;
using rpc::Reply;

namespace {

// The folders of the workspace (workspaceFolders, else rootUri, else rootPath).
std::vector<std::filesystem::path> workspace_roots(const ParamReader& params) {
  std::vector<std::filesystem::path> roots;
  if (const json* folders = params.optional_raw("workspaceFolders");
      folders && folders->is_array()) {
    for (const json& f : *folders) {
      if (!f.is_object() || !f.contains("uri") || !f["uri"].is_string()) continue;
      if (auto path = path_of_uri(f["uri"].get<std::string>())) roots.push_back(*path);
    }
  }
  if (roots.empty()) {
    if (const json* root = params.optional_raw("rootUri"); root && root->is_string()) {
      if (auto path = path_of_uri(root->get<std::string>())) roots.push_back(*path);
    } else if (const json* root_path = params.optional_raw("rootPath");
               root_path && root_path->is_string()) {
      roots.emplace_back(root_path->get<std::string>());
    }
  }
  return roots;
}

}  // namespace

void LanguageServer::on_initialize(const ParamReader& params, Reply reply) {
  if (const json* caps = params.optional_raw("capabilities"))
    client_ = resolve_client_capabilities(*caps);
  if (const json* options = params.optional_raw("initializationOptions")) {
    std::vector<std::string> problems;
    apply_settings(*options, settings_, problems);
    // Shown in the editor too (window/showMessage may precede the initialize reply): a misspelled
    // setting must not be ignored without a word.
    for (const auto& p : problems) {
      spdlog::warn("initializationOptions: {}", p);
      notify("window/showMessage", {{"type", 2}, {"message", "MaxKernel: " + p}});
    }
    take_api_key(options->value("secrets", json::object()).value("llm", json::object()));
  }
  progress_.set_client_support(client_.work_done_progress);
  optimizations_.set_client(client_);
  writing_.set_client(client_);
  runs_.configure(host_settings());
  documents_.set_workspace_roots(workspace_roots(params));
  initialized_ = true;
  reply.result({{"capabilities", server_capabilities()},
                {"serverInfo", {{"name", "maxkernel-lsp"}, {"version", "0.1.0"}}}});
  // The target's facts come from a bundled table read on first use: read it while the client
  // takes in the answer, not inside the first open file's diagnostics.
  spdlog::info("target generation: {}", target().name);
}

void LanguageServer::on_initialized(const ParamReader&) {}

void LanguageServer::on_shutdown(const ParamReader&, Reply reply) {
  shutdown_requested_ = true;
  optimizations_.cancel_all();  // no new work after shutdown; exit waits for the workers
  reply.result(nullptr);
}

void LanguageServer::on_exit(const ParamReader&) {
  exit_requested_ = true;
}

// The editor's secret store hands the LLM key over here; it lives in memory only.
void LanguageServer::on_set_api_key(const ParamReader& params) {
  take_api_key(params.value());
}

void LanguageServer::take_api_key(const json& secret) {
  if (!secret.is_object() || !secret.contains("apiKey")) return;
  if (secret["apiKey"].is_string() && !secret["apiKey"].get<std::string>().empty())
    llm_api_key_ = secret["apiKey"].get<std::string>();
  else
    llm_api_key_.reset();
  spdlog::info("LLM API key {}", llm_api_key_ ? "received (kept in memory)" : "cleared");
}

void LanguageServer::on_did_change_configuration(const ParamReader& params) {
  if (client_.configuration) {
    pull_configuration();
  } else if (const json* s = params.optional_raw("settings")) {
    apply_configuration(*s);
  }
}

void LanguageServer::apply_configuration(const json& value) {
  const std::string before = settings_.target;
  std::vector<std::string> problems;
  apply_settings(value, settings_, problems);
  for (const std::string& p : problems)
    notify("window/showMessage", {{"type", 2}, {"message", "MaxKernel: " + p}});
  runs_.configure(host_settings());
  if (settings_.target != before) {
    spdlog::info("target generation: {}", settings_.target);
    for (auto& [uri, doc] : documents_.all()) {
      if (doc->python) dirty_.push_back(uri);
    }
    if (client_.inlay_hint_refresh) {
      outgoing_.send("workspace/inlayHint/refresh", nullptr, [](const json*, const rpc::Error*) {});
    }
  }
}

void LanguageServer::pull_configuration() {
  outgoing_.send(
      "workspace/configuration", {{"items", json::array({{{"section", "maxkernel"}}})}},
      [this](const json* result, const rpc::Error* error) {
        if (error) {
          spdlog::warn("workspace/configuration failed: {}", error->message);
          return;
        }
        if (result && result->is_array() && !result->empty()) apply_configuration((*result)[0]);
      },
      options_.client_request_timeout);
}

HostSettings LanguageServer::host_settings() const {
  HostSettings h;
  h.default_host = settings_.host;
  h.local_python = settings_.python;
  h.hosts = settings_.hosts;
  h.lower_on_save = settings_.lower_on_save;
  h.target = settings_.target;
  return h;
}

}  // namespace mk::server
