#include "core/sweeps/queue.h"

#include "core/runs/runrecord.h"
#include "core/runs/runstorage.h"
#include "core/util/atomicfile.h"
#include "core/util/jsonread.h"
#include "core/util/numtext.h"
#include "core/util/paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iterator>

namespace trainlab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kStateVersion = 1;

const char *const kStates[] = {"waiting", "running", "completed", "stopped", "failed", "pruned"};

EntryState stateFromString(const std::string &text, const std::string &origin)
{
    for (int i = 0; i < static_cast<int>(std::size(kStates)); ++i) {
        if (text == kStates[i])
            return static_cast<EntryState>(i);
    }
    throw ConfigError(origin + ": unknown entry state \"" + text + "\"");
}

json tagJson(const SweepTag &tag)
{
    json values = json::array();
    for (const auto &[axis, value] : tag.values)
        values.push_back({axis, value});
    return {{"id", tag.id}, {"index", tag.index}, {"count", tag.count}, {"values", values}};
}

// An integer field within [min, max] (absent: fallback); a float, a huge value or a wrong type is refused by
// name rather than converted (1e33 into an int is undefined behaviour).
int intField(const json &j, const char *key, int fallback, int min, int max, const std::string &where = {})
{
    const auto it = j.find(key);
    if (it == j.end())
        return fallback;
    int value = 0;
    if (!it->is_number_integer() || !detail::fitsInto(*it, value) || value < min || value > max)
        throw ConfigError((where.empty() ? "" : where + ": ") + key + ": must be an integer from " + std::to_string(min) + " to "
                          + std::to_string(max) + ", got " + detail::describe(*it));
    return value;
}

SweepTag tagFromJson(const json &j)
{
    SweepTag tag;
    tag.id = j.value("id", "");
    tag.index = intField(j, "index", -1, -1, 1 << 20);
    tag.count = intField(j, "count", 0, 0, 1 << 20);
    for (const auto &pair : j.value("values", json::array()))
        tag.values.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
    return tag;
}

double meanImagesPerSecond(const std::vector<EpochMetrics> &epochs)
{
    double sum = 0.0;
    for (const auto &m : epochs)
        sum += m.imagesPerSecond;
    return epochs.empty() ? 0.0 : sum / static_cast<double>(epochs.size());
}

// The run folder a killed queue had started for a tagged entry before it could note its path.
std::string findTaggedRun(const std::string &runsDir, const SweepTag &tag)
{
    if (tag.empty())
        return {};
    for (const RunSummary &s : listRuns(runsDir)) {
        if (s.sweep.id == tag.id && s.sweep.index == tag.index)
            return s.dir;
    }
    return {};
}

// Passes every event on, notes the run folder in the queue as soon as it exists, and asks for a stop at the
// next batch once the sweep's pruning rule says so.
class EntryObserver : public TrainingObserver
{
public:
    EntryObserver(QueueObserver &inner, Queue &queue, std::size_t index)
        : m_inner(inner), m_queue(queue), m_index(index)
    {}
    void onRunStarted(const RunInfo &info) override
    {
        if (!info.runDir.empty())
            m_queue.setRunDir(m_index, info.runDir);
        m_inner.onRunStarted(info);
    }
    bool onBatch(const BatchProgress &p) override { return m_inner.onBatch(p) && m_pruneReason.empty(); }
    void onEpoch(const EpochMetrics &m) override
    {
        m_inner.onEpoch(m);
        if (m_pruneReason.empty()) {
            m_pruneReason = m_queue.pruneReason(m_index, m);
            if (!m_pruneReason.empty())
                m_inner.onLog("queue: pruning run " + std::to_string(m_index + 1) + ": " + m_pruneReason);
        }
    }
    void onLog(const std::string &line) override { m_inner.onLog(line); }
    void onFinished(const RunResult &r) override { m_inner.onFinished(r); }
    const std::string &pruneReason() const { return m_pruneReason; }

private:
    QueueObserver &m_inner;
    Queue &m_queue;
    std::size_t m_index;
    std::string m_pruneReason;
};

} // namespace

const char *toString(EntryState state)
{
    return kStates[static_cast<int>(state)];
}

Queue::Queue(std::string stateFile)
    : m_stateFile(std::move(stateFile))
{}

Queue Queue::load(const std::string &stateFile)
{
    Queue q(stateFile);
    json j;
    try {
        j = json::parse(readFile(stateFile, kMaxTableBytes));
        if (!j.is_object() || intField(j, "schema_version", 0, 0, 1 << 20, stateFile) != kStateVersion)
            throw ConfigError(stateFile + ": schema_version must be " + std::to_string(kStateVersion));
        q.m_sweepId = j.value("sweep_id", "");
        q.m_stopOnFailure = j.value("stop_on_failure", false);
        const json &entries = j.at("entries");
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const json &e = entries[i];
            const std::string where = stateFile + ": entries[" + std::to_string(i) + "]";
            QueueEntry entry;
            entry.config = ExperimentConfig::fromJson(e.at("config").dump(), where + ".config");
            try {
                entry.tag = tagFromJson(e.value("tag", json::object()));
            } catch (const ConfigError &bad) {
                throw ConfigError(where + ".tag." + bad.what());
            }
            entry.state = stateFromString(e.value("state", "waiting"), where);
            entry.runDir = e.value("run_dir", "");
            entry.error = e.value("error", "");
            entry.notes = e.value("notes", "");
            if (const auto prune = e.find("prune"); prune != e.end() && prune->is_object()) {
                entry.prune.rule = prune->value("rule", "");
                entry.prune.startupRuns = intField(*prune, "startup_runs", 3, 1, SweepConfig::kMaxRuns, where + ".prune");
                entry.prune.minEpochs = intField(*prune, "min_epochs", 1, 1, 100000, where + ".prune");
                entry.prune.percentile = prune->value("percentile", PruneRule{}.percentile);
                entry.prune.minTestAcc = prune->value("min_test_acc", PruneRule{}.minTestAcc);
                if (const auto problems = entry.prune.problems(); !problems.empty())
                    throw ConfigError(where + ".prune." + problems.front());
            }
            entry.epochsDone = intField(e, "epochs_done", 0, 0, 100000, where);
            entry.bestTestAcc = e.value("best_test_acc", 0.0);
            entry.meanEpochSeconds = e.value("mean_epoch_seconds", 0.0);
            entry.imagesPerSecond = e.value("images_per_second", 0.0);
            entry.wallSeconds = e.value("wall_seconds", 0.0);
            if (!entry.runDir.empty()) {
                try {
                    entry.metrics = readMetrics(entry.runDir);
                    readTiming(entry.runDir, entry.metrics);
                } catch (const std::exception &) {
                    entry.metrics.clear();   // a folder the user deleted: the entry keeps its figures
                }
            }
            q.m_entries.push_back(std::move(entry));
        }
    } catch (const json::exception &e) {
        throw ConfigError(stateFile + ": not a TrainLab queue file: " + e.what());
    } catch (const std::runtime_error &e) {
        if (dynamic_cast<const ConfigError *>(&e))
            throw;
        throw ConfigError(e.what());
    }
    return q;
}

void Queue::setStopOnFailure(bool on)
{
    m_stopOnFailure = on;
    changed();
}

void Queue::setSweepId(const std::string &id)
{
    m_sweepId = id;
    changed();
}

void Queue::add(QueueEntry entry)
{
    m_entries.push_back(std::move(entry));
    changed();
}

void Queue::addSweep(const SweepConfig &sweep, const std::string &sweepId, const std::string &notes)
{
    for (PlannedRun &run : planSweep(sweep)) {
        QueueEntry entry;
        entry.config = std::move(run.config);
        entry.tag = std::move(run.tag);
        entry.tag.id = sweepId;
        entry.prune = sweep.pruning;
        entry.notes = notes;
        m_entries.push_back(std::move(entry));
    }
    if (m_sweepId.empty())
        m_sweepId = sweepId;
    m_stopOnFailure = m_stopOnFailure || sweep.stopOnFailure;
    changed();
}

bool Queue::remove(std::size_t i)
{
    if (i >= m_entries.size() || m_entries[i].state == EntryState::Running)
        return false;
    m_entries.erase(m_entries.begin() + static_cast<long>(i));
    changed();
    return true;
}

bool Queue::move(std::size_t from, std::size_t to)
{
    if (from >= m_entries.size() || to >= m_entries.size() || m_entries[from].state != EntryState::Waiting)
        return false;
    QueueEntry entry = std::move(m_entries[from]);
    m_entries.erase(m_entries.begin() + static_cast<long>(from));
    m_entries.insert(m_entries.begin() + static_cast<long>(to), std::move(entry));
    changed();
    return true;
}

void Queue::clearFinished()
{
    std::vector<QueueEntry> kept;
    for (auto &e : m_entries) {
        if (e.state != EntryState::Completed && e.state != EntryState::Failed && e.state != EntryState::Pruned)
            kept.push_back(std::move(e));
    }
    m_entries = std::move(kept);
    changed();
}

bool Queue::resumes(std::size_t i) const
{
    const QueueEntry &e = m_entries.at(i);
    return (e.state == EntryState::Running || e.state == EntryState::Stopped) && !e.runDir.empty();
}

int Queue::next() const
{
    if (m_failureStopped)
        return -1;
    for (std::size_t i = 0; i < m_entries.size(); ++i) {
        if (m_entries[i].state == EntryState::Running || m_entries[i].state == EntryState::Stopped)
            return static_cast<int>(i);
    }
    for (std::size_t i = 0; i < m_entries.size(); ++i) {
        if (m_entries[i].state == EntryState::Waiting)
            return static_cast<int>(i);
    }
    return -1;
}

void Queue::markStarted(std::size_t i)
{
    m_entries.at(i).state = EntryState::Running;
    m_entries.at(i).error.clear();
    m_entries.at(i).startedAt = std::chrono::steady_clock::now();
    changed();
}

void Queue::setRunDir(std::size_t i, const std::string &runDir)
{
    m_entries.at(i).runDir = runDir;
    changed();
}

void Queue::markFinished(std::size_t i, const RunResult &r)
{
    record(i, r);
    changed();
}

void Queue::record(std::size_t i, const RunResult &r)
{
    QueueEntry &e = m_entries.at(i);
    e.state = r.status == RunStatus::Completed ? EntryState::Completed
              : r.status == RunStatus::Stopped ? EntryState::Stopped
                                                : EntryState::Failed;
    if (!r.runDir.empty())
        e.runDir = r.runDir;
    e.error = r.error;
    e.metrics = r.epochs;
    e.epochsDone = static_cast<int>(r.epochs.size());
    e.bestTestAcc = r.bestTestAcc;
    e.meanEpochSeconds = r.meanEpochSeconds;
    e.imagesPerSecond = meanImagesPerSecond(r.epochs);
    if (e.startedAt != std::chrono::steady_clock::time_point{}) {
        e.wallSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - e.startedAt).count();
        e.startedAt = {};
    }
    if (e.state == EntryState::Failed && m_stopOnFailure)
        m_failureStopped = true;
}

std::string Queue::pruneReason(std::size_t i, const EpochMetrics &m) const
{
    const QueueEntry &e = m_entries.at(i);
    if (!e.prune.on() || e.tag.empty() || m.epoch < e.prune.minEpochs || m.epoch >= e.config.epochs)
        return {};
    // A threshold reads no other run.
    if (!e.prune.comparesRuns())
        return e.prune.reason(m.epoch, m.testAcc, {});
    std::vector<double> others;
    for (std::size_t k = 0; k < m_entries.size(); ++k) {
        const QueueEntry &o = m_entries[k];
        if (k == i || o.tag.id != e.tag.id)
            continue;
        for (const EpochMetrics &om : o.metrics) {
            if (om.epoch == m.epoch)
                others.push_back(om.testAcc);
        }
    }
    return e.prune.reason(m.epoch, m.testAcc, std::move(others));
}

void Queue::markPruned(std::size_t i, const RunResult &r, const std::string &reason)
{
    record(i, r);
    QueueEntry &e = m_entries.at(i);
    e.state = EntryState::Pruned;
    e.error = reason;
    if (!e.runDir.empty()) {
        // The History shows it beside the run; a note the person wrote stays first.
        try {
            const std::string notes = readRunNotes(e.runDir);
            writeRunNotes(e.runDir, (notes.empty() ? "" : notes + "\n") + "pruned by its sweep: " + reason);
        } catch (const std::exception &) {
            // notes that cannot be read or written leave the reason in the queue only
        }
    }
    changed();
}

std::optional<Queue::Estimate> Queue::estimate() const
{
    double seconds = 0.0;
    long long epochs = 0;
    Estimate e;
    for (const QueueEntry &q : m_entries) {
        // Wall time where the queue measured it; never less than the epochs' own training seconds (a run found
        // completed in its folder after a kill took no time in this session).
        double training = 0.0;
        for (const EpochMetrics &m : q.metrics)
            training += std::max(0.0, m.seconds);
        if (q.epochsDone > 0 && std::max(q.wallSeconds, training) > 0) {
            seconds += std::max(q.wallSeconds, training);
            epochs += q.epochsDone;
        }
        if (q.state == EntryState::Waiting || q.state == EntryState::Running || q.state == EntryState::Stopped) {
            ++e.runsLeft;
            e.epochsLeft += std::max(0, q.config.epochs - q.epochsDone);
            e.mayPrune = e.mayPrune || q.prune.on();
        }
    }
    if (epochs == 0 || e.epochsLeft == 0)
        return std::nullopt;
    e.secondsPerEpoch = seconds / static_cast<double>(epochs);
    e.seconds = e.secondsPerEpoch * static_cast<double>(e.epochsLeft);
    return e;
}

std::string Queue::Estimate::text() const
{
    const double minutes = seconds / 60.0;
    const std::string about = seconds < 90.0   ? formatFixed(seconds, 0) + " s"
                              : minutes < 90.0 ? formatFixed(minutes, 0) + " min"
                                               : formatFixed(minutes / 60.0, 1) + " h";
    return std::to_string(runsLeft) + (runsLeft == 1 ? " run" : " runs") + " left, " + (mayPrune ? "at most " : "")
           + "about " + about + " (at " + formatFixed(secondsPerEpoch, 1) + " s per epoch so far)";
}

bool Queue::requeue(std::size_t i)
{
    QueueEntry &e = m_entries.at(i);
    if (e.state != EntryState::Failed && e.state != EntryState::Stopped && e.state != EntryState::Completed
        && e.state != EntryState::Pruned)
        return false;
    e.state = EntryState::Waiting;
    e.runDir.clear();
    e.error.clear();
    e.metrics.clear();
    e.epochsDone = 0;
    e.bestTestAcc = e.meanEpochSeconds = e.imagesPerSecond = e.wallSeconds = 0.0;
    m_failureStopped = false;
    changed();
    return true;
}

void Queue::changed() const
{
    if (m_stateFile.empty())
        return;
    try {
        save();
        m_saveError.clear();
    } catch (const std::exception &e) {
        m_saveError = e.what();
    }
}

void Queue::save() const
{
    json entries = json::array();
    for (const QueueEntry &e : m_entries) {
        entries.push_back({
            {"config", json::parse(e.config.toJson())},
            {"tag", tagJson(e.tag)},
            {"state", toString(e.state)},
            {"run_dir", e.runDir},
            {"error", e.error},
            {"notes", e.notes},
            {"prune", e.prune.on() ? json::parse(e.prune.toJson()) : json(nullptr)},
            {"epochs_done", e.epochsDone},
            {"best_test_acc", e.bestTestAcc},
            {"mean_epoch_seconds", e.meanEpochSeconds},
            {"images_per_second", e.imagesPerSecond},
            {"wall_seconds", e.wallSeconds},
        });
    }
    const json j = {{"schema_version", kStateVersion}, {"sweep_id", m_sweepId},
                    {"stop_on_failure", m_stopOnFailure}, {"entries", entries}};
    std::error_code ec;
    fs::create_directories(fs::path(m_stateFile).parent_path(), ec);
    writeFileAtomic(m_stateFile, j.dump(1) + "\n");
}

void runQueue(Queue &queue, QueueObserver &observer, const StopFlag &stop, const RunOptions &options)
{
    const std::string runsDir = options.runsDir.empty() ? defaultRunsDir() : options.runsDir;
    for (int i = queue.next(); i >= 0 && !stop.load(); i = queue.next()) {
        const auto at = static_cast<std::size_t>(i);
        RunOptions o = options;
        o.runsDir = runsDir;
        o.tag = queue.at(at).tag;
        if (!queue.at(at).notes.empty())
            o.notes = queue.at(at).notes;
        std::string dir = queue.at(at).runDir;
        if (dir.empty() && queue.at(at).state == EntryState::Running)
            dir = findTaggedRun(runsDir, o.tag);
        queue.markStarted(at);
        if (!dir.empty())
            queue.setRunDir(at, dir);
        observer.onEntryStarted(at, queue.at(at));
        EntryObserver forward(observer, queue, at);
        RunResult r;
        try {
            const RunSummary summary = dir.empty() ? RunSummary{} : readRunSummary(dir);
            if (!dir.empty() && summary.status == "completed") {
                // Killed after the run ended but before the queue noted it: nothing to train.
                r.status = RunStatus::Completed;
                r.runDir = dir;
                r.epochs = readMetrics(dir);
                r.summarize();
                observer.onFinished(r);
            } else if (!dir.empty()) {
                observer.onLog("queue: resuming " + dir);
                r = resumeRun(dir, forward, stop, o);
            } else {
                r = runExperiment(queue.at(at).config, forward, stop, o);
            }
        } catch (const std::exception &e) {
            r.status = RunStatus::Failed;
            r.error = e.what();
            r.runDir = dir;
            observer.onFinished(r);
        }
        if (!forward.pruneReason().empty() && r.status == RunStatus::Stopped && !stop.load())
            queue.markPruned(at, r, forward.pruneReason());
        else
            queue.markFinished(at, r);
        if (!queue.saveError().empty())
            observer.onLog("queue: cannot save its state: " + queue.saveError());
        observer.onEntryFinished(at, queue.at(at));
    }
}

std::string newSweepId(const std::string &runsDir, const std::string &name)
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    const std::string base = std::string(stamp) + "-" + RunRecord::safeName(name);
    std::error_code ec;
    for (int n = 1;; ++n) {
        const std::string id = n == 1 ? base : base + "-" + std::to_string(n);
        if (!fs::exists(sweepDir(runsDir, id), ec))
            return id;
    }
}

std::string sweepDir(const std::string &runsDir, const std::string &sweepId)
{
    return (fs::path(runsDir) / "sweeps" / sweepId).string();
}

} // namespace trainlab
