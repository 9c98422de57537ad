// WorkerProcess's pipes and teardown: no other child inherits a worker's pipe ends, and
// destroying a worker returns promptly even when a descendant that left its process group still
// holds the worker's stdout (the CI hang of PoolSpreadsConcurrentJobsOverHosts).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tpu/host/worker_process.h"

extern char** environ;

namespace mk::tpu {
namespace {

namespace fs = std::filesystem;

std::string fd_target(int pid, int fd) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd), ec)
      .string();
}

// The pipe inodes ("pipe:[123]") among a process's open file descriptors.
std::set<std::string> pipes_of(int pid) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const std::string target = fs::read_symlink(e.path(), ec).string();
    if (!ec && target.starts_with("pipe:")) out.insert(target);
  }
  return out;
}

TEST(WorkerProcessTest, OtherChildrenDoNotInheritTheWorkerPipes) {
  WorkerProcess worker({"cat"}, "cat");
  std::string error;
  ASSERT_TRUE(worker.start(error)) << error;
  // The worker's stdin, stdout and stderr: the three pipes whose other ends we hold.
  const std::set<std::string> worker_pipes = {
      fd_target(worker.pid(), 0), fd_target(worker.pid(), 1), fd_target(worker.pid(), 2)};
  ASSERT_EQ(worker_pipes.size(), 3u);
  for (const std::string& p : worker_pipes) ASSERT_TRUE(p.starts_with("pipe:")) << p;

  // Another part of the program starts a process without the spawn lock, as a library might.
  pid_t other = 0;
  char sleep_path[] = "/bin/sleep";
  char seconds[] = "60";
  char* argv[] = {sleep_path, seconds, nullptr};
  ASSERT_EQ(::posix_spawn(&other, sleep_path, nullptr, nullptr, argv, environ), 0);
  std::set<std::string> leaked;
  for (const std::string& p : pipes_of(other))
    if (worker_pipes.count(p)) leaked.insert(p);
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
  EXPECT_TRUE(leaked.empty()) << "the other child holds " << leaked.size()
                              << " of the worker's pipe ends";
}

TEST(WorkerProcessTest, DestructorReturnsWhileAnEscapedDescendantHoldsStdout) {
  // The worker starts a grandchild in a new session (out of the group kill() ends) that
  // inherits its stdout, tells us its pid, then waits for input.
  const std::string script =
      "import json, subprocess, sys\n"
      "p = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
      "req = json.loads(sys.stdin.readline())\n"
      "print(json.dumps({'id': req['id'], 'ok': True, 'pid': p.pid}), flush=True)\n"
      "sys.stdin.read()\n";
  auto worker = std::make_unique<WorkerProcess>(std::vector<std::string>{"python3", "-c", script},
                                                "escaping worker");
  std::string error;
  ASSERT_TRUE(worker->start(error)) << error;
  const WorkerReply reply = worker->call({{"op", "hello"}}, std::chrono::seconds(30));
  ASSERT_TRUE(reply.ok()) << reply.message << reply.stderr_tail;
  const int grandchild = reply.body.at("pid").get<int>();

  const auto start = std::chrono::steady_clock::now();
  worker.reset();
  const auto took = std::chrono::steady_clock::now() - start;
  const bool grandchild_alive = ::kill(grandchild, 0) == 0;
  ::kill(grandchild, SIGKILL);
  EXPECT_TRUE(grandchild_alive) << "the test did not hold the pipe open";
  // kill() waits up to 1 s for SIGTERM; a join on the reader would wait the full 60 s.
  EXPECT_LT(took, std::chrono::seconds(10));
}

// Found while writing fuzz/worker_reply_fuzz.cpp: `"ok": 1` or `"error": "text"` made call()
// throw nlohmann type errors out of a background job.
TEST(WorkerReplyTest, ResponsesOfTheWrongTypesGiveAFailedReplyNotAnException) {
  using nlohmann::json;
  const WorkerReply numeric_ok = reply_from_response(json{{"id", "c1"}, {"ok", 1}}, false);
  EXPECT_EQ(numeric_ok.status, WorkerReply::Status::Failed);
  EXPECT_NE(numeric_ok.message.find("non-boolean"), std::string::npos) << numeric_ok.message;

  const WorkerReply text_error =
      reply_from_response(json{{"id", "c1"}, {"ok", false}, {"error", "disk full"}}, false);
  EXPECT_EQ(text_error.status, WorkerReply::Status::Failed);
  EXPECT_EQ(text_error.message, "disk full");

  const WorkerReply odd_message =
      reply_from_response(json{{"id", "c1"}, {"ok", false}, {"error", {{"message", 42}}}}, false);
  EXPECT_EQ(odd_message.status, WorkerReply::Status::Failed);
  EXPECT_FALSE(odd_message.message.empty());

  const WorkerReply good =
      reply_from_response(json{{"id", "c1"}, {"ok", true}, {"lowered", true}}, false);
  EXPECT_TRUE(good.ok());
  EXPECT_TRUE(good.body.value("lowered", false));

  const WorkerReply cancelled = reply_from_response(json{{"id", "c1"}, {"ok", true}}, true);
  EXPECT_EQ(cancelled.status, WorkerReply::Status::Cancelled);
}

TEST(WorkerReplyTest, LinesAreClassified) {
  EXPECT_EQ(parse_worker_line("").kind, WorkerLine::Kind::Blank);
  EXPECT_EQ(parse_worker_line("Traceback (most recent call last):").kind,
            WorkerLine::Kind::Garbage);
  EXPECT_EQ(parse_worker_line("[1, 2]").kind, WorkerLine::Kind::Garbage);
  EXPECT_EQ(parse_worker_line(R"({"ok": true})").kind, WorkerLine::Kind::Garbage);  // no id
  const WorkerLine event = parse_worker_line(R"({"id": "c2", "event": "progress"})");
  EXPECT_EQ(event.kind, WorkerLine::Kind::Event);
  EXPECT_EQ(event.key, "\"c2\"");
  const WorkerLine response = parse_worker_line("{\"id\": 7, \"ok\": true}\r");
  EXPECT_EQ(response.kind, WorkerLine::Kind::Response);
  EXPECT_EQ(response.key, "7");
}

}  // namespace
}  // namespace mk::tpu
