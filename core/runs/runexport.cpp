#include "core/runs/runexport.h"

#include "core/util/numtext.h"

#include <filesystem>

namespace trainlab {

namespace {

std::string rowStart(const RunSummary &s)
{
    std::string name;
    for (const char c : s.name)
        name += c == '"' ? std::string("\"\"") : std::string(1, c);
    std::string run = std::filesystem::path(s.dir).filename().string();
    return run + ",\"" + name + "\",";
}

} // namespace

const char *runsMetricsHeader()
{
    return "run,run_name,epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second,learning_rate,grad_norm,"
           "data_seconds,compute_seconds,allreduce_seconds,optimizer_seconds,other_seconds,ranks";
}

std::string runsMetricsCsv(const std::vector<RunSummary> &runs)
{
    std::string csv = std::string(runsMetricsHeader()) + "\n";
    for (const RunSummary &s : runs) {
        std::vector<EpochMetrics> epochs = readMetrics(s.dir);
        readTiming(s.dir, epochs);
        for (const EpochMetrics &m : epochs) {
            std::string row = RunRecord::metricsRow(m);
            row.pop_back();
            if (m.time.empty()) {
                row += ",,,,,,0";
            } else {
                TimeSplit mean;
                for (const TimeSplit &t : m.time)
                    mean += t;
                mean /= static_cast<double>(m.time.size());
                for (const double part : {mean.data, mean.compute, mean.allreduce, mean.optimizer, mean.other})
                    row += "," + formatFixed(part, 4);
                row += "," + std::to_string(m.time.size());
            }
            csv += rowStart(s) + row + "\n";
        }
    }
    return csv;
}

std::string runsDevicesCsv(const std::vector<RunSummary> &runs)
{
    std::string csv = std::string("run,run_name,") + RunRecord::devicesHeader() + "\n";
    for (const RunSummary &s : runs) {
        for (const DeviceEpochRow &row : readDeviceEpochs(s.dir))
            csv += rowStart(s) + RunRecord::devicesRow(row.epoch, row.stats);
    }
    return csv;
}

} // namespace trainlab
