#pragma once

#include "core/monitor/devicemonitor.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

// Where one rank's training time of an epoch went, by the host's steady clock (seconds). other is the rest of
// the epoch (zeroing, reading the step's slots, progress), so the parts sum to the epoch's time.
struct TimeSplit
{
    int rank = 0;
    double data = 0.0;          // batch preparation: index, convert, copy
    double compute = 0.0;       // forward and backward
    double allreduce = 0.0;     // the gradients' all-reduce, waiting for the other ranks included
    double optimizer = 0.0;     // the SGD update
    double other = 0.0;
    double total() const { return data + compute + allreduce + optimizer + other; }
    // The parts only: sums and means over ranks or epochs keep the rank of the left side.
    TimeSplit &operator+=(const TimeSplit &t)
    {
        data += t.data;
        compute += t.compute;
        allreduce += t.allreduce;
        optimizer += t.optimizer;
        other += t.other;
        return *this;
    }
    TimeSplit &operator/=(double n)
    {
        data /= n;
        compute /= n;
        allreduce /= n;
        optimizer /= n;
        other /= n;
        return *this;
    }
};

struct EpochMetrics
{
    int epoch = 0;
    double trainLoss = 0.0;
    double trainAcc = 0.0;
    double testAcc = 0.0;
    double seconds = 0.0;               // the training loop only, as d2l's Timer
    double imagesPerSecond = 0.0;
    // This node's ranks; empty where the host clock cannot see the work (CUDA runs asynchronously).
    std::vector<TimeSplit> time;
    double learningRate = 0.0;          // at the epoch's first step; 0 where unknown (an older record)
    // This node's devices over the epoch (devices.csv), where its record samples them; empty elsewhere.
    std::vector<DeviceEpochStats> devices;
    // The warm-up (speed.warmup) just before this epoch, the first of a session: its slowest replica on this node.
    // In no epoch's seconds; 0 where none ran.
    double warmupSeconds = 0.0;
    // The mean global gradient norm (before any clipping) over the epoch's steps; 0 where not measured (a run
    // recorded before metrics.csv kept it).
    double gradNorm = 0.0;
};

struct RunInfo
{
    std::vector<std::string> devices;   // the whole world, node by node
    int worldSize = 1;
    std::int64_t trainSize = 0;
    std::int64_t testSize = 0;
    std::int64_t parameterCount = 0;
    int epochs = 0;
    int epochsDone = 0;                 // a resumed run: the epochs already done before this session
    std::vector<EpochMetrics> doneMetrics;    // and their metrics, for the chart
    std::int64_t batchesPerEpoch = 0;
    std::string runDir;                 // empty when this node keeps no record
};

struct BatchProgress
{
    int epoch = 0;                      // 1-based
    int epochs = 0;
    std::int64_t batch = 0;             // 1-based
    std::int64_t batches = 0;
    double loss = 0.0;                  // running mean over the epoch so far
    double imagesPerSecond = 0.0;       // whole world
};

enum class RunStatus { Completed, Stopped, Failed };
const char *toString(RunStatus status);

struct RunResult
{
    RunStatus status = RunStatus::Failed;
    std::string error;
    std::string note;                   // a completed run's remark: "stopped early at epoch 7 (best 4)"
    std::string runDir;
    std::vector<EpochMetrics> epochs;
    double bestTestAcc = 0.0;
    int bestEpoch = 0;
    double meanEpochSeconds = 0.0;

    // Sets the best epoch (the first of equals) and the mean seconds from epochs; summary.json says the same.
    void summarize();
};

// Receives a run's events on the training thread; onBatch may return false to ask for a stop.
class TrainingObserver
{
public:
    virtual ~TrainingObserver() = default;
    virtual void onRunStarted(const RunInfo &) {}
    virtual bool onBatch(const BatchProgress &) { return true; }
    virtual void onEpoch(const EpochMetrics &) {}
    virtual void onLog(const std::string &) {}
    // Exactly one call per run, last.
    virtual void onFinished(const RunResult &) {}
};

// Set from any thread; the run stops within one batch.
using StopFlag = std::atomic<bool>;

} // namespace trainlab
