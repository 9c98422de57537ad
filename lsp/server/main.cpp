// maxkernel-lsp: the language server over stdio. stdout carries only protocol frames; logs go to
// stderr or to the file named by --log-file.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include "lsp/server/language_server.h"
#include "lsp/server/process_memory.h"

int main(int argc, char** argv) {
  mk::server::keep_document_memory_in_the_heap();
  mk::server::ServerOptions options;
  std::string log_file;
  std::string log_level = "info";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--stdio") continue;  // the only transport; accepted for editors that pass it
    if (a == "--enable-test-methods") {
      options.enable_test_methods = true;
    } else if (a == "--log-file" && i + 1 < argc) {
      log_file = argv[++i];
    } else if (a == "--log-level" && i + 1 < argc) {
      log_level = argv[++i];
    } else if (a == "--max-message-bytes" && i + 1 < argc) {
      options.max_message_bytes = std::stoull(argv[++i]);
    } else if (a == "--version") {
      std::cout << "maxkernel-lsp 0.1.0\n";
      return 0;
    } else {
      std::cerr << "usage: maxkernel-lsp [--stdio] [--log-file PATH] [--log-level LEVEL]\n"
                   "                     [--max-message-bytes N] [--enable-test-methods]\n";
      return 2;
    }
  }
  auto logger = log_file.empty() ? spdlog::stderr_logger_mt("maxkernel")
                                 : spdlog::basic_logger_mt("maxkernel", log_file);
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::flush_on(spdlog::level::info);
  std::signal(SIGPIPE, SIG_IGN);  // a vanished client shows up as a failed write, not a signal

  mk::server::LanguageServer server(options, mk::rpc::fd_sink(STDOUT_FILENO));
  mk::rpc::FdSource input(STDIN_FILENO);
  const int code = server.run(input);
  spdlog::shutdown();
  std::_Exit(code);  // the reader thread may still be blocked on stdin
}
