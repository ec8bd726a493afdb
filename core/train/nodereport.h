#pragma once

#include "core/monitor/devicemonitor.h"
#include "core/train/observer.h"

#include <string>
#include <vector>

namespace trainlab {

// What a node other than node 0 sends node 0 at each epoch's end, through the run's store: its ranks' time split and
// its machine's device figures, so the record (timing.csv, devices.csv) holds the whole world's.
struct NodeReport
{
    std::vector<TimeSplit> time;
    std::vector<DeviceEpochStats> devices;   // ids already named by node ("node1:gpu0")
    double warmupSeconds = 0.0;              // the node's slowest replica's warm-up, with its first epoch
};

std::string nodeReportKey(int epoch, int node);
std::string encodeNodeReport(int epoch, const NodeReport &report);
// Throws std::runtime_error saying what is wrong when text is not a report of that epoch.
NodeReport decodeNodeReport(int epoch, const std::string &text);
// "node1:" for the machine of process nodeRank (torchrun starts processesPerNode processes on each).
std::string nodeDevicePrefix(int nodeRank, int processesPerNode);

} // namespace trainlab
