// Test helper: writes the demo run (see demo_run.h) into the store at argv[1] and prints its id,
// so the CLI tests can run `maxkernel report` on a real database.
#include <iostream>

#include "demo_run.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: mk_report_demo_db STORE_PATH\n";
    return 2;
  }
  try {
    mk::agents::RunStore store(argv[1]);
    std::cout << mk::report::testing::write_demo_run(store) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "mk_report_demo_db: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
