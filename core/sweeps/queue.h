#pragma once

#include "core/config.h"
#include "core/sweeps/sweep.h"
#include "core/train/observer.h"
#include "core/train/trainer.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace trainlab {

// waiting: not started yet; running: started (a killed queue finds it so and resumes it); pruned: stopped by its
// sweep's pruning rule, kept and never resumed by the queue.
enum class EntryState { Waiting, Running, Completed, Stopped, Failed, Pruned };
const char *toString(EntryState state);

struct QueueEntry
{
    ExperimentConfig config;
    SweepTag tag;
    EntryState state = EntryState::Waiting;
    std::string runDir;           // set once the run's folder exists
    std::string error;            // why it failed, or why it was pruned
    PruneRule prune;              // its sweep's
    std::string notes;            // the person's notes for the run it starts (its notes.txt), given with its sweep
    int epochsDone = 0;
    double bestTestAcc = 0.0;
    double meanEpochSeconds = 0.0;
    double imagesPerSecond = 0.0; // mean over its epochs, whole world
    // From start to finish in the queue, setup and evaluation included, over every session of its run.
    double wallSeconds = 0.0;
    std::vector<EpochMetrics> metrics;
    std::chrono::steady_clock::time_point startedAt;   // this session's start; not kept
};

// An ordered list of experiments run one after another, never two at once. Optionally kept in a state file
// (rewritten atomically on every change) so that a killed queue can go on where it stopped.
// Not thread-safe: one thread (the CLI's, or the GUI's) owns it; runs report back to that thread.
class Queue
{
public:
    explicit Queue(std::string stateFile = {});
    // Reads a state file; an entry found running is looked up in its folder and resumed from there.
    static Queue load(const std::string &stateFile);

    const std::vector<QueueEntry> &entries() const { return m_entries; }
    const QueueEntry &at(std::size_t i) const { return m_entries.at(i); }
    std::size_t size() const { return m_entries.size(); }
    const std::string &stateFile() const { return m_stateFile; }
    bool stopOnFailure() const { return m_stopOnFailure; }
    void setStopOnFailure(bool on);
    // The sweep the entries came from, when one did.
    const std::string &sweepId() const { return m_sweepId; }
    void setSweepId(const std::string &id);

    void add(QueueEntry entry);
    // Adds a sweep's planned runs, each tagged with sweepId and given the notes.
    void addSweep(const SweepConfig &sweep, const std::string &sweepId, const std::string &notes = {});
    // Any entry but the running one may be removed (a finished run's folder stays); false otherwise.
    bool remove(std::size_t i);
    // Only entries that have not started may be moved; false otherwise.
    bool move(std::size_t from, std::size_t to);
    void clearFinished();

    // The next entry to run: a running or stopped one with a folder first (to resume), then the first waiting.
    // -1 when nothing is left, or when a failure stopped the queue.
    int next() const;
    bool hasWork() const { return next() >= 0; }
    void markStarted(std::size_t i);
    void setRunDir(std::size_t i, const std::string &runDir);
    void markFinished(std::size_t i, const RunResult &result);
    // Why entry i should stop after the epoch m under its sweep's pruning rule; "" to go on. It compares m with the
    // same epoch of the sweep's other entries that reached it.
    std::string pruneReason(std::size_t i, const EpochMetrics &m) const;
    // Finished because pruneReason asked it to stop: kept as pruned with the reason, its folder's notes say why.
    void markPruned(std::size_t i, const RunResult &result, const std::string &reason);
    // Back to waiting (a stopped or failed entry the user wants run again from the start).
    bool requeue(std::size_t i);
    // Whether entry i should be resumed from its folder rather than started afresh.
    bool resumes(std::size_t i) const;
    bool failureStopped() const { return m_failureStopped; }

    // What is left (the waiting entries and the rest of a running or stopped one) and how long it should take at the
    // wall seconds per epoch of the runs finished so far (setup and evaluation included; at least their epochs'
    // training seconds); nullopt before an epoch is done or when nothing is left.
    struct Estimate
    {
        int runsLeft = 0;
        long long epochsLeft = 0;
        double seconds = 0.0;
        double secondsPerEpoch = 0.0;
        bool mayPrune = false;      // a left run has a pruning rule: it may end sooner
        // "3 runs left, about 12 min (at 41.0 s per epoch so far)"
        std::string text() const;
    };
    std::optional<Estimate> estimate() const;

    // Throws when the state file cannot be written; every change saves, noting a failure in saveError().
    void save() const;
    const std::string &saveError() const { return m_saveError; }

private:
    // Copies a finished run's outcome into entry i without saving.
    void record(std::size_t i, const RunResult &result);
    void changed() const;

    std::string m_stateFile;
    std::string m_sweepId;
    std::vector<QueueEntry> m_entries;
    bool m_stopOnFailure = false;
    bool m_failureStopped = false;
    mutable std::string m_saveError;
};

class QueueObserver : public TrainingObserver
{
public:
    virtual void onEntryStarted(std::size_t, const QueueEntry &) {}
    virtual void onEntryFinished(std::size_t, const QueueEntry &) {}
};

// Runs the queue's entries in order on the calling thread until none is left or stop is set (the current
// run then ends `stopped`, the rest stay waiting). A failed run is recorded and the queue goes on, unless
// stopOnFailure; a run its sweep prunes stops after that epoch and the queue goes on. Never throws. Each entry is a normal run folder under options.runsDir, tagged with its sweep.
void runQueue(Queue &queue, QueueObserver &observer, const StopFlag &stop, const RunOptions &options = {});

// A new sweep id, "<UTC stamp>-<safe name>[-N]", whose sweepDir does not exist yet.
std::string newSweepId(const std::string &runsDir, const std::string &name);
// <runsDir>/sweeps/<id>: sweep.json (the sweep, base inlined) and queue.json (the queue's state).
std::string sweepDir(const std::string &runsDir, const std::string &sweepId);

} // namespace trainlab
