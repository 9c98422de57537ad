// How the CLI shows a search run: a result table (text), JSON, the run list, and the report file.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "agents/orchestration/run_store.h"

namespace mk::cli {

nlohmann::json run_json(const agents::RunRecord& run, const std::vector<agents::NodeRecord>& nodes,
                        const std::string& report_file);
void print_run_summary(std::ostream& out, const agents::RunRecord& run,
                       const std::vector<agents::NodeRecord>& nodes,
                       const std::string& report_file);
void print_run_list(std::ostream& out, const std::vector<agents::RunRecord>& runs, bool as_json);
// Renders the HTML report and writes it; false with `error` when the file cannot be written.
bool write_run_report(const agents::RunRecord& run, const std::vector<agents::NodeRecord>& nodes,
                      const std::string& path, std::string& error);

}  // namespace mk::cli
