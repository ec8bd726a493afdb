#pragma once

#include "core/runs/runrecord.h"

#include <string>
#include <vector>

namespace trainlab {

// Several runs' records in one table each, for a spreadsheet or pandas: every row starts with the run's folder
// name and its name (quoted), then the record's own columns. Throws std::runtime_error naming the file that
// cannot be read.

// metrics.csv's columns, then the epoch's time split (timing.csv, seconds, the mean over the ranks) and the
// number of ranks measured; the split is empty where the run did not measure it (a GPU run, an older run).
std::string runsMetricsCsv(const std::vector<RunSummary> &runs);
const char *runsMetricsHeader();
// devices.csv's columns; runs without the file add no rows.
std::string runsDevicesCsv(const std::vector<RunSummary> &runs);

} // namespace trainlab
