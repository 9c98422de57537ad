#include "agents/llm/replay_launcher.h"

#include <spdlog/spdlog.h>

#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <boost/process.hpp>

#include "agents/llm/llm_client.h"

namespace mk::llm {

extern const char* const kReplayServerScript;

namespace bp = boost::process;

struct ReplayServer::Process {
  bp::ipstream out;
  bp::child child;
  std::thread reader;
  std::mutex mutex;
  std::condition_variable changed;
  int port = 0;
  bool closed = false;
};

std::string ReplayServer::script_path() {
  static const std::string path = [] {
    auto directory =
        std::filesystem::temp_directory_path() / ("maxkernel-replay-" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory);
    auto file = directory / "replay_server.py";
    std::ofstream(file, std::ios::trunc) << kReplayServerScript;
    return file.string();
  }();
  return path;
}

ReplayServer::ReplayServer(const std::string& python, const std::string& fixture_path,
                           std::chrono::milliseconds timeout) {
  if (!std::filesystem::exists(fixture_path))
    throw LlmError(ErrorKind::Config, "replay fixture not found: " + fixture_path);
  auto exe = python.find('/') == std::string::npos ? bp::search_path(python)
                                                   : boost::filesystem::path(python);
  if (exe.empty())
    throw LlmError(ErrorKind::Config, "cannot find '" + python + "' to run the replay server");
  process_ = std::make_unique<Process>();
  try {
    // stderr is inherited: the server's request log lines join ours.
    process_->child = bp::child(exe, bp::args = {script_path(), fixture_path},
                                bp::std_out > process_->out, bp::std_in.close());
  } catch (const std::exception& e) {
    process_.reset();
    throw LlmError(ErrorKind::Config, std::string("cannot start the replay server: ") + e.what());
  }
  Process* process = process_.get();
  process_->reader = std::thread([process] {
    std::string line;
    while (std::getline(process->out, line)) {
      if (line.rfind("PORT ", 0) == 0) {
        std::lock_guard<std::mutex> lock(process->mutex);
        process->port = std::atoi(line.c_str() + 5);
        process->changed.notify_all();
      }
    }
    std::lock_guard<std::mutex> lock(process->mutex);
    process->closed = true;
    process->changed.notify_all();
  });
  std::unique_lock<std::mutex> lock(process_->mutex);
  process_->changed.wait_for(lock, timeout, [&] { return process_->port > 0 || process_->closed; });
  port_ = process_->port;
  lock.unlock();
  if (port_ <= 0) {
    stop();
    throw LlmError(ErrorKind::Config, "the replay server for " + fixture_path +
                                          " did not report a port (see its messages above)");
  }
  spdlog::debug("replay server for {} on port {}", fixture_path, port_);
}

ReplayServer::~ReplayServer() {
  stop();
}

std::string ReplayServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void ReplayServer::stop() {
  if (!process_) return;
  std::error_code error;
  if (process_->child.running(error)) {
    ::kill(process_->child.id(), SIGTERM);  // lets it close its sockets; SIGKILL if it lingers
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (process_->child.running(error) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (process_->child.running(error)) process_->child.terminate(error);
  }
  process_->child.wait(error);
  if (process_->reader.joinable()) process_->reader.join();
  process_.reset();
}

}  // namespace mk::llm
