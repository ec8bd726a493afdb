#include "core/runrecord.h"

#include "core/atomicfile.h"
#include "core/devices.h"
#include "trainlab/version.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace trainlab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string utcStamp(const char *format)
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buffer[64];
    std::strftime(buffer, sizeof buffer, format, &tm);
    return buffer;
}

} // namespace

std::string isoTimeUtc()
{
    return utcStamp("%Y-%m-%dT%H:%M:%SZ");
}

const char *RunRecord::metricsHeader()
{
    return "epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second";
}

std::string RunRecord::safeName(const std::string &name)
{
    std::string safe;
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
                        || c == '_' || c == '.';
        safe += ok ? c : '_';
    }
    while (safe.find("..") != std::string::npos)
        safe.replace(safe.find(".."), 2, "_");
    if (!safe.empty() && safe.front() == '.')
        safe.front() = '_';
    if (safe.size() > 60)
        safe.resize(60);
    return safe.empty() ? "run" : safe;
}

RunRecord::RunRecord(const std::string &runsDir, const ExperimentConfig &config, const std::vector<std::string> &devices)
{
    std::error_code ec;
    fs::create_directories(runsDir, ec);
    if (ec)
        throw std::runtime_error(runsDir + ": cannot create the runs folder: " + ec.message());
    const std::string base = (fs::path(runsDir) / (utcStamp("%Y%m%d-%H%M%S") + "-" + safeName(config.name))).string();
    // create_directory is atomic: a clash with a run started in the same second takes the next suffix.
    for (int n = 1;; ++n) {
        const std::string candidate = n == 1 ? base : base + "-" + std::to_string(n);
        if (fs::create_directory(candidate, ec)) {
            m_dir = candidate;
            break;
        }
        if (ec)
            throw std::runtime_error(candidate + ": cannot create the run folder: " + ec.message());
        if (n > 1000)
            throw std::runtime_error(base + ": too many runs with this name in one second");
    }
    config.save(m_dir + "/config.json");
    writeFileAtomic(m_dir + "/metrics.csv", std::string(metricsHeader()) + "\n");
    m_summary.dir = m_dir;
    m_summary.name = config.name;
    m_summary.status = "running";
    m_summary.devices = devices;
    m_summary.startTime = isoTimeUtc();
    m_summary.trainlabVersion = TRAINLAB_VERSION;
    m_summary.torchVersion = torchVersion();
    writeSummary();
}

void RunRecord::appendEpoch(const EpochMetrics &m)
{
    char row[256];
    std::snprintf(row, sizeof row, "%d,%.6f,%.6f,%.6f,%.3f,%.1f\n", m.epoch, m.trainLoss, m.trainAcc, m.testAcc,
                  m.seconds, m.imagesPerSecond);
    // Append plus fsync: a crash loses at most the row being written, never earlier epochs.
    std::FILE *file = std::fopen((m_dir + "/metrics.csv").c_str(), "a");
    if (!file)
        throw std::runtime_error(m_dir + "/metrics.csv: cannot append");
    const bool ok = std::fputs(row, file) >= 0 && std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
    std::fclose(file);
    if (!ok)
        throw std::runtime_error(m_dir + "/metrics.csv: cannot append");
    m_epochs.epochs.push_back(m);
    m_epochs.summarize();
    m_summary.epochsDone = m.epoch;
    m_summary.finalTestAcc = m.testAcc;
    m_summary.bestTestAcc = m_epochs.bestTestAcc;
    m_summary.bestEpoch = m_epochs.bestEpoch;
    m_summary.meanEpochSeconds = m_epochs.meanEpochSeconds;
    writeSummary();
}

void RunRecord::finish(const RunResult &result)
{
    m_summary.status = result.status == RunStatus::Completed ? "completed" : toString(result.status);
    m_summary.error = result.error;
    m_summary.endTime = isoTimeUtc();
    writeSummary();
}

void RunRecord::writeSummary()
{
    const RunSummary &s = m_summary;
    json j = {
        {"name", s.name},
        {"status", s.status},
        {"error", s.error},
        {"best_test_acc", s.bestTestAcc},
        {"best_epoch", s.bestEpoch},
        {"final_test_acc", s.finalTestAcc},
        {"epochs_done", s.epochsDone},
        {"mean_epoch_seconds", s.meanEpochSeconds},
        {"devices", s.devices},
        {"trainlab_version", s.trainlabVersion},
        {"libtorch_version", s.torchVersion},
        {"start_time", s.startTime},
        {"end_time", s.endTime},
    };
    writeFileAtomic(m_dir + "/summary.json", j.dump(2) + "\n");
}

RunSummary readRunSummary(const std::string &runDir)
{
    const std::string path = runDir + "/summary.json";
    json j;
    try {
        j = json::parse(readFile(path));
    } catch (const json::exception &e) {
        throw std::runtime_error(path + ": not valid JSON: " + e.what());
    }
    RunSummary s;
    s.dir = runDir;
    try {
        s.name = j.value("name", "");
        s.status = j.value("status", "");
        s.error = j.value("error", "");
        s.bestTestAcc = j.value("best_test_acc", 0.0);
        s.bestEpoch = j.value("best_epoch", 0);
        s.finalTestAcc = j.value("final_test_acc", 0.0);
        s.epochsDone = j.value("epochs_done", 0);
        s.meanEpochSeconds = j.value("mean_epoch_seconds", 0.0);
        s.devices = j.value("devices", std::vector<std::string>{});
        s.trainlabVersion = j.value("trainlab_version", "");
        s.torchVersion = j.value("libtorch_version", "");
        s.startTime = j.value("start_time", "");
        s.endTime = j.value("end_time", "");
    } catch (const json::exception &e) {
        throw std::runtime_error(path + ": unexpected content: " + e.what());
    }
    return s;
}

std::vector<EpochMetrics> readMetrics(const std::string &runDir)
{
    const std::string path = runDir + "/metrics.csv";
    std::istringstream in(readFile(path));
    std::string line;
    std::getline(in, line);
    if (line != RunRecord::metricsHeader())
        throw std::runtime_error(path + ": unexpected header \"" + line + "\"");
    std::vector<EpochMetrics> rows;
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        EpochMetrics m;
        if (std::sscanf(line.c_str(), "%d,%lf,%lf,%lf,%lf,%lf", &m.epoch, &m.trainLoss, &m.trainAcc, &m.testAcc,
                        &m.seconds, &m.imagesPerSecond) == 6)
            rows.push_back(m);
    }
    return rows;
}

std::vector<RunSummary> listRuns(const std::string &runsDir)
{
    std::vector<RunSummary> runs;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(runsDir, ec)) {
        if (!entry.is_directory() || !fs::exists(entry.path() / "summary.json"))
            continue;
        try {
            runs.push_back(readRunSummary(entry.path().string()));
        } catch (const std::exception &) {
            continue; // a broken folder is not a run; it stays on disk for the user to inspect
        }
    }
    std::sort(runs.begin(), runs.end(), [](const RunSummary &a, const RunSummary &b) {
        return a.startTime != b.startTime ? a.startTime > b.startTime : a.dir > b.dir;
    });
    return runs;
}

} // namespace trainlab
