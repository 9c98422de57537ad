// The workspace both front ends hold: each table set of the store file opened once and shared,
// a failed cache open tried once, warm host pools shared per host choice (and distinct across
// choices), and the job table's cancel by progress token. Pools are built, never started: no
// worker runs here.
#include "service/workspace.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

namespace mk::service {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("mk-workspace-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(Workspace, OpensEachPartOfTheStoreFileOnceAndSharesIt) {
  const auto dir = fresh_dir("store");
  Workspace ws(dir / "store.sqlite");
  EXPECT_EQ(ws.store_path(), dir / "store.sqlite");
  const auto runs = ws.runs();
  const auto sessions = ws.sessions();
  const auto cache = ws.cache();
  ASSERT_TRUE(runs && sessions && cache);
  EXPECT_EQ(ws.runs(), runs);  // the same connection for every caller
  EXPECT_EQ(ws.sessions(), sessions);
  EXPECT_EQ(ws.cache(), cache);
  EXPECT_EQ(cache->path(), dir / "store.sqlite");
  EXPECT_TRUE(std::filesystem::exists(dir / "store.sqlite"));
  std::filesystem::remove_all(dir);
}

TEST(Workspace, AStoreThatCannotOpenFailsRunsEachTimeAndTheCacheOnce) {
  const auto dir = fresh_dir("blocked");
  std::ofstream(dir / "not-a-folder") << "x";  // the store's folder is a file: no open works
  Workspace ws(dir / "not-a-folder" / "store.sqlite");
  EXPECT_THROW(ws.runs(), std::runtime_error);
  EXPECT_THROW(ws.runs(), std::runtime_error);  // tried again, not remembered as open
  EXPECT_THROW(ws.sessions(), std::runtime_error);
  std::string why;
  EXPECT_EQ(ws.cache(&why), nullptr);
  EXPECT_NE(why.find("not-a-folder"), std::string::npos) << why;
  std::string again;
  EXPECT_EQ(ws.cache(&again), nullptr);
  EXPECT_EQ(again, why);  // the first reason, kept
  std::filesystem::remove_all(dir);
}

TEST(Workspace, OneWarmPoolPerHostChoice) {
  const auto dir = fresh_dir("pools");
  Workspace ws(dir / "store.sqlite");
  HostChoice local;
  HostChoice other_python;
  other_python.local_python = "/nonexistent/python3";
  std::string error;
  const auto a = ws.warm_hosts(local, error);
  ASSERT_TRUE(a) << error;
  const auto b = ws.warm_hosts(local, error);
  EXPECT_EQ(a, b);  // two callers with the same choice share the pool
  const auto c = ws.warm_hosts(other_python, error);
  ASSERT_TRUE(c) << error;
  EXPECT_NE(a, c);
  EXPECT_EQ(ws.warm_pools(), 2u);
  EXPECT_EQ(ws.warm_hosts(other_python, error), c);

  HostChoice unknown;
  unknown.names = {"nowhere"};
  error.clear();
  EXPECT_EQ(ws.warm_hosts(unknown, error), nullptr);
  EXPECT_NE(error.find("nowhere"), std::string::npos) << error;
  EXPECT_EQ(ws.warm_pools(), 2u);  // a failed choice is not kept

  ws.retire_hosts();
  EXPECT_EQ(ws.warm_pools(), 0u);
  const auto d = ws.warm_hosts(local, error);
  ASSERT_TRUE(d) << error;
  EXPECT_NE(d, a);                           // a fresh pool after the settings changed
  EXPECT_NE(ws.own_hosts(local, error), d);  // a search's own pool is never the warm one
  std::filesystem::remove_all(dir);
}

TEST(Workspace, AJobIsCancelledByItsProgressTokenAndCountedByItsGroup) {
  const auto dir = fresh_dir("jobs");
  Workspace ws(dir / "store.sqlite");
  JobTable& jobs = ws.jobs();
  auto test = jobs.add("job-1", "kernel", "\"t1\"", "file:///a.py");
  auto search = jobs.add("opt-1", "optimize", "\"t2\"", "file:///a.py");
  auto session = jobs.add("s-1", "hitl", "\"t3\"");
  EXPECT_EQ(jobs.count("kernel"), 1u);
  EXPECT_EQ(jobs.count("optimize"), 1u);

  const Job* hit = jobs.cancel_by_progress_token("\"t2\"");
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->id, "opt-1");
  EXPECT_EQ(hit->group, "optimize");
  EXPECT_TRUE(search->load());
  EXPECT_FALSE(test->load());
  EXPECT_FALSE(session->load());
  EXPECT_EQ(jobs.cancel_by_progress_token("\"t9\""), nullptr);

  EXPECT_TRUE(jobs.cancel("s-1"));
  EXPECT_TRUE(session->load());
  EXPECT_FALSE(jobs.cancel("job-9"));

  const std::optional<Job> removed = jobs.remove("job-1");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->progress, "\"t1\"");
  EXPECT_EQ(jobs.count("kernel"), 0u);
  EXPECT_FALSE(jobs.remove("job-1"));
  jobs.cancel_group("hitl");
  EXPECT_EQ(jobs.jobs("optimize").size(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mk::service
