#include "core/train/nodereport.h"

#include "core/runs/runrecord.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trainlab {

std::string nodeReportKey(int epoch, int node)
{
    return "report/" + std::to_string(epoch) + "/" + std::to_string(node);
}

std::string encodeNodeReport(int epoch, const NodeReport &report)
{
    nlohmann::json time = nlohmann::json::array();
    for (const TimeSplit &t : report.time)
        time.push_back({t.rank, t.data, t.compute, t.allreduce, t.optimizer, t.other});
    // devices.csv's own rows, so the figures arrive exactly as node 0 would have written them.
    std::string devices = std::string(RunRecord::devicesHeader()) + "\n";
    for (const DeviceEpochStats &d : report.devices)
        devices += RunRecord::devicesRow(epoch, d);
    return nlohmann::json{{"epoch", epoch}, {"time", time}, {"devices", devices}, {"warmup", report.warmupSeconds}}.dump();
}

NodeReport decodeNodeReport(int epoch, const std::string &text)
{
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw std::runtime_error("not JSON");
    if (j.value("epoch", -1) != epoch)
        throw std::runtime_error("not epoch " + std::to_string(epoch) + "'s");
    NodeReport report;
    const auto time = j.find("time");
    if (time == j.end() || !time->is_array())
        throw std::runtime_error("no \"time\" list");
    for (const auto &row : *time) {
        if (!row.is_array() || row.size() != 6 || !row[0].is_number_integer())
            throw std::runtime_error("a \"time\" row is not [rank, 5 seconds]");
        TimeSplit t;
        t.rank = row[0].get<int>();
        double *parts[] = {&t.data, &t.compute, &t.allreduce, &t.optimizer, &t.other};
        for (std::size_t i = 0; i < 5; ++i) {
            if (!row[i + 1].is_number() || !std::isfinite(row[i + 1].get<double>()) || row[i + 1].get<double>() < 0)
                throw std::runtime_error("a \"time\" row has a part that is not a number of seconds");
            *parts[i] = row[i + 1].get<double>();
        }
        report.time.push_back(t);
    }
    // Absent in an older node's report: no warm-up to tell.
    if (const auto warmup = j.find("warmup"); warmup != j.end()) {
        if (!warmup->is_number() || !std::isfinite(warmup->get<double>()) || warmup->get<double>() < 0)
            throw std::runtime_error("\"warmup\" is not a number of seconds");
        report.warmupSeconds = warmup->get<double>();
    }
    const auto devices = j.find("devices");
    if (devices == j.end() || !devices->is_string())
        throw std::runtime_error("no \"devices\" table");
    for (DeviceEpochRow &row : parseDeviceEpochs(devices->get<std::string>())) {
        if (row.epoch == epoch)
            report.devices.push_back(std::move(row.stats));
    }
    return report;
}

std::string nodeDevicePrefix(int nodeRank, int processesPerNode)
{
    return "node" + std::to_string(nodeRank / std::max(1, processesPerNode)) + ":";
}

} // namespace trainlab
