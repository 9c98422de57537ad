// One worker process on a host (started with Boost.Process), spoken to in JSON lines. A call
// waits for its response, a timeout (the worker is killed), a crash (stderr tail kept),
// malformed output (killed: the stream can no longer be trusted) or cancellation.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace mk::tpu {

struct WorkerReply {
  enum class Status { Ok, Failed, Crashed, TimedOut, Cancelled, Malformed, Unreachable };
  Status status = Status::Crashed;
  nlohmann::json body;      // the worker's response (Ok: ok=true; Failed: ok=false with "error")
  std::string message;      // what went wrong, for every status but Ok
  std::string stderr_tail;  // last lines the worker wrote to stderr

  bool ok() const { return status == Status::Ok; }
  // The worker itself is suspect after these: the pool replaces it.
  bool worker_lost() const {
    return status == Status::Crashed || status == Status::TimedOut || status == Status::Malformed ||
           status == Status::Unreachable || host_lost();
  }
  // A Ray slot's answer for a request whose node left the cluster (tpu/ray): the request never
  // finished, and is worth one more try on another slot.
  bool host_lost() const {
    return status == Status::Failed && body.is_object() && body.value("host_lost", false) == true;
  }
};
const char* to_string(WorkerReply::Status status);

// Held while starting any child process (see WorkerProcess::start).
std::mutex& spawn_mutex();
// pipe2(O_CLOEXEC): fds[0] reads, fds[1] writes; neither end leaks into processes started by
// other threads. Throws std::system_error. Use for every pipe to a child process.
void make_cloexec_pipe(int fds[2]);

// One line the worker wrote on stdout, classified.
struct WorkerLine {
  enum class Kind { Blank, Response, Event, Garbage };
  Kind kind = Kind::Blank;
  std::string key;         // Response, Event: the id as JSON text
  nlohmann::json message;  // Response, Event: the whole object
};
WorkerLine parse_worker_line(std::string_view line);

// The reply for a response object: Ok only when "ok" is the boolean true; otherwise Failed with
// the error's message (Cancelled when the call was being cancelled). Never throws, whatever
// the worker put in the object.
WorkerReply reply_from_response(nlohmann::json body, bool cancelling);

class WorkerProcess {
 public:
  WorkerProcess(std::vector<std::string> argv, std::string description);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  bool start(std::string& error);
  bool running();
  // Sends {"id", ...request} and waits. `cancelled` is polled; when it turns true the worker is
  // asked to cancel, and killed if it does not answer within a grace period.
  // Progress events the worker sends for this request ({"event": "progress", ...}) are passed to
  // `on_progress` on the calling thread.
  WorkerReply call(nlohmann::json request, std::chrono::milliseconds timeout,
                   const std::function<bool()>& cancelled = {},
                   const std::function<void(const nlohmann::json&)>& on_progress = {});
  // Asks the worker to exit, then kills it (and its process group) if it lingers.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000));
  void kill();
  std::string stderr_tail();
  const std::string& description() const { return description_; }
  // Whether the worker ran through ssh and ssh reported a connection failure (exit 255).
  bool lost_ssh_connection();
  int pid() const;

 private:
  struct Pipes;
  void read_stdout();
  void read_stderr();
  void stop_readers();
  bool send_line(const std::string& line);
  std::string exit_description();
  // The reply for a worker whose output ended: Crashed with how it exited, or Unreachable
  // ("connection lost") when its ssh connection failed.
  void describe_exit(WorkerReply& reply, const std::string& suffix);

  std::vector<std::string> argv_;
  std::string description_;
  std::unique_ptr<Pipes> pipes_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, nlohmann::json> responses_;            // by id.dump()
  std::map<std::string, std::vector<nlohmann::json>> events_;  // progress events by id.dump()
  bool stdout_closed_ = false;
  std::string malformed_;  // what the first garbage on stdout was ("wrote ...")
  std::string stderr_tail_;
  std::thread stdout_thread_, stderr_thread_;
  int64_t next_id_ = 1;
};

}  // namespace mk::tpu
