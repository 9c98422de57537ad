// WrapperModules: finding the module files a file's imports name under its folder and the
// workspace roots, reading each once until it is forgotten, with the caller's text winning.
#include "service/wrapper_modules.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace mk::service {
namespace {

namespace fs = std::filesystem;

const char* const kWrapper =
    "from jax.experimental import pallas as pl\n\n"
    "def pallas_call(kernel, *args, **kwargs):\n"
    "    return pl.pallas_call(kernel, *args, **kwargs)\n";
const char* const kNoWrapper = "def pallas_call(kernel):\n    return kernel\n";

struct Workspace {
  fs::path root;
  Workspace() {
    root =
        fs::temp_directory_path() /
        ("mk_wrapper_modules_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root / "pkg");
    fs::create_directories(root / "kernels");
    std::ofstream(root / "pkg" / "__init__.py") << "";
    std::ofstream(root / "pkg" / "block.py") << kWrapper;
  }
  ~Workspace() { fs::remove_all(root); }
};

TEST(WrapperModules, FindsTheModuleUnderARootAndKeysItsWrappersByQualifiedName) {
  Workspace ws;
  int reads = 0;
  WrapperModules modules([&](const fs::path& file) {
    ++reads;
    return WrapperModules::read_from_disk(file);
  });
  // Not found from the kernel's own folder without the root.
  EXPECT_TRUE(modules.forwarders_for({"pkg.block"}, ws.root / "kernels").empty());
  modules.set_roots({ws.root});
  std::vector<fs::path> used;
  const pallas::ForwarderSet set =
      modules.forwarders_for({"jax.numpy", "pkg.block"}, ws.root / "kernels", &used);
  ASSERT_EQ(set.size(), 1u);
  EXPECT_EQ(set.begin()->first, "pkg.block.pallas_call");
  EXPECT_EQ(used, std::vector<fs::path>{(ws.root / "pkg" / "block.py").lexically_normal()});
  // A function imported by name resolves through its module.
  EXPECT_EQ(modules.forwarders_for({"pkg.block.pallas_call"}, ws.root).size(), 1u);
  EXPECT_EQ(reads, 1);  // read once, then cached

  // Changed on disk: still the cached description until forgotten.
  std::ofstream(ws.root / "pkg" / "block.py") << kNoWrapper;
  EXPECT_EQ(modules.forwarders_for({"pkg.block"}, ws.root).size(), 1u);
  EXPECT_TRUE(modules.forget(ws.root / "pkg" / "block.py"));
  EXPECT_TRUE(modules.forwarders_for({"pkg.block"}, ws.root)
                  .at("pkg.block.pallas_call")
                  .shadows_pallas_call);
  EXPECT_EQ(reads, 2);
}

TEST(WrapperModules, TheCallersTextWinsOverTheDisk) {
  Workspace ws;
  std::map<fs::path, std::string> open = {
      {(ws.root / "pkg" / "block.py").lexically_normal(), kNoWrapper}};
  WrapperModules modules([&](const fs::path& file) -> std::optional<std::string> {
    if (auto it = open.find(file); it != open.end()) return it->second;
    return WrapperModules::read_from_disk(file);
  });
  // The open text's pallas_call forwards nothing: it only shadows Pallas' own.
  const pallas::ForwarderSet set = modules.forwarders_for({"pkg.block"}, ws.root);
  ASSERT_EQ(set.size(), 1u);
  EXPECT_TRUE(set.at("pkg.block.pallas_call").shadows_pallas_call);
}

TEST(WrapperModules, AModuleThatReExportsPallasCallShadowsNothing) {
  Workspace ws;
  WrapperModules modules([&](const fs::path&) -> std::optional<std::string> {
    return "from jax.experimental.pallas import pallas_call\n\nBLOCK = 128\n";
  });
  EXPECT_TRUE(modules.forwarders_for({"pkg.block"}, ws.root).empty());
}

TEST(WrapperModules, ProjectRootIsTheNearestFolderWithAMarker) {
  Workspace ws;
  std::ofstream(ws.root / "pyproject.toml") << "";
  EXPECT_EQ(WrapperModules::project_root(ws.root / "kernels" / "k.py"), ws.root);
}

}  // namespace
}  // namespace mk::service
