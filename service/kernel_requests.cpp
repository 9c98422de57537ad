#include "service/kernel_requests.h"

#include "source/syntax/normalize.h"

namespace mk::service {

std::optional<tpu::KernelRequest> kernel_request(const std::filesystem::path& file,
                                                 const std::string& text, bool defines_infile_task,
                                                 std::string& reason,
                                                 const std::optional<std::string>& kernel,
                                                 const nlohmann::json& options) {
  std::optional<nlohmann::json> task = tpu::locate_task(file, defines_infile_task, reason);
  if (!task) return std::nullopt;
  tpu::KernelRequest request;
  request.file = file;
  request.source = text;
  request.normalized_source = syntax::normalized_python_source(text);
  request.kernel = kernel;
  request.task = std::move(*task);
  request.options = options;
  return request;
}

}  // namespace mk::service
