#pragma once

#include "core/config.h"
#include "core/observer.h"

#include <string>
#include <vector>

namespace trainlab {

// What summary.json says about a run; also what the run history lists.
struct RunSummary
{
    std::string dir;
    std::string name;
    std::string status;          // running, completed, stopped, failed
    std::string error;
    double bestTestAcc = 0.0;
    int bestEpoch = 0;
    double finalTestAcc = 0.0;
    int epochsDone = 0;
    double meanEpochSeconds = 0.0;
    std::vector<std::string> devices;
    std::string startTime;       // ISO 8601, UTC
    std::string endTime;
    std::string trainlabVersion;
    std::string torchVersion;
};

// A run's folder: config.json, metrics.csv (one row per epoch), summary.json, checkpoint.pt.
// Used from the one thread that drives the run.
class RunRecord
{
public:
    // Creates <runsDir>/<UTC timestamp>-<safe name>[-N]; throws when the folder cannot be made.
    RunRecord(const std::string &runsDir, const ExperimentConfig &config, const std::vector<std::string> &devices);

    const std::string &dir() const { return m_dir; }
    std::string checkpointPath() const { return m_dir + "/checkpoint.pt"; }
    void appendEpoch(const EpochMetrics &metrics);
    void finish(const RunResult &result);

    static std::string safeName(const std::string &name);
    static const char *metricsHeader();

private:
    void writeSummary();

    std::string m_dir;
    RunSummary m_summary;
    RunResult m_epochs;   // the epochs so far, summarized as the engine's result is
};

RunSummary readRunSummary(const std::string &runDir);
std::vector<EpochMetrics> readMetrics(const std::string &runDir);
// Every run folder under runsDir with a readable summary.json, newest first.
std::vector<RunSummary> listRuns(const std::string &runsDir);
std::string isoTimeUtc();

} // namespace trainlab
