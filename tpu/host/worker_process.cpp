#include "tpu/host/worker_process.h"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <thread>

#include <boost/process.hpp>

namespace mk::tpu {

namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

namespace {
constexpr size_t kStderrTailBytes = 8192;
constexpr auto kCancelGrace = std::chrono::milliseconds(3000);
constexpr auto kPoll = std::chrono::milliseconds(20);
constexpr auto kExitPoll = std::chrono::milliseconds(5);
// A longer line is garbage: the stream is not trusted further and memory stays bounded.
constexpr size_t kMaxLineBytes = 64u << 20;
constexpr size_t kOverlongPrefixBytes = 100;

// Both ends close on exec. A pipe made with plain pipe(2) is inherited by every process any
// thread starts, and a stray copy of a worker's stdout write end keeps its reader from ever
// seeing end of file. O_CLOEXEC at creation leaves no window; the child still gets its own end
// because dup2 onto 0/1/2 clears the flag on the copy.
bp::pipe cloexec_pipe() {
  int fds[2];
  make_cloexec_pipe(fds);
  return bp::pipe(fds[0], fds[1]);
}

// Calls `on_line` for each line read from `fd` (without its newline) until end of file, or
// until `wake_fd` becomes readable: the owner's way to stop a reader whatever else holds the
// pipe open. A line longer than kMaxLineBytes is passed once, cut to its first bytes and flagged
// `overlong`; the rest of it up to its newline is read and dropped, so the buffer never holds
// more than kMaxLineBytes plus one chunk, however long the line (or an endless one) is.
void read_lines(int fd, int wake_fd,
                const std::function<void(std::string_view, bool overlong)>& on_line) {
  std::string pending;
  size_t scanned = 0;     // bytes of `pending` already known to hold no newline
  bool skipping = false;  // inside an overlong line: drop bytes up to the next newline
  char chunk[1 << 16];
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) return;  // told to stop
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    std::string_view data(chunk, static_cast<size_t>(got));
    if (skipping) {
      const size_t nl = data.find('\n');
      if (nl == std::string_view::npos) continue;
      skipping = false;
      data.remove_prefix(nl + 1);
    }
    pending.append(data);
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', std::max(start, scanned))) != std::string::npos;
         start = nl + 1)
      on_line(std::string_view(pending).substr(start, nl - start), false);
    pending.erase(0, start);
    scanned = pending.size();
    if (pending.size() > kMaxLineBytes) {
      on_line(std::string_view(pending).substr(0, kOverlongPrefixBytes), true);
      pending = std::string();  // give the memory back, not just the length
      scanned = 0;
      skipping = true;
    }
  }
  if (!pending.empty() && !skipping) on_line(pending, false);  // a last line without its newline
}

// The start of a garbage line, for messages: bytes that are not printable ASCII become '?', so
// the text is valid UTF-8 wherever it goes (JSON output, logs).
std::string printable_prefix(std::string_view line, size_t limit) {
  std::string out(line.substr(0, limit));
  for (char& c : out)
    if (c < 0x20 || c > 0x7e) c = '?';
  return out;
}

}  // namespace

void make_cloexec_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
}

WorkerLine parse_worker_line(std::string_view line) {
  WorkerLine out;
  if (line.empty() || (line.size() == 1 && line[0] == '\r')) return out;
  nlohmann::json message = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object() || !message.contains("id")) {
    out.kind = WorkerLine::Kind::Garbage;
    return out;
  }
  out.key = message["id"].dump();
  out.kind = message.contains("event") ? WorkerLine::Kind::Event : WorkerLine::Kind::Response;
  out.message = std::move(message);
  return out;
}

WorkerReply reply_from_response(nlohmann::json body, bool cancelling) {
  WorkerReply reply;
  const auto ok_field = body.find("ok");
  const bool ok = ok_field != body.end() && ok_field->is_boolean() && ok_field->get<bool>();
  reply.status = cancelling ? WorkerReply::Status::Cancelled
                 : ok       ? WorkerReply::Status::Ok
                            : WorkerReply::Status::Failed;
  if (!ok) {
    const auto error = body.find("error");
    if (error != body.end() && error->is_object()) {
      const auto message = error->find("message");
      if (message != error->end() && message->is_string())
        reply.message = message->get<std::string>();
    } else if (error != body.end() && error->is_string()) {
      reply.message = error->get<std::string>();
    }
    if (reply.message.empty() && !cancelling)
      reply.message = ok_field == body.end() || ok_field->is_boolean()
                          ? "the worker reported a failure without a message"
                          : "the worker's response has a non-boolean \"ok\"";
  }
  if (cancelling && reply.message.empty()) reply.message = "cancelled";
  reply.body = std::move(body);
  return reply;
}

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
  bp::opstream in{cloexec_pipe()};
  bp::pipe out = cloexec_pipe();
  bp::pipe err = cloexec_pipe();
  bp::pipe wake = cloexec_pipe();  // written once to stop both readers
  bp::group group;
  bp::child child;
};

WorkerProcess::WorkerProcess(std::vector<std::string> argv, std::string description)
    : argv_(std::move(argv)), description_(std::move(description)) {}

WorkerProcess::~WorkerProcess() {
  if (pipes_) {
    kill();
    // The process is gone, but a descendant that left its group could still hold our pipes:
    // stop the readers instead of waiting for an end of file that might never come.
    stop_readers();
  }
  if (stdout_thread_.joinable()) stdout_thread_.join();
  if (stderr_thread_.joinable()) stderr_thread_.join();
}

void WorkerProcess::stop_readers() {
  const char byte = 0;
  while (::write(pipes_->wake.native_sink(), &byte, 1) < 0 && errno == EINTR) {
  }
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
    // The pipes close on exec (see cloexec_pipe), so no other child inherits them; spawns are
    // still serialised with KernelHost's installer, which shares this lock.
    std::lock_guard<std::mutex> spawning(spawn_mutex());
    pipes_->child = bp::child(exe, bp::args = args, bp::std_in<pipes_->in, bp::std_out> pipes_->out,
                              bp::std_err > pipes_->err, pipes_->group);

  } catch (const std::exception& e) {
    // Name the program: "execve failed" alone does not say which path is wrong.
    error = "cannot start " + description_ + " (" + exe.string() + "): " + e.what();
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
  read_lines(pipes_->out.native_source(), pipes_->wake.native_source(),
             [this](std::string_view line, bool overlong) {
               if (overlong) {
                 std::lock_guard<std::mutex> lock(mutex_);
                 if (malformed_.empty())
                   malformed_ = "wrote garbage output: a line over " +
                                std::to_string(kMaxLineBytes >> 20) +
                                " MiB is not a protocol message (it starts: " +
                                printable_prefix(line, kOverlongPrefixBytes) + ")";
                 changed_.notify_all();
                 return;
               }
               WorkerLine parsed = parse_worker_line(line);
               if (parsed.kind == WorkerLine::Kind::Blank) return;
               std::lock_guard<std::mutex> lock(mutex_);
               if (parsed.kind == WorkerLine::Kind::Garbage) {
                 if (malformed_.empty())
                   malformed_ = "wrote something that is not a protocol message: " +
                                printable_prefix(line, 200);
               } else if (parsed.kind == WorkerLine::Kind::Event) {
                 events_[std::move(parsed.key)].push_back(std::move(parsed.message));
               } else {
                 responses_[std::move(parsed.key)] = std::move(parsed.message);
               }
               changed_.notify_all();
             });
  std::lock_guard<std::mutex> lock(mutex_);
  stdout_closed_ = true;
  changed_.notify_all();
}

void WorkerProcess::read_stderr() {
  read_lines(pipes_->err.native_source(), pipes_->wake.native_source(),
             [this](std::string_view line, bool overlong) {
               std::lock_guard<std::mutex> lock(mutex_);
               stderr_tail_ += line;
               stderr_tail_ += overlong ? " [... a line over the size cap, dropped]\n" : "\n";
               if (stderr_tail_.size() > kStderrTailBytes)
                 stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
             });
}

namespace {
// Waits up to `limit` for the child to exit, polling waitpid(WNOHANG) through child::running.
// Not child::wait_for: in Boost.Process 1.74 it swaps the process-wide SIGCHLD handler and is not
// thread-safe; two threads waiting at once can leave a handler that calls itself, and a later
// wait spins forever (boostorg/process#347; seen under bench/load with four jobs).
bool wait_for_exit(bp::child& child, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  std::error_code ec;
  while (child.running(ec)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kExitPoll);
  }
  return true;
}
}  // namespace

std::string WorkerProcess::stderr_tail() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stderr_tail_;
}

bool WorkerProcess::send_line(const std::string& line) {
  if (!pipes_) return false;
  // Writing to a worker that has exited raises SIGPIPE, which ends any program that has not
  // ignored it (a library must not rely on that): block it in this thread for the write, and
  // take back the one the failed write left pending.
  sigset_t sigpipe;
  sigset_t previous;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &sigpipe, &previous);
  pipes_->in << line << '\n';
  pipes_->in.flush();
  const bool written = static_cast<bool>(pipes_->in);
  // The worker's stdin is gone for good: close our end, or the stream would write the line it
  // still buffers again when it is destroyed, on a thread where SIGPIPE is not blocked.
  if (!written) pipes_->in.pipe().close();
  if (!written && !sigismember(&previous, SIGPIPE)) {
    const timespec no_wait{0, 0};
    while (sigtimedwait(&sigpipe, nullptr, &no_wait) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return written;
}

std::string WorkerProcess::exit_description() {
  if (!pipes_) return "not started";
  if (!wait_for_exit(pipes_->child, std::chrono::milliseconds(500))) return "stopped answering";
  const int native = pipes_->child.native_exit_code();
  if (WIFSIGNALED(native)) return "was killed by signal " + std::to_string(WTERMSIG(native));
  return "exited with code " + std::to_string(pipes_->child.exit_code());
}

bool WorkerProcess::lost_ssh_connection() {
  // ssh exits with 255 when the connection itself fails (the remote command's own status is
  // passed through otherwise). Only asked once the process has exited.
  constexpr int kSshConnectionError = 255;
  if (!pipes_ || argv_.empty() || std::filesystem::path(argv_[0]).filename() != "ssh") return false;
  std::error_code ec;
  if (pipes_->child.running(ec)) return false;
  const int native = pipes_->child.native_exit_code();
  return WIFEXITED(native) && WEXITSTATUS(native) == kSshConnectionError;
}

void WorkerProcess::describe_exit(WorkerReply& reply, const std::string& suffix) {
  const std::string how = exit_description();
  if (lost_ssh_connection()) {
    // The link dropped or the host's sshd went away: not a crash of the worker.
    reply.status = WorkerReply::Status::Unreachable;
    reply.message = description_ +
                    ": connection lost (ssh exited with code 255: the link dropped or sshd on "
                    "the host went away)";
  } else {
    reply.status = WorkerReply::Status::Crashed;
    reply.message = description_ + " " + how + suffix;
  }
  reply.stderr_tail = stderr_tail();
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
    describe_exit(reply, " (its input is closed)");
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
      nlohmann::json body = std::move(it->second);
      responses_.erase(it);
      return reply_from_response(std::move(body), cancel_deadline.has_value());
    }
    if (!malformed_.empty()) {
      reply.status = WorkerReply::Status::Malformed;
      reply.message = description_ + " " + malformed_;
      lock.unlock();
      kill();
      reply.stderr_tail = stderr_tail();
      return reply;
    }
    if (stdout_closed_) {
      lock.unlock();
      describe_exit(reply, "");
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
  wait_for_exit(pipes_->child, grace);
  kill();
}

void WorkerProcess::kill() {
  if (!pipes_) return;
  std::error_code ec;
  if (pipes_->child.running(ec)) {
    // SIGTERM first so the worker can remove its scratch directory; SIGKILL if it lingers.
    ::killpg(pipes_->group.native_handle(), SIGTERM);
    if (!wait_for_exit(pipes_->child, std::chrono::milliseconds(1000))) {
      pipes_->group.terminate(ec);
    }
  }
  pipes_->child.wait(ec);
}

}  // namespace mk::tpu
