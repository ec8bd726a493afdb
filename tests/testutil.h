#pragma once

#include "core/train/observer.h"

#include <atomic>
#include <vector>

// Time bounds in tests are for an ordinary build; an ASan/UBSan build starts, allocates and exits slower.
constexpr long long timeLimitMs(long long ms)
{
#ifdef TRAINLAB_SANITIZED
    return 4 * ms;
#else
    return ms;
#endif
}

// Keeps every event a run reports, for the tests to compare with what was written.
class RecordingObserver : public trainlab::TrainingObserver
{
public:
    void onRunStarted(const trainlab::RunInfo &info) override { started = info; ++startedCount; }
    bool onBatch(const trainlab::BatchProgress &p) override
    {
        batches.push_back(p);
        ++batchCount;
        if (stopAfterBatches > 0 && static_cast<int>(batches.size()) >= stopAfterBatches)
            return false;
        return true;
    }
    void onEpoch(const trainlab::EpochMetrics &m) override { epochs.push_back(m); }
    void onLog(const std::string &line) override { logs.push_back(line); }
    void onFinished(const trainlab::RunResult &r) override { result = r; ++finishedCount; }

    trainlab::RunInfo started;
    int startedCount = 0;
    std::vector<trainlab::BatchProgress> batches;
    std::vector<trainlab::EpochMetrics> epochs;
    std::vector<std::string> logs;
    trainlab::RunResult result;
    int finishedCount = 0;
    int stopAfterBatches = 0;
    std::atomic<int> batchCount{0};
};
