#include "core/runrecord.h"

#include "core/atomicfile.h"
#include "core/devices.h"
#include "core/testhooks.h"
#include "trainlab/version.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace trainlab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char *kCreatingPrefix = ".creating-";

std::string utcStamp(const char *format)
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buffer[64];
    std::strftime(buffer, sizeof buffer, format, &tm);
    return buffer;
}

int openDir(const std::string &dir)
{
    return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

// A temporary file a killed writer left behind (writeFileAtomic's NAME.tmp-PID, a checkpoint's NAME.tmp).
bool isStaleTemporary(const std::string &name)
{
    return name.find(".tmp-") != std::string::npos
           || (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0);
}

// Half-built run folders whose creator is gone; they never held a run, so nothing is lost.
void removeAbandonedFolders(const std::string &runsDir)
{
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(runsDir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(kCreatingPrefix, 0) == 0 && entry.is_directory(ec) && !runFolderInUse(entry.path().string()))
            fs::remove_all(entry.path(), ec);
    }
}

void moveIntoPlace(const std::string &from, const std::string &to, std::string &moved)
{
    for (int n = 1; n <= 1000; ++n) {
        const std::string candidate = n == 1 ? to : to + "-" + std::to_string(n);
        if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, candidate.c_str(), RENAME_NOREPLACE) == 0) {
            moved = candidate;
            return;
        }
        if (errno == EEXIST)
            continue;
        if (errno != EINVAL && errno != ENOSYS)
            throw std::runtime_error(candidate + ": cannot create the run folder: " + std::strerror(errno));
        // A file system without RENAME_NOREPLACE: reserve the name, then replace the empty folder.
        std::error_code ec;
        if (!fs::create_directory(candidate, ec))
            continue;
        if (std::rename(from.c_str(), candidate.c_str()) != 0)
            throw std::runtime_error(candidate + ": cannot create the run folder: " + std::strerror(errno));
        moved = candidate;
        return;
    }
    throw std::runtime_error(to + ": too many runs with this name in one second");
}

} // namespace

std::string isoTimeUtc()
{
    return utcStamp("%Y-%m-%dT%H:%M:%SZ");
}

std::string hostName()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0)
        return "unknown";
    return name;
}

bool runFolderInUse(const std::string &runDir)
{
    const int fd = openDir(runDir);
    if (fd < 0)
        return false;
    // A shared probe: it cannot be mistaken for a run's exclusive lock by another prober.
    const bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    ::close(fd);
    return !free;
}

const char *RunRecord::metricsHeader()
{
    return "epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second";
}

std::string RunRecord::metricsRow(const EpochMetrics &m)
{
    char row[256];
    std::snprintf(row, sizeof row, "%d,%.6f,%.6f,%.6f,%.3f,%.1f\n", m.epoch, m.trainLoss, m.trainAcc, m.testAcc,
                  m.seconds, m.imagesPerSecond);
    return row;
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

void RunRecord::lock(const std::string &dir)
{
    m_lockFd = openDir(dir);
    if (m_lockFd < 0)
        throw std::runtime_error(dir + ": cannot open the run folder: " + std::strerror(errno));
    // Retried briefly: a history listing may hold its shared probe for an instant.
    for (int attempt = 0; attempt < 50; ++attempt) {
        if (::flock(m_lockFd, LOCK_EX | LOCK_NB) == 0)
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::close(m_lockFd);
    m_lockFd = -1;
    std::string owner;
    try {
        const RunSummary s = readRunSummary(dir);
        owner = " (pid " + std::to_string(s.pid) + " on " + s.host + ")";
    } catch (const std::exception &) {
    }
    throw std::runtime_error(dir + ": the run is in use by another TrainLab process" + owner);
}

RunRecord::RunRecord(const std::string &runsDir, const ExperimentConfig &config, const std::vector<std::string> &devices,
                     const SweepTag &tag)
{
    std::error_code ec;
    fs::create_directories(runsDir, ec);
    if (ec)
        throw std::runtime_error(runsDir + ": cannot create the runs folder: " + ec.message());
    removeAbandonedFolders(runsDir);
    const std::string stamp = utcStamp("%Y%m%d-%H%M%S") + "-" + safeName(config.name);
    const std::string building = (fs::path(runsDir) / (kCreatingPrefix + stamp + "-" + std::to_string(::getpid()))).string();
    fs::remove_all(building, ec);
    if (!fs::create_directory(building, ec))
        throw std::runtime_error(building + ": cannot create the run folder: "
                                 + (ec ? ec.message() : std::string("it already exists")));
    m_dir = building;
    lock(building);
    m_checkpoints = config.checkpoints;
    m_summary.name = config.name;
    m_summary.status = "running";
    m_summary.devices = devices;
    m_summary.epochsPlanned = config.epochs;
    m_summary.startTime = isoTimeUtc();
    m_summary.trainlabVersion = TRAINLAB_VERSION;
    m_summary.torchVersion = torchVersion();
    m_summary.sweep = tag;
    try {
        testPause("folder-created");
        writeSummary();
        config.save(m_dir + "/config.json");
        writeFileAtomic(m_dir + "/metrics.csv", std::string(metricsHeader()) + "\n");
        moveIntoPlace(building, (fs::path(runsDir) / stamp).string(), m_dir);
    } catch (...) {
        fs::remove_all(building, ec);
        throw;
    }
    m_summary.dir = m_dir;
}

std::unique_ptr<RunRecord> RunRecord::reopen(const std::string &dir, const ExperimentConfig &config,
                                             const std::vector<EpochMetrics> &done, int checkpointEpoch)
{
    std::unique_ptr<RunRecord> record(new RunRecord());
    record->m_dir = dir;
    record->lock(dir);
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(dir, ec)) {
        if (isStaleTemporary(entry.path().filename().string()))
            fs::remove(entry.path(), ec);
    }
    RunSummary s = readRunSummary(dir);
    s.status = "running";
    s.error.clear();
    s.endTime.clear();
    s.epochsPlanned = config.epochs;
    s.resumedAt.push_back(isoTimeUtc());
    s.checkpointEpoch = checkpointEpoch;
    if (s.bestCheckpointEpoch > checkpointEpoch || !fs::exists(record->bestPath()))
        s.bestCheckpointEpoch = 0;
    record->m_previousSeconds = s.totalSeconds;
    record->m_checkpoints = config.checkpoints;
    record->m_summary = s;
    record->m_epochs.epochs = done;
    record->m_epochs.summarize();
    std::string metrics = std::string(metricsHeader()) + "\n";
    for (const EpochMetrics &m : done)
        metrics += metricsRow(m);
    config.save(dir + "/config.json");
    writeFileAtomic(dir + "/metrics.csv", metrics);
    record->m_summary.epochsDone = static_cast<int>(done.size());
    record->m_summary.finalTestAcc = done.empty() ? 0.0 : done.back().testAcc;
    record->m_summary.bestTestAcc = record->m_epochs.bestTestAcc;
    record->m_summary.bestEpoch = record->m_epochs.bestEpoch;
    record->m_summary.meanEpochSeconds = record->m_epochs.meanEpochSeconds;
    record->writeSummary();
    return record;
}

RunRecord::~RunRecord()
{
    if (m_lockFd >= 0)
        ::close(m_lockFd);
}

bool RunRecord::isBest(const EpochMetrics &m) const
{
    for (const EpochMetrics &e : m_epochs.epochs) {
        if (e.testAcc >= m.testAcc)
            return false;
    }
    return true;
}

bool RunRecord::wantsCheckpoint(const EpochMetrics &m) const
{
    if (m_checkpoints == "none")
        return false;
    return m_checkpoints != "best" || isBest(m);
}

void RunRecord::commitEpoch(const EpochMetrics &m, const std::string &checkpointBytes)
{
    const bool best = isBest(m) && m_checkpoints.find("best") != std::string::npos;
    const bool last = m_checkpoints == "last" || m_checkpoints == "last+best";
    if (!checkpointBytes.empty()) {
        if (last) {
            try {
                writeFileAtomic(checkpointPath(), checkpointBytes);
            } catch (const std::exception &e) {
                throw std::runtime_error("runs folder: " + std::string(e.what())
                                         + (m_summary.checkpointEpoch > 0 ? "; checkpoint.pt of epoch " + std::to_string(m_summary.checkpointEpoch) + " is kept" : ""));
            }
            m_summary.checkpointEpoch = m.epoch;
        }
        if (best) {
            // The same bytes as checkpoint.pt: a hard link costs no space; a fresh file where links fail.
            const std::string tmp = bestPath() + ".tmp";
            ::unlink(tmp.c_str());
            if (!last || ::link(checkpointPath().c_str(), tmp.c_str()) != 0) {
                writeFileAtomic(bestPath(), checkpointBytes);
            } else {
                testPause("write:best.pt");
                if (std::rename(tmp.c_str(), bestPath().c_str()) != 0) {
                    const int err = errno;
                    ::unlink(tmp.c_str());
                    throw std::runtime_error(bestPath() + ": cannot replace: " + std::strerror(err));
                }
            }
            m_summary.bestCheckpointEpoch = m.epoch;
        }
    }
    m_epochs.epochs.push_back(m);
    // Rewritten whole and renamed into place (a few KB): at every instant it holds only complete rows.
    std::string metrics = std::string(metricsHeader()) + "\n";
    for (const EpochMetrics &e : m_epochs.epochs)
        metrics += metricsRow(e);
    writeFileAtomic(m_dir + "/metrics.csv", metrics);
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
    const double total = m_previousSeconds
                         + std::chrono::duration<double>(std::chrono::steady_clock::now() - m_sessionStart).count();
    json j = {
        {"name", s.name},
        {"status", s.status},
        {"error", s.error},
        {"best_test_acc", s.bestTestAcc},
        {"best_epoch", s.bestEpoch},
        {"final_test_acc", s.finalTestAcc},
        {"epochs_done", s.epochsDone},
        {"epochs_planned", s.epochsPlanned},
        {"checkpoint_epoch", s.checkpointEpoch},
        {"best_checkpoint_epoch", s.bestCheckpointEpoch},
        {"mean_epoch_seconds", s.meanEpochSeconds},
        {"total_seconds", total},
        {"devices", s.devices},
        {"trainlab_version", s.trainlabVersion},
        {"libtorch_version", s.torchVersion},
        {"start_time", s.startTime},
        {"end_time", s.endTime},
        {"resumed_at", s.resumedAt},
        {"pid", static_cast<long long>(::getpid())},
        {"host", hostName()},
    };
    if (!s.sweep.empty()) {
        json values = json::object();
        for (const auto &[axis, value] : s.sweep.values)
            values[axis] = value;
        std::vector<std::string> order;
        for (const auto &v : s.sweep.values)
            order.push_back(v.first);
        j["sweep"] = {{"id", s.sweep.id}, {"index", s.sweep.index}, {"count", s.sweep.count},
                      {"axes", order}, {"values", values}};
    }
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
        s.epochsPlanned = j.value("epochs_planned", 0);
        s.checkpointEpoch = j.value("checkpoint_epoch", 0);
        s.bestCheckpointEpoch = j.value("best_checkpoint_epoch", 0);
        s.meanEpochSeconds = j.value("mean_epoch_seconds", 0.0);
        s.totalSeconds = j.value("total_seconds", 0.0);
        s.devices = j.value("devices", std::vector<std::string>{});
        s.trainlabVersion = j.value("trainlab_version", "");
        s.torchVersion = j.value("libtorch_version", "");
        s.startTime = j.value("start_time", "");
        s.endTime = j.value("end_time", "");
        s.resumedAt = j.value("resumed_at", std::vector<std::string>{});
        s.pid = j.value("pid", 0LL);
        s.host = j.value("host", "");
        if (const auto sweep = j.find("sweep"); sweep != j.end() && sweep->is_object()) {
            s.sweep.id = sweep->value("id", "");
            s.sweep.index = sweep->value("index", -1);
            s.sweep.count = sweep->value("count", 0);
            const json values = sweep->value("values", json::object());
            for (const auto &axis : sweep->value("axes", std::vector<std::string>{}))
                s.sweep.values.emplace_back(axis, values.value(axis, ""));
        }
    } catch (const json::exception &e) {
        throw std::runtime_error(path + ": unexpected content: " + e.what());
    }
    if (s.status == "running" && !runFolderInUse(runDir))
        s.status = "interrupted";
    return s;
}

std::vector<EpochMetrics> readMetrics(const std::string &runDir)
{
    const std::string path = runDir + "/metrics.csv";
    std::string text = readFile(path);
    // A last line without its newline is a row torn by a crash: not a row.
    text.resize(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
    std::istringstream in(text);
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
        if (entry.path().filename().string().rfind(kCreatingPrefix, 0) == 0)
            continue;
        if (!entry.is_directory(ec) || !fs::exists(entry.path() / "summary.json", ec))
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
