#pragma once

#include "core/train/observer.h"

#include <string>
#include <vector>

namespace trainlab {

// The lines a run prints, shared by the CLI and the desktop log so both read the same.
std::string deviceList(const std::vector<std::string> &devices);
std::string runStartedLine(const RunInfo &info);
std::string epochLine(const EpochMetrics &metrics, int epochs);
// "time  compute 81%  allreduce 14%  optimizer 3%  data 1%  other 1%" over this node's ranks; "" when not measured.
std::string timeSharesLine(const EpochMetrics &metrics);
std::vector<std::string> finishedLines(const RunResult &result, const std::string &deviceList);

} // namespace trainlab
