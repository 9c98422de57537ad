#include "llm_test_util.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace mk::llm::test {

using nlohmann::json;

json load_fixture(const std::string& provider) {
  std::ifstream in(std::string(MK_LLM_FIXTURES) + "/" + provider + ".json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::string temp_path(const std::string& name) {
  static std::atomic<int> counter{0};
  auto directory =
      std::filesystem::path(testing::TempDir()) / ("mk_llm_" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  return (directory / (std::to_string(counter++) + "_" + name)).string();
}

namespace {
json composed(const std::string& provider, const std::vector<Step>& steps) {
  json source = load_fixture(provider);
  json out = {{"format", source["format"]},
              {"provider", source["provider"]},
              {"model", source["model"]},
              {"entries", json::array()}};
  for (const Step& step : steps) {
    bool found = false;
    for (const json& entry : source["entries"]) {
      if (entry["name"] != step.name) continue;
      json copy = entry;
      if (!step.fault.is_null()) copy["fault"] = step.fault;
      out["entries"].push_back(copy);
      found = true;
    }
    if (!found) throw std::runtime_error("no entry '" + step.name + "' in " + provider + ".json");
  }
  return out;
}

ReplayServer& shared_server(const std::string& provider) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<ReplayServer>> servers;
  std::lock_guard<std::mutex> lock(mutex);
  auto& server = servers[provider];
  if (!server)
    server = std::make_unique<ReplayServer>(
        "python3", std::string(MK_LLM_FIXTURES) + "/" + provider + ".json");
  return *server;
}
}  // namespace

std::string compose_fixture(const std::string& provider, const std::vector<Step>& steps) {
  std::string path = temp_path(provider + "_fixture.json");
  std::ofstream(path) << composed(provider, steps).dump(2);
  return path;
}

namespace {
size_t collect(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

std::string curl_request(const std::string& url, const std::string* post_body) {
  CURL* easy = curl_easy_init();
  std::string body;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 5000L);
  if (post_body) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, post_body->c_str());
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  }
  CURLcode code = curl_easy_perform(easy);
  curl_slist_free_all(headers);
  curl_easy_cleanup(easy);
  if (code != CURLE_OK) throw std::runtime_error("control request failed: " + url);
  return body;
}
}  // namespace

std::string http_get(const std::string& url) {
  return curl_request(url, nullptr);
}

void http_post_json(const std::string& url, const json& body) {
  std::string text = body.dump();
  curl_request(url, &text);
}

ProviderConfig Replay::defaults() {
  ProviderConfig config;
  config.api_key = kPlantedKey;
  config.retry.max_attempts = 3;
  config.retry.base_delay = std::chrono::milliseconds(5);
  config.retry.max_delay = std::chrono::milliseconds(20);
  config.connect_timeout = std::chrono::milliseconds(2000);
  config.total_timeout = std::chrono::milliseconds(10000);
  return config;
}

Replay::Replay(const std::string& provider, const std::vector<Step>& steps,
               const ProviderConfig& settings)
    : config_(settings) {
  server_ = &shared_server(provider);
  http_post_json(server_->base_url() + "/_load", composed(provider, steps));
  json fixture = load_fixture(provider);
  config_.kind = *parse_provider_kind(provider);
  config_.model = fixture["model"].get<std::string>();
  std::string base = server_->base_url();
  config_.base_url = provider == "openai"   ? base + "/v1"
                     : provider == "gemini" ? base + "/v1beta"
                                            : base;
  client_ = make_client(config_);
}

json Replay::log() const {
  return json::parse(http_get(server_->base_url() + "/_log"));
}

void Replay::fault(const json& fault) const {
  http_post_json(server_->base_url() + "/_fault", fault);
}

ChatRequest simple_request(bool stream, const std::string& purpose) {
  ChatRequest request;
  request.messages = {{Role::System, "You are a Pallas TPU kernel expert."},
                      {Role::User, "Which block shape fits a (4096, 4096) f32 matmul on v5e?"}};
  request.max_output_tokens = 512;
  request.stream = stream;
  request.purpose = purpose;
  return request;
}

CapturedLogs::CapturedLogs() : sink_(std::make_shared<CaptureSink>()) {
  previous_ = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("capture", sink_);
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

CapturedLogs::~CapturedLogs() {
  spdlog::set_default_logger(previous_);
}

}  // namespace mk::llm::test
