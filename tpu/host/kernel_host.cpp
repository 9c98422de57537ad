#include "tpu/host/kernel_host.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/process.hpp>
#include <chrono>

namespace mk::tpu {

namespace bp = boost::process;

namespace {
// A short reason for a worker that failed its hello ("" keeps the reply's own message).
std::string explain_start_failure(const HostKind& kind, const WorkerReply& hello) {
  const std::string text = hello.stderr_tail + hello.message;
  if (text.find("No module named 'jax'") != std::string::npos ||
      text.find("No module named jax") != std::string::npos)
    return "JAX is not installed for that python";
  // A worker that answered said what is wrong itself (e.g. JAX cannot open the device); the
  // guesses from ssh's and the shell's words are for a process that never got that far.
  if (hello.status == WorkerReply::Status::Failed) return "";
  return kind.explain_connection_failure(text);
}
}  // namespace

int automatic_timing_slots(const nlohmann::json& hello, int compile_slots) {
  if (const auto ray = hello.is_object() ? hello.find("ray") : hello.end();
      ray != hello.end() && ray->is_object()) {
    const auto devices = ray->find("devices");
    if (devices != ray->end() && devices->is_number_integer())
      return std::max(1, devices->get<int>());
  }
  if (!hello.is_object() || hello.value("platform", std::string()) != "cpu") return 1;
  int cores = compile_slots;
  if (const auto it = hello.find("cpu_count"); it != hello.end() && it->is_number_integer())
    cores = it->get<int>();
  return std::max(1, std::min(compile_slots, cores));
}

KernelHost::KernelHost(HostConfig config, WorkerBundle bundle)
    : config_(std::move(config)), bundle_(std::move(bundle)) {
  for (int i = 0; i < config_.compile_slots; ++i) slots_.push_back({Lane::Compile, false, nullptr});
  // An automatic timing lane starts with one worker; the first hello sizes it.
  timing_lane_sized_ = config_.timing_slots > 0;
  for (int i = 0; i < std::max(1, config_.timing_slots); ++i)
    slots_.push_back({Lane::Timing, false, nullptr});
}

void KernelHost::size_timing_lane_locked() {
  if (timing_lane_sized_ || !hello_) return;
  timing_lane_sized_ = true;
  const int wanted = automatic_timing_slots(hello_->body, config_.compile_slots);
  int have = 0;
  for (const Slot& s : slots_) have += s.lane == Lane::Timing ? 1 : 0;
  for (; have < wanted; ++have) slots_.push_back({Lane::Timing, false, nullptr});
  sized_timing_slots_ = have;
  spdlog::info("{}: platform {}, {} timing worker(s)", config_.name,
               hello_->body.value("platform", std::string("?")), have);
  slot_free_.notify_all();
}

int KernelHost::slots(Lane lane) {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = 0;
  for (const Slot& s : slots_) n += s.lane == lane && !s.retired ? 1 : 0;
  return n;
}

int KernelHost::max_slots(Lane lane) const {
  if (lane == Lane::Compile) return config_.compile_slots;
  if (config_.timing_slots > 0) return config_.timing_slots;
  // A Ray cluster's timing lane is as wide as its device count, known from the first hello.
  if (const int sized = sized_timing_slots_; sized > 0 && config_.kind->slots_span_machines())
    return sized;
  return std::max(1, config_.compile_slots);
}

KernelHost::~KernelHost() {
  shutdown();
}

void KernelHost::shutdown() {
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    workers = take_idle_workers_locked();
  }
  for (auto& w : workers) w->stop();
}

std::vector<std::unique_ptr<WorkerProcess>> KernelHost::take_idle_workers_locked() {
  std::vector<std::unique_ptr<WorkerProcess>> idle;
  for (Slot& s : slots_)
    if (s.worker && !s.busy) idle.push_back(std::move(s.worker));
  return idle;
}

bool KernelHost::ensure_installed(std::string& error) {
  // Only a kind with a remote shell installs: the others start their workers here (a ray
  // slot's driver ships the bundle to the cluster itself, as the job's working_dir).
  if (!config_.kind->has_remote_shell()) return true;
  std::lock_guard<std::mutex> lock(install_mutex_);
  if (installed_) return true;
  const std::string dir = installed_bundle_dir(config_, bundle_);
  const std::string part = dir + ".part";
  // One remote command: reuse the bundle if complete, else unpack the tar on stdin beside it
  // and move it into place.
  const std::string script = "if [ -f " + shell_quote(dir + "/.complete") +
                             " ]; then echo present; else rm -rf " + shell_quote(part) +
                             " && mkdir -p " + shell_quote(part) + " && tar -xf - -C " +
                             shell_quote(part) + " && touch " + shell_quote(part + "/.complete") +
                             " && rm -rf " + shell_quote(dir) + " && mv " + shell_quote(part) +
                             " " + shell_quote(dir) + " && echo installed; fi";
  const std::vector<std::string> argv =
      config_.kind->remote_shell(config_, shell_command({"sh", "-c", script}));
  try {
    // Close-on-exec pipes: a worker another thread starts meanwhile must not hold their ends.
    int fds[3][2];
    for (auto& f : fds) make_cloexec_pipe(f);
    bp::pipe tar_to_host(fds[0][0], fds[0][1]);
    bp::ipstream out(bp::pipe(fds[1][0], fds[1][1])), err(bp::pipe(fds[2][0], fds[2][1]));
    std::vector<std::string> tar_args = {"-c", "-f", "-", "-C", bundle_.directory.string()};
    tar_args.insert(tar_args.end(), bundle_.files.begin(), bundle_.files.end());
    std::unique_lock<std::mutex> spawning(spawn_mutex());
    bp::child tar(bp::search_path("tar"), bp::args = tar_args, bp::std_out > tar_to_host,
                  bp::std_err > bp::null);
    auto exe = argv[0].find('/') == std::string::npos ? bp::search_path(argv[0])
                                                      : boost::filesystem::path(argv[0]);
    bp::child remote(exe, bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()),
                     bp::std_in<tar_to_host, bp::std_out> out, bp::std_err > err);
    tar_to_host.close();  // our copy: tar's exit must end the remote side's input
    spawning.unlock();

    std::string out_text, err_text, line;
    while (std::getline(out, line)) out_text += line + "\n";
    while (std::getline(err, line)) err_text += line + "\n";
    remote.wait();
    tar.wait();
    if (remote.exit_code() != 0) {
      const std::string why = config_.kind->explain_connection_failure(err_text);
      error = "installing the worker on " + config_.name + " failed" +
              (why.empty() ? "" : ": " + why) + (err_text.empty() ? "" : "\n" + err_text);
      return false;
    }
    spdlog::info("worker bundle {} on {}: {}", bundle_.hash.substr(0, 16), config_.name,
                 out_text.find("present") != std::string::npos ? "already installed" : "installed");
  } catch (const std::exception& e) {
    error = "installing the worker on " + config_.name + " failed: " + e.what();
    return false;
  }
  installed_ = true;
  return true;
}

std::unique_ptr<WorkerProcess> KernelHost::launch(Lane lane, WorkerReply& failure) {
  failure.status = WorkerReply::Status::Unreachable;
  std::string error;
  if (!ensure_installed(error)) {
    failure.message = error;
    return nullptr;
  }
  // A remote start whose connection fails fast is tried once more: ssh's shared connection
  // (ControlMaster) can outlive its link for a moment, and a start that rides it fails with
  // "connection lost" although the host is back. A failure that took the whole connect timeout
  // is a host that is not there, and is not tried again.
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<WorkerProcess> worker;
  WorkerReply hello;
  for (int attempt = 1;; ++attempt) {
    worker = std::make_unique<WorkerProcess>(config_.kind->worker_argv(config_, bundle_, lane),
                                             "the worker on " + config_.name);
    if (!worker->start(error)) {
      failure.message = error;
      return nullptr;
    }
    // A worker is usable once it has said hello.
    hello = worker->call({{"op", "hello"}}, config_.start_timeout);
    const bool fast = std::chrono::steady_clock::now() - started <
                      std::chrono::seconds(config_.connect_timeout_s);
    if (hello.ok() || attempt == 2 || !fast || !worker->lost_ssh_connection()) break;
    spdlog::warn("{}; starting it once more", hello.message);
    worker->kill();
  }
  if (!hello.ok()) {
    const std::string why = explain_start_failure(*config_.kind, hello);
    failure.message =
        "cannot start the worker on " + config_.name + ": " + (why.empty() ? hello.message : why);
    failure.stderr_tail = hello.stderr_tail;
    worker->kill();
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Every timing actor of a Ray cluster may sit on another node: each must have the device
    // the first one had, or timings from different chips would mix in one search.
    if (hello_ && lane == Lane::Timing && config_.kind->slots_span_machines() &&
        fingerprint_of(hello.body) != fingerprint_of(hello_->body)) {
      const nlohmann::json ray = hello.body.value("ray", nlohmann::json::object());
      failure.message = "the Ray node " + ray.value("node_ip", std::string("?")) + " of " +
                        config_.name + " has " + fingerprint_of(hello.body) +
                        ", the cluster's first timing worker " + fingerprint_of(hello_->body) +
                        ": timings from different chips or JAX versions must not be mixed in "
                        "one search (docs/hosts.md)";
      worker->kill();
      return nullptr;
    }
    // Only a timing worker sees the device; a compile worker's hello says "cpu" on any host.
    if (!hello_ && lane == Lane::Timing) hello_ = hello;
    size_timing_lane_locked();
  }
  return worker;
}

WorkerReply KernelHost::run(Lane lane, nlohmann::json request,
                            const std::function<bool()>& cancelled,
                            std::optional<std::chrono::milliseconds> timeout,
                            const ProgressFn& on_progress, std::string* ran_on) {
  if (ran_on) *ran_on = config_.name;
  if (!config_.kind->slots_span_machines())
    return run_once(lane, std::move(request), cancelled, timeout, on_progress);
  // A copy: a job whose node left the cluster is sent once more, to another slot.
  WorkerReply reply = run_once(lane, request, cancelled, timeout, on_progress);
  if (!reply.host_lost()) return reply;
  spdlog::warn("{}: {}; retrying the {} once on another slot", config_.name, reply.message,
               request.value("op", std::string("job")));
  reply = run_once(lane, std::move(request), cancelled, timeout, on_progress);
  if (reply.host_lost()) reply.message += " (lost again on the retry)";
  return reply;
}

void KernelHost::retire_locked(size_t index) {
  int others = 0;
  for (size_t i = 0; i < slots_.size(); ++i)
    others += i != index && slots_[i].lane == slots_[index].lane && !slots_[i].retired ? 1 : 0;
  if (others == 0) return;
  slots_[index].retired = true;
  spdlog::warn("{}: a {} slot retired with its lost node; {} left", config_.name,
               slots_[index].lane == Lane::Compile ? "compile" : "timing", others);
}

WorkerReply KernelHost::run_once(Lane lane, nlohmann::json request,
                                 const std::function<bool()>& cancelled,
                                 std::optional<std::chrono::milliseconds> timeout,
                                 const ProgressFn& on_progress) {
  size_t index = 0;
  std::unique_ptr<WorkerProcess> worker;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      size_timing_lane_locked();
      bool found = false;
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].lane == lane && !slots_[i].busy && !slots_[i].retired) {
          index = i;
          found = true;
          break;
        }
      }
      if (found) break;
      if (cancelled && cancelled())
        return {WorkerReply::Status::Cancelled, nullptr, "cancelled while queued", ""};
      slot_free_.wait_for(lock, std::chrono::milliseconds(50));
    }
    slots_[index].busy = true;
    worker = std::move(slots_[index].worker);
  }
  WorkerReply reply;
  if (!worker || !worker->running()) worker = launch(lane, reply);
  if (worker)
    reply = worker->call(std::move(request), timeout.value_or(config_.request_timeout), cancelled,
                         on_progress);
  // Every ssh worker of a host rides one shared connection (ControlMaster): when one finds the
  // link lost, the idle ones lost it too, though their ssh may not have exited yet. They go now,
  // so the next job starts afresh instead of being sent down the dead link.
  const bool link_lost =
      worker && reply.status == WorkerReply::Status::Unreachable && worker->lost_ssh_connection();
  if (worker && reply.worker_lost()) {
    spdlog::warn("{}: {} ({}); it will be restarted", worker->description(),
                 to_string(reply.status), reply.message);
    worker.reset();
  }
  std::vector<std::unique_ptr<WorkerProcess>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slots_[index].busy = false;
    slots_[index].worker = std::move(worker);
    if (reply.host_lost()) retire_locked(index);
    if (link_lost) dropped = take_idle_workers_locked();
  }
  if (!dropped.empty())
    spdlog::warn("{}: the ssh link was lost; {} idle worker(s) dropped with it", config_.name,
                 dropped.size());
  for (auto& w : dropped) w->kill();
  slot_free_.notify_all();
  return reply;
}

WorkerReply KernelHost::hello() {
  // Threads asking together share one fetch instead of each starting a worker.
  std::lock_guard<std::mutex> fetching(hello_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (hello_) return *hello_;
  }
  // On the timing lane: the worker started for it is the one the evaluations then use.
  return run(Lane::Timing, {{"op", "hello"}});
}

std::string KernelHost::fingerprint() {
  WorkerReply h = hello();
  if (!h.ok()) return "unreachable";
  return fingerprint_of(h.body);
}

std::string fingerprint_of(const nlohmann::json& b) {
  if (!b.is_object()) return "?";
  return b.value("platform", std::string("?")) + "/" + b.value("device_kind", std::string("?")) +
         "/jax-" + b.value("jax", b.value("jax_version", std::string("?")));  // hello says "jax"
}

size_t KernelHost::live_workers() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (Slot& s : slots_) n += (s.worker && s.worker->running()) ? 1 : 0;
  return n;
}

}  // namespace mk::tpu
