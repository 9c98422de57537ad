// The host choice both front ends read (CLI --host/--hosts, the editor's maxkernel.host/hosts):
// a `ray:ADDRESS` name needs no definition, and a ray host's driver runs the choice's python.
#include <gtest/gtest.h>

#include "service/hosts.h"

namespace mk::service {
namespace {

TEST(HostChoice, ARayNameIsAHostOfItsOwnRunWithTheChoicesPython) {
  HostChoice choice;
  choice.local_python = "/venv/bin/python";
  choice.request_timeout = std::chrono::milliseconds(1234);
  std::string error;
  auto host = host_config(choice, "ray:10.0.0.7:6379", error);
  ASSERT_TRUE(host) << error;
  EXPECT_EQ(host->kind->name(), "ray");
  EXPECT_EQ(host->address, "10.0.0.7:6379");
  EXPECT_EQ(host->python, "/venv/bin/python");
  EXPECT_EQ(host->request_timeout.count(), 1234);
}

TEST(HostChoice, ARayDefinitionWinsOverTheNameAndKeepsItsOwnPython) {
  HostChoice choice;
  choice.local_python = "/venv/bin/python";
  choice.definitions = {R"({"name": "pod", "kind": "ray", "address": "auto"})",
                        R"({"name": "ray:x:1", "kind": "ray", "address": "y:2", "python": "/p"})"};
  std::string error;
  auto pod = host_config(choice, "pod", error);
  ASSERT_TRUE(pod) << error;
  EXPECT_EQ(pod->python, "/venv/bin/python");  // the driver runs here, as the local host does
  auto defined = host_config(choice, "ray:x:1", error);
  ASSERT_TRUE(defined) << error;
  EXPECT_EQ(defined->address, "y:2");
  EXPECT_EQ(defined->python, "/p");
  EXPECT_FALSE(host_config(choice, "ray", error));
  EXPECT_NE(error.find("unknown host 'ray'"), std::string::npos) << error;
}

}  // namespace
}  // namespace mk::service
