#include "core/runs/runrecord.h"

#include "core/monitor/devicesampler.h"
#include "core/runs/runstorage.h"
#include "core/runs/tensorboard.h"

#include "core/train/devices.h"
#include "core/train/winograd.h"
#include "core/util/atomicfile.h"
#include "core/util/jsonread.h"
#include "core/util/numtext.h"
#include "core/util/testhooks.h"
#include "trainlab/version.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <sys/file.h>
#include <sys/stat.h>
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
    return "epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second,learning_rate,grad_norm";
}

namespace {

// metrics.csv before the learning rate, then the gradient norm, was kept: still read, never written.
constexpr const char *kMetricsHeaders[] = {
    "epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second",
    "epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second,learning_rate",
};

} // namespace

const char *RunRecord::devicesHeader()
{
    return "epoch,device,cuda,name,samples,mean_utilization_pct,peak_memory_mib,memory_total_mib,peak_temperature_c,"
           "mean_power_w,lost";
}

std::string RunRecord::devicesRow(int epoch, const DeviceEpochStats &d)
{
    auto mib = [](const std::optional<std::uint64_t> &bytes) {
        return bytes ? formatFixed(static_cast<double>(*bytes) / 1048576.0, 1) : std::string();
    };
    auto number = [](const std::optional<double> &v, int decimals) { return v ? formatFixed(*v, decimals) : std::string(); };
    std::string name = d.name;
    std::replace_if(name.begin(), name.end(), [](char c) { return c == ',' || c == '"' || c == '\n' || c == '\r'; }, ' ');
    return std::to_string(epoch) + "," + d.id + "," + d.cudaId + "," + name + "," + std::to_string(d.samples) + ","
           + number(d.meanUtilization, 1) + "," + mib(d.peakMemory) + "," + mib(d.memoryTotal) + ","
           + number(d.peakTemperature, 0) + "," + number(d.meanPower, 1) + "," + (d.lost ? "1" : "0") + "\n";
}

const char *RunRecord::timingHeader()
{
    return "epoch,rank,data_seconds,compute_seconds,allreduce_seconds,optimizer_seconds,other_seconds";
}

std::string RunRecord::metricsRow(const EpochMetrics &m)
{
    return std::to_string(m.epoch) + "," + formatFixed(m.trainLoss, 6) + "," + formatFixed(m.trainAcc, 6) + ","
           + formatFixed(m.testAcc, 6) + "," + formatFixed(m.seconds, 3) + "," + formatFixed(m.imagesPerSecond, 1)
           + "," + (m.learningRate > 0 ? formatGeneral(m.learningRate, 8) : std::string()) + ","
           + (m.gradNorm > 0 ? formatGeneral(m.gradNorm, 6) : std::string()) + "\n";
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
    m_summary.speed = config.speed.describe(devices, config.precision, winogradUnavailableReason(), config.optimizer);
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
    startTensorBoard(config, {});
}

template <typename F> void RunRecord::tensorBoard(F &&write)
{
    try {
        write();
    } catch (const std::exception &e) {
        m_tensorBoard.reset();
        m_warning = std::string("TensorBoard files no longer written: ") + e.what();
    }
}

void RunRecord::startTensorBoard(const ExperimentConfig &config, const std::vector<EpochMetrics> &done)
{
    if (!config.tensorboard)
        return;
    tensorBoard([&] { m_tensorBoard = std::make_unique<TensorBoardLog>(m_dir, config, done); });
}

std::string RunRecord::takeWarning()
{
    return std::exchange(m_warning, std::string());
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
    try {
        // An older checkpoint keeps no learning rates or gradient norms: the epochs' own, as metrics.csv recorded
        // them, stay.
        for (const EpochMetrics &old : readMetrics(dir)) {
            for (EpochMetrics &m : record->m_epochs.epochs) {
                if (m.epoch == old.epoch && m.learningRate <= 0)
                    m.learningRate = old.learningRate;
                if (m.epoch == old.epoch && m.gradNorm <= 0)
                    m.gradNorm = old.gradNorm;
            }
        }
    } catch (const std::exception &) {
        // No readable metrics.csv: what the checkpoint does not keep is unknown (empty).
    }
    record->m_epochs.summarize();
    std::string metrics = std::string(metricsHeader()) + "\n";
    for (const EpochMetrics &m : record->m_epochs.epochs)
        metrics += metricsRow(m);
    try {
        std::istringstream timing(readFile(dir + "/timing.csv", kMaxTableBytes));
        std::string line;
        std::getline(timing, line);
        while (std::getline(timing, line)) {
            int epoch = 0;
            if (parseInt(std::string_view(line).substr(0, line.find(',')), epoch) && epoch >= 1 && epoch <= checkpointEpoch)
                record->m_earlierTiming += line + "\n";
        }
    } catch (const std::exception &) {
        // No timing.csv (an older run, or one on a GPU): nothing to keep.
    }
    try {
        std::istringstream devices(readFile(dir + "/devices.csv", kMaxTableBytes));
        std::string line;
        std::getline(devices, line);
        const bool ours = line == devicesHeader();
        while (ours && std::getline(devices, line)) {
            int epoch = 0;
            if (parseInt(std::string_view(line).substr(0, line.find(',')), epoch) && epoch >= 1 && epoch <= checkpointEpoch)
                record->m_deviceRows += line + "\n";
        }
    } catch (const std::exception &) {
        // No devices.csv (an older run, or one not sampled): nothing to keep.
    }
    config.save(dir + "/config.json");
    writeFileAtomic(dir + "/metrics.csv", metrics);
    record->m_summary.epochsDone = static_cast<int>(done.size());
    record->m_summary.speed = config.speed.describe(record->m_summary.devices, config.precision, winogradUnavailableReason(), config.optimizer);
    record->m_summary.finalTestAcc = done.empty() ? 0.0 : done.back().testAcc;
    record->m_summary.bestTestAcc = record->m_epochs.bestTestAcc;
    record->m_summary.bestEpoch = record->m_epochs.bestEpoch;
    record->m_summary.meanEpochSeconds = record->m_epochs.meanEpochSeconds;
    record->writeSummary();
    record->startTensorBoard(config, record->m_epochs.epochs);
    return record;
}

void RunRecord::startDeviceSampling(const std::vector<std::string> &cudaBusIds)
{
    if (!m_sampler)
        m_sampler = std::make_unique<DeviceSampler>(cudaBusIds);
}

void RunRecord::addNodeDevices(const std::vector<DeviceEpochStats> &devices)
{
    m_nodeDevices.insert(m_nodeDevices.end(), devices.begin(), devices.end());
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

bool RunRecord::folderGone() const
{
    struct stat held {}, named {};
    if (m_lockFd < 0 || ::fstat(m_lockFd, &held) != 0)
        return false;
    if (held.st_nlink == 0)
        return true;
    return ::stat(m_dir.c_str(), &named) != 0 || named.st_dev != held.st_dev || named.st_ino != held.st_ino;
}

std::string RunRecord::goneMessage() const
{
    return m_dir + ": the run folder was deleted or moved while the run was training; nothing more of this run is recorded";
}

void RunRecord::commitEpoch(const EpochMetrics &m, const std::string &checkpointBytes,
                            const std::vector<TbHistogram> &weights)
{
    if (folderGone())
        throw std::runtime_error(goneMessage());
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
    if (!m.time.empty()) {
        std::string timing = std::string(timingHeader()) + "\n" + m_earlierTiming;
        for (const EpochMetrics &e : m_epochs.epochs) {
            for (const TimeSplit &t : e.time)
                timing += std::to_string(e.epoch) + "," + std::to_string(t.rank) + "," + formatFixed(t.data, 4) + ","
                          + formatFixed(t.compute, 4) + "," + formatFixed(t.allreduce, 4) + ","
                          + formatFixed(t.optimizer, 4) + "," + formatFixed(t.other, 4) + "\n";
        }
        writeFileAtomic(m_dir + "/timing.csv", timing);
    }
    if (m_sampler || !m_nodeDevices.empty()) {
        m_lastDevices = m_sampler ? m_sampler->takeEpoch() : std::vector<DeviceEpochStats>{};
        nameByNode(m_lastDevices, m_devicePrefix);
        m_lastDevices.insert(m_lastDevices.end(), m_nodeDevices.begin(), m_nodeDevices.end());
        m_nodeDevices.clear();
        for (const DeviceEpochStats &d : m_lastDevices)
            m_deviceRows += devicesRow(m.epoch, d);
        writeFileAtomic(m_dir + "/devices.csv", std::string(devicesHeader()) + "\n" + m_deviceRows);
    }
    m_epochs.summarize();
    m_summary.epochsDone = m.epoch;
    m_summary.finalTestAcc = m.testAcc;
    m_summary.bestTestAcc = m_epochs.bestTestAcc;
    m_summary.bestEpoch = m_epochs.bestEpoch;
    m_summary.meanEpochSeconds = m_epochs.meanEpochSeconds;
    m_summary.warmupSeconds += m.warmupSeconds;
    writeSummary();
    if (m_tensorBoard)
        tensorBoard([&] { m_tensorBoard->epoch(m, weights); });
}

bool RunRecord::saveEvaluation(Evaluation e)
{
    if (e.epoch > 0 && e.epoch == m_summary.bestCheckpointEpoch)
        e.checkpoint = "best.pt";
    else if (e.epoch > 0 && e.epoch == m_summary.checkpointEpoch)
        e.checkpoint = "checkpoint.pt";
    else
        return false;
    writeFileAtomic(m_dir + "/" + kEvaluationFile, evaluationJson(e));
    return true;
}

void RunRecord::finish(const RunResult &result)
{
    m_summary.status = result.status == RunStatus::Completed ? "completed" : toString(result.status);
    m_summary.error = result.error;
    m_summary.note = result.note;
    m_summary.endTime = isoTimeUtc();
    writeSummary();
    if (m_tensorBoard)
        tensorBoard([&] { m_tensorBoard->finish(m_summary.status); });
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
        {"note", s.note},
        {"best_test_acc", s.bestTestAcc},
        {"best_epoch", s.bestEpoch},
        {"final_test_acc", s.finalTestAcc},
        {"epochs_done", s.epochsDone},
        {"epochs_planned", s.epochsPlanned},
        {"checkpoint_epoch", s.checkpointEpoch},
        {"best_checkpoint_epoch", s.bestCheckpointEpoch},
        {"mean_epoch_seconds", s.meanEpochSeconds},
        {"total_seconds", total},
        {"warmup_seconds", s.warmupSeconds},
        {"devices", s.devices},
        {"trainlab_version", s.trainlabVersion},
        {"libtorch_version", s.torchVersion},
        {"speed", s.speed},
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

namespace {

// An integer field of summary.json within [min, max]; absent: fallback.
template<typename T>
T field(const json &j, const char *key, T fallback, long long min, long long max)
{
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return fallback;
    long long value = 0;
    if (!it->is_number_integer() || !detail::fitsInto(*it, value) || value < min || value > max)
        throw std::runtime_error(std::string(key) + ": must be an integer from " + std::to_string(min) + " to "
                                 + std::to_string(max) + ", got " + detail::describe(*it));
    return static_cast<T>(value);
}

double number(const json &j, const char *key, double min, double max)
{
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return 0.0;
    if (!it->is_number() || !(it->get<double>() >= min && it->get<double>() <= max))
        throw std::runtime_error(std::string(key) + ": must be a number from " + formatShortest(min) + " to "
                                 + formatShortest(max) + ", got " + detail::describe(*it));
    return it->get<double>();
}

constexpr long long kMaxEpochs = 100000;
constexpr double kMaxSeconds = 1e10;

} // namespace

RunSummary parseRunSummary(const std::string &text, const std::string &runDir)
{
    const std::string path = runDir + "/summary.json";
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception &e) {
        throw std::runtime_error(path + ": not valid JSON: " + e.what());
    }
    if (!j.is_object())
        throw std::runtime_error(path + ": must be a JSON object, got " + detail::typeName(j));
    RunSummary s;
    s.dir = runDir;
    try {
        s.name = j.value("name", "");
        s.status = j.value("status", "");
        s.error = j.value("error", "");
        s.note = j.value("note", "");
        s.bestTestAcc = number(j, "best_test_acc", 0.0, 1.0);
        s.bestEpoch = field(j, "best_epoch", 0, 0, kMaxEpochs);
        s.finalTestAcc = number(j, "final_test_acc", 0.0, 1.0);
        s.epochsDone = field(j, "epochs_done", 0, 0, kMaxEpochs);
        s.epochsPlanned = field(j, "epochs_planned", 0, 0, kMaxEpochs);
        s.checkpointEpoch = field(j, "checkpoint_epoch", 0, 0, kMaxEpochs);
        s.bestCheckpointEpoch = field(j, "best_checkpoint_epoch", 0, 0, kMaxEpochs);
        s.meanEpochSeconds = number(j, "mean_epoch_seconds", 0.0, kMaxSeconds);
        s.totalSeconds = number(j, "total_seconds", 0.0, kMaxSeconds);
        s.warmupSeconds = number(j, "warmup_seconds", 0.0, kMaxSeconds);
        s.devices = j.value("devices", std::vector<std::string>{});
        s.trainlabVersion = j.value("trainlab_version", "");
        s.torchVersion = j.value("libtorch_version", "");
        s.speed = j.value("speed", "");
        s.startTime = j.value("start_time", "");
        s.endTime = j.value("end_time", "");
        s.resumedAt = j.value("resumed_at", std::vector<std::string>{});
        s.pid = field(j, "pid", 0LL, 0, 1LL << 31);
        s.host = j.value("host", "");
        if (const auto sweep = j.find("sweep"); sweep != j.end() && sweep->is_object()) {
            s.sweep.id = sweep->value("id", "");
            s.sweep.index = field(*sweep, "index", -1, -1, 1 << 20);
            s.sweep.count = field(*sweep, "count", 0, 0, 1 << 20);
            const json values = sweep->value("values", json::object());
            for (const auto &axis : sweep->value("axes", std::vector<std::string>{}))
                s.sweep.values.emplace_back(axis, values.value(axis, ""));
        }
    } catch (const json::exception &e) {
        throw std::runtime_error(path + ": unexpected content: " + e.what());
    } catch (const std::runtime_error &e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return s;
}

RunSummary readRunSummary(const std::string &runDir)
{
    RunSummary s = parseRunSummary(readFile(runDir + "/summary.json", kMaxRecordBytes), runDir);
    if (s.status == "running" && !runFolderInUse(runDir))
        s.status = "interrupted";
    try {
        s.notes = readRunNotes(runDir);
    } catch (const std::exception &e) {
        s.notes = "(" + std::string(e.what()) + ")";   // shown where the notes would be; the run itself reads fine
    }
    return s;
}

std::vector<EpochMetrics> parseMetrics(std::string text, const std::string &path)
{
    // A last line without its newline is a row torn by a crash: not a row.
    text.resize(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    std::size_t columns = 8;
    if (line == kMetricsHeaders[0])
        columns = 6;
    else if (line == kMetricsHeaders[1])
        columns = 7;
    else if (line != RunRecord::metricsHeader())
        throw std::runtime_error(path + ": unexpected header \"" + detail::cut(line) + "\"");
    std::vector<EpochMetrics> rows;
    while (std::getline(in, line)) {
        std::string_view fields[8];
        std::size_t count = 0, from = 0;
        for (; count < columns && from <= line.size(); ++count) {
            const std::size_t comma = std::min(line.find(',', from), line.size());
            fields[count] = std::string_view(line).substr(from, comma - from);
            from = comma + 1;
        }
        EpochMetrics m;
        // Each field a number in its range (the learning rate and the norm may be empty: unknown), epochs rising:
        // anything else is not a row of ours.
        const bool lrOk = columns == 6 || fields[6].empty() || (parseDouble(fields[6], m.learningRate) && m.learningRate > 0);
        const bool normOk = columns < 8 || fields[7].empty() || (parseDouble(fields[7], m.gradNorm) && m.gradNorm > 0);
        const bool ok = count == columns && from == line.size() + 1 && lrOk && normOk && parseInt(fields[0], m.epoch)
                        && parseDouble(fields[1], m.trainLoss) && parseDouble(fields[2], m.trainAcc)
                        && parseDouble(fields[3], m.testAcc) && parseDouble(fields[4], m.seconds)
                        && parseDouble(fields[5], m.imagesPerSecond) && m.epoch >= 1 && m.epoch <= kMaxEpochs
                        && (rows.empty() || m.epoch > rows.back().epoch) && m.trainLoss >= 0
                        && m.trainAcc >= 0 && m.trainAcc <= 1 && m.testAcc >= 0 && m.testAcc <= 1 && m.seconds >= 0
                        && m.seconds <= kMaxSeconds && m.imagesPerSecond >= 0;
        if (ok)
            rows.push_back(m);
    }
    return rows;
}

std::vector<EpochMetrics> readMetrics(const std::string &runDir)
{
    const std::string path = runDir + "/metrics.csv";
    return parseMetrics(readFile(path, kMaxTableBytes), path);
}

std::vector<DeviceEpochRow> parseDeviceEpochs(const std::string &text)
{
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    std::vector<DeviceEpochRow> rows;
    if (line != RunRecord::devicesHeader())
        return rows;
    while (std::getline(in, line)) {
        std::vector<std::string_view> f;
        for (std::size_t from = 0; from <= line.size() && f.size() < 12;) {
            const std::size_t comma = std::min(line.find(',', from), line.size());
            f.push_back(std::string_view(line).substr(from, comma - from));
            from = comma + 1;
        }
        DeviceEpochRow r;
        DeviceEpochStats &d = r.stats;
        auto optionalNumber = [](std::string_view text, std::optional<double> &out) {
            double v = 0;
            if (text.empty())
                return true;
            if (!parseDouble(text, v) || v < 0)
                return false;
            out = v;
            return true;
        };
        std::optional<double> peak, total;
        bool ok = f.size() == 11 && parseInt(f[0], r.epoch) && r.epoch >= 1 && r.epoch <= kMaxEpochs && !f[1].empty()
                  && parseInt(f[4], d.samples) && d.samples >= 0 && optionalNumber(f[5], d.meanUtilization)
                  && optionalNumber(f[6], peak) && optionalNumber(f[7], total) && optionalNumber(f[8], d.peakTemperature)
                  && optionalNumber(f[9], d.meanPower) && (f[10] == "0" || f[10] == "1")
                  && (rows.empty() || r.epoch >= rows.back().epoch);
        if (!ok)
            continue;
        d.id = std::string(f[1]);
        d.cudaId = std::string(f[2]);
        d.name = std::string(f[3]);
        d.lost = f[10] == "1";
        if (peak)
            d.peakMemory = static_cast<std::uint64_t>(std::llround(*peak * 1048576.0));
        if (total)
            d.memoryTotal = static_cast<std::uint64_t>(std::llround(*total * 1048576.0));
        rows.push_back(std::move(r));
    }
    return rows;
}

std::vector<DeviceEpochStats> summarizeDevices(const std::vector<DeviceEpochRow> &rows)
{
    DeviceEpochMeter meter;
    for (const DeviceEpochRow &row : rows)
        meter.add(row.stats);
    return meter.take();
}

std::vector<DeviceEpochRow> readDeviceEpochs(const std::string &runDir)
{
    try {
        return parseDeviceEpochs(readFile(runDir + "/devices.csv", kMaxTableBytes));
    } catch (const std::exception &) {
        return {};
    }
}

void readTiming(const std::string &runDir, std::vector<EpochMetrics> &epochs)
{
    std::string text;
    try {
        text = readFile(runDir + "/timing.csv", kMaxTableBytes);
    } catch (const std::exception &) {
        return;
    }
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    if (line != RunRecord::timingHeader())
        return;
    while (std::getline(in, line)) {
        std::string_view fields[7];
        std::size_t count = 0, from = 0;
        for (; count < 7 && from <= line.size(); ++count) {
            const std::size_t comma = std::min(line.find(',', from), line.size());
            fields[count] = std::string_view(line).substr(from, comma - from);
            from = comma + 1;
        }
        int epoch = 0;
        TimeSplit t;
        if (count != 7 || !parseInt(fields[0], epoch) || !parseInt(fields[1], t.rank) || !parseDouble(fields[2], t.data)
            || !parseDouble(fields[3], t.compute) || !parseDouble(fields[4], t.allreduce)
            || !parseDouble(fields[5], t.optimizer) || !parseDouble(fields[6], t.other))
            continue;
        for (EpochMetrics &m : epochs) {
            if (m.epoch == epoch)
                m.time.push_back(t);
        }
    }
}

std::vector<RunSummary> listRuns(const std::string &runsDir)
{
    std::vector<RunSummary> runs;
    std::error_code ec;
    const fs::file_status status = fs::status(runsDir, ec);
    if (!fs::exists(status))
        return runs;
    if (!fs::is_directory(status))
        throw std::runtime_error(runsDir + ": not a folder, so it cannot hold runs");
    for (const auto &entry : fs::directory_iterator(runsDir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(kCreatingPrefix, 0) == 0)
            continue;
        std::error_code own;
        const bool link = entry.is_symlink(own);
        if (!entry.is_directory(own) || !fs::exists(entry.path() / "summary.json", own))
            continue;
        RunSummary s;
        s.dir = entry.path().string();
        s.name = name;
        s.status = "unreadable";
        if (link) {
            // Listed, not followed: what the link leads to is not this runs folder's to read or delete.
            s.error = s.dir + ": is a symbolic link to " + fs::read_symlink(entry.path(), own).string()
                      + "; TrainLab does not follow links out of the runs folder";
        } else {
            try {
                s = readRunSummary(s.dir);
            } catch (const std::exception &e) {
                s.error = e.what();   // listed with its problem; the folder stays for the user to inspect
            }
        }
        runs.push_back(std::move(s));
    }
    std::sort(runs.begin(), runs.end(), [](const RunSummary &a, const RunSummary &b) {
        return a.startTime != b.startTime ? a.startTime > b.startTime : a.dir > b.dir;
    });
    return runs;
}

} // namespace trainlab
