// Names full of shell metacharacters never reach a shell unquoted: the quoted command, run
// through a real `sh -c`, yields exactly the original argv; the local host starts its worker
// from an argument vector with no shell at all; an ssh destination is a separate argv element.
// Every string below would create a marker file if any shell interpreted it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "tpu/host/host_config.h"
#include "tpu/host/worker_process.h"

namespace mk::tpu {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;

class ShellSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mk-shell-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    marker_ = (dir_ / "PWNED").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Strings that run `touch <marker>` (or glob, split, redirect) when a shell sees them.
  std::vector<std::string> nasty() const {
    const std::string m = marker_;
    return {"$(touch " + m + ")",
            "`touch " + m + "`",
            "a; touch " + m,
            "a && touch " + m + " || touch " + m,
            "a | touch " + m,
            "a\ntouch " + m,
            "a\rtouch " + m,
            "it's \"quoted\" 'twice'",
            "'$(touch " + m + ")'",
            "\"$(touch " + m + ")\"",
            "\\'; touch " + m + "; echo \\'",
            "space  separated\ttab",
            "*",
            "/*/*",
            "?[a-z]{b,c}",
            "~",
            "~root/x",
            "$HOME ${PATH} $0 $1 $@ $$",
            "> " + m,
            "< /dev/null",
            "#comment",
            "!event",
            "-n",
            "--",
            "",
            " ",
            "{command}",
            "caf\xc3\xa9 \xf0\x9f\x98\x80",
            "a\\b\\\\c\\",
            "%s %n",
            "x=1 touch " + m};
  }

  // Runs argv (no shell) and returns what it wrote on stdout.
  static std::string run_argv(const std::vector<std::string>& argv) {
    bp::ipstream out;
    bp::child c(bp::search_path(argv[0]),
                bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()),
                bp::std_out > out, bp::std_err > bp::null);
    std::string all((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
    c.wait();
    return all;
  }

  // The arguments a shell command line turns into, as `sh -c` parses it: printf prints each
  // argument after the first NUL-terminated.
  static std::vector<std::string> argv_after_sh(const std::string& command_line) {
    const std::string out = run_argv({"sh", "-c", command_line});
    std::vector<std::string> args;
    size_t start = 0;
    for (size_t nul; (nul = out.find('\0', start)) != std::string::npos; start = nul + 1)
      args.push_back(out.substr(start, nul - start));
    return args;
  }

  fs::path dir_;
  std::string marker_;
};

TEST_F(ShellSafetyTest, QuotedCommandLineGivesBackTheExactArgv) {
  const std::vector<std::string> args = nasty();
  std::vector<std::string> argv = {"printf", "%s\\0"};
  argv.insert(argv.end(), args.begin(), args.end());
  EXPECT_EQ(argv_after_sh(shell_command(argv)), args);
  for (const std::string& a : args) {
    EXPECT_EQ(argv_after_sh(shell_command({"printf", "%s\\0", a})), std::vector<std::string>{a})
        << "argument: " << a;
  }
  EXPECT_FALSE(fs::exists(marker_)) << "a shell ran part of an argument";
}

TEST_F(ShellSafetyTest, SshRemoteCommandIsOneQuotedArgumentAfterTheDestination) {
  HostConfig host;
  host.kind = find_host_kind("ssh");
  host.destination = "user@vm; touch " + marker_;
  host.identity_file = dir_.string() + "/key $(touch " + marker_ + ")";
  host.ssh_options = {"ProxyCommand=touch " + marker_};
  const std::vector<std::string> remote = {"python3", "-u", "worker dir/`touch " + marker_ + "`.py",
                                           "$(touch " + marker_ + ")"};
  const std::vector<std::string> argv = remote_argv(host, shell_command(remote));
  // ssh gets the destination and the identity as single arguments: no local shell splits them.
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[argv.size() - 3], "--");
  EXPECT_EQ(argv[argv.size() - 2], host.destination);
  EXPECT_NE(std::find(argv.begin(), argv.end(), host.identity_file), argv.end());
  // The remote side's shell turns the last argument back into exactly the original argv.
  std::vector<std::string> check = {"printf", "%s\\0"};
  check.insert(check.end(), remote.begin(), remote.end());
  HostConfig echo = host;
  const std::vector<std::string> echo_argv = remote_argv(echo, shell_command(check));
  EXPECT_EQ(argv_after_sh(echo_argv.back()), remote);
  EXPECT_FALSE(fs::exists(marker_));
}

TEST_F(ShellSafetyTest, CommandTemplateRunsTheQuotedCommandVerbatim) {
  const std::vector<std::string> args = nasty();
  std::vector<std::string> command = {"printf", "%s\\0"};
  command.insert(command.end(), args.begin(), args.end());
  for (const std::vector<std::string>& tmpl :
       {std::vector<std::string>{"sh", "-c", "{command}"},
        std::vector<std::string>{"sh", "-c", "cd / && {command}"},
        std::vector<std::string>{"env", "--", "sh", "-c", "exec {command}"}}) {
    HostConfig host;
    host.kind = find_host_kind("command");
    host.command_template = tmpl;
    const std::string out = run_argv(remote_argv(host, shell_command(command)));
    std::vector<std::string> got;
    size_t start = 0;
    for (size_t nul; (nul = out.find('\0', start)) != std::string::npos; start = nul + 1)
      got.push_back(out.substr(start, nul - start));
    EXPECT_EQ(got, args) << "template: " << tmpl.back();
  }
  EXPECT_FALSE(fs::exists(marker_));
}

TEST_F(ShellSafetyTest, LocalWorkerGetsItsArgvWithoutAShell) {
  // A stand-in worker that answers its first request with its own argv.
  const std::string script =
      "import json, sys\n"
      "req = json.loads(sys.stdin.readline())\n"
      "print(json.dumps({'id': req['id'], 'ok': True, 'argv': sys.argv[1:]}), flush=True)\n";
  // After `-c script` python takes everything, "-n" and "--" too, as plain arguments.
  const std::vector<std::string> args = nasty();
  std::vector<std::string> argv = {"python3", "-c", script};
  argv.insert(argv.end(), args.begin(), args.end());
  WorkerProcess worker(argv, "argv echo");
  std::string error;
  ASSERT_TRUE(worker.start(error)) << error;
  const WorkerReply reply = worker.call({{"op", "hello"}}, std::chrono::seconds(30));
  ASSERT_TRUE(reply.ok()) << reply.message << reply.stderr_tail;
  EXPECT_EQ(reply.body["argv"].get<std::vector<std::string>>(), args);
  EXPECT_FALSE(fs::exists(marker_));
}

}  // namespace
}  // namespace mk::tpu
