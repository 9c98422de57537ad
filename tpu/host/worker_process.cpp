#include "tpu/host/worker_process.h"

#include <spdlog/spdlog.h>

#include <signal.h>
#include <sys/wait.h>

#include <boost/process.hpp>

namespace mk::tpu {

namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

namespace {
constexpr size_t kStderrTailBytes = 8192;
constexpr auto kCancelGrace = std::chrono::milliseconds(3000);
constexpr auto kPoll = std::chrono::milliseconds(20);
}  // namespace

std::mutex& spawn_mutex() {
  static std::mutex m;
  return m;
}

const char* to_string(WorkerReply::Status status) {

  switch (status) {
    case WorkerReply::Status::Ok:
      return "ok";
    case WorkerReply::Status::Failed:
      return "failed";
    case WorkerReply::Status::Crashed:
      return "crashed";
    case WorkerReply::Status::TimedOut:
      return "timed out";
    case WorkerReply::Status::Cancelled:
      return "cancelled";
    case WorkerReply::Status::Malformed:
      return "malformed output";
    case WorkerReply::Status::Unreachable:
      return "unreachable";
  }
  return "?";
}

struct WorkerProcess::Pipes {
  bp::opstream in;
  bp::ipstream out;
  bp::ipstream err;
  bp::group group;
  bp::child child;
};

WorkerProcess::WorkerProcess(std::vector<std::string> argv, std::string description)
    : argv_(std::move(argv)), description_(std::move(description)) {}

WorkerProcess::~WorkerProcess() {
  if (pipes_) kill();
  if (stdout_thread_.joinable()) stdout_thread_.join();
  if (stderr_thread_.joinable()) stderr_thread_.join();
}

bool WorkerProcess::start(std::string& error) {
  if (argv_.empty()) {
    error = "empty command";
    return false;
  }
  auto exe = argv_[0].find('/') == std::string::npos ? bp::search_path(argv_[0])
                                                     : boost::filesystem::path(argv_[0]);
  if (exe.empty()) {
    error = "cannot find '" + argv_[0] + "' on PATH";
    return false;
  }
  std::vector<std::string> args(argv_.begin() + 1, argv_.end());
  try {
    pipes_ = std::make_unique<Pipes>();
    // One spawn at a time: a child forked while another spawn is half done would inherit that
    // child's pipe ends, and the other worker's readers would never see end of file.
    std::lock_guard<std::mutex> spawning(spawn_mutex());
    pipes_->child = bp::child(exe, bp::args = args, bp::std_in<pipes_->in, bp::std_out> pipes_->out,
                              bp::std_err > pipes_->err, pipes_->group);


  } catch (const std::exception& e) {
    error = "cannot start " + description_ + ": " + e.what();
    pipes_.reset();
    return false;
  }
  stdout_thread_ = std::thread([this] { read_stdout(); });
  stderr_thread_ = std::thread([this] { read_stderr(); });
  spdlog::debug("started {} (pid {})", description_, pid());
  return true;
}

int WorkerProcess::pid() const {
  return pipes_ ? static_cast<int>(pipes_->child.id()) : -1;
}

bool WorkerProcess::running() {
  if (!pipes_) return false;
  std::error_code ec;
  return pipes_->child.running(ec);
}

void WorkerProcess::read_stdout() {
  std::string line;
  while (std::getline(pipes_->out, line)) {
    if (line.empty()) continue;
    nlohmann::json message;
    try {
      message = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      message = nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!message.is_object() || !message.contains("id")) {
      if (malformed_.empty()) malformed_ = line.substr(0, 200);
    } else {
      // Key first: json's by-value operator= would move `message` before the key is read.
      std::string key = message["id"].dump();
      if (message.contains("event")) {
        events_[std::move(key)].push_back(std::move(message));
      } else {
        responses_[std::move(key)] = std::move(message);
      }
    }
    changed_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stdout_closed_ = true;
  changed_.notify_all();
}

void WorkerProcess::read_stderr() {
  std::string line;
  while (std::getline(pipes_->err, line)) {
    std::lock_guard<std::mutex> lock(mutex_);
    stderr_tail_ += line;
    stderr_tail_ += '\n';
    if (stderr_tail_.size() > kStderrTailBytes)
      stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
  }
}

std::string WorkerProcess::stderr_tail() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stderr_tail_;
}

bool WorkerProcess::send_line(const std::string& line) {
  if (!pipes_) return false;
  pipes_->in << line << '\n';
  pipes_->in.flush();
  return static_cast<bool>(pipes_->in);
}

std::string WorkerProcess::exit_description() {
  if (!pipes_) return "not started";
  std::error_code ec;
  pipes_->child.wait_for(std::chrono::milliseconds(500), ec);
  if (pipes_->child.running(ec)) return "stopped answering";
  const int native = pipes_->child.native_exit_code();
  if (WIFSIGNALED(native)) return "was killed by signal " + std::to_string(WTERMSIG(native));
  return "exited with code " + std::to_string(pipes_->child.exit_code());
}

WorkerReply WorkerProcess::call(nlohmann::json request, std::chrono::milliseconds timeout,
                                const std::function<bool()>& cancelled,
                                const std::function<void(const nlohmann::json&)>& on_progress) {
  WorkerReply reply;
  if (!pipes_) {
    reply.status = WorkerReply::Status::Unreachable;
    reply.message = description_ + " is not running";
    return reply;
  }
  const nlohmann::json id = "c" + std::to_string(next_id_++);
  const std::string key = id.dump();
  request["id"] = id;
  if (!send_line(request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))) {
    reply.status = WorkerReply::Status::Crashed;
    reply.message = description_ + " " + exit_description() + " (its input is closed)";
    reply.stderr_tail = stderr_tail();
    return reply;
  }
  const auto deadline = Clock::now() + timeout;
  std::optional<Clock::time_point> cancel_deadline;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (auto ev = events_.find(key); ev != events_.end()) {
      std::vector<nlohmann::json> pending = std::move(ev->second);
      events_.erase(ev);
      if (on_progress) {
        lock.unlock();
        for (const auto& e : pending) on_progress(e);
        lock.lock();
      }
      continue;
    }
    if (auto it = responses_.find(key); it != responses_.end()) {
      reply.body = std::move(it->second);
      responses_.erase(it);
      const bool ok = reply.body.value("ok", false);
      reply.status = cancel_deadline ? WorkerReply::Status::Cancelled
                     : ok            ? WorkerReply::Status::Ok
                                     : WorkerReply::Status::Failed;
      if (!ok && reply.body.contains("error"))
        reply.message = reply.body["error"].value("message", std::string());
      if (cancel_deadline && reply.message.empty()) reply.message = "cancelled";
      return reply;
    }
    if (!malformed_.empty()) {
      reply.status = WorkerReply::Status::Malformed;
      reply.message =
          description_ + " wrote something that is not a protocol message: " + malformed_;
      lock.unlock();
      kill();
      reply.stderr_tail = stderr_tail();
      return reply;
    }
    if (stdout_closed_) {
      lock.unlock();
      reply.status = WorkerReply::Status::Crashed;
      reply.message = description_ + " " + exit_description();
      reply.stderr_tail = stderr_tail();
      return reply;
    }
    const auto now = Clock::now();
    if (cancel_deadline && now >= *cancel_deadline) {
      lock.unlock();
      kill();
      reply.status = WorkerReply::Status::Cancelled;
      reply.message = "cancelled; the worker did not stop in time and was killed";
      reply.stderr_tail = stderr_tail();
      return reply;
    }
    if (!cancel_deadline && now >= deadline) {
      lock.unlock();
      kill();
      reply.status = WorkerReply::Status::TimedOut;
      reply.message = description_ + " did not answer " +
                      request.value("op", std::string("a request")) + " within " +
                      std::to_string(timeout.count() / 1000.0).substr(0, 5) + " s and was killed";
      reply.stderr_tail = stderr_tail();
      return reply;
    }
    if (!cancel_deadline && cancelled && cancelled()) {
      cancel_deadline = now + kCancelGrace;
      lock.unlock();
      send_line(nlohmann::json{
          {"id", "cancel-" + id.get<std::string>()}, {"op", "cancel"}, {"target_id", id}}
                    .dump());
      lock.lock();
      continue;
    }
    changed_.wait_for(lock, kPoll);
  }
}

void WorkerProcess::stop(std::chrono::milliseconds grace) {
  if (!pipes_) return;
  send_line(R"({"id": "shutdown", "op": "shutdown"})");
  pipes_->in.pipe().close();
  std::error_code ec;
  pipes_->child.wait_for(grace, ec);
  kill();
}

void WorkerProcess::kill() {
  if (!pipes_) return;
  std::error_code ec;
  if (pipes_->child.running(ec)) {
    // SIGTERM first so the worker can remove its scratch directory; SIGKILL if it lingers.
    ::killpg(pipes_->group.native_handle(), SIGTERM);
    if (!pipes_->child.wait_for(std::chrono::milliseconds(1000), ec) || pipes_->child.running(ec)) {
      pipes_->group.terminate(ec);
    }
  }
  pipes_->child.wait(ec);
}

}  // namespace mk::tpu
