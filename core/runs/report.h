#pragma once

#include "core/config.h"
#include "core/train/observer.h"

#include <optional>
#include <string>
#include <vector>

namespace trainlab {

// The lines a run prints, shared by the CLI and the desktop log so both read the same.
std::string deviceList(const std::vector<std::string> &devices);
std::string runStartedLine(const RunInfo &info);
std::string epochLine(const EpochMetrics &metrics, int epochs);
// "time  compute 81%  allreduce 14%  optimizer 3%  data 1%  other 1%" over this node's ranks; "" when not measured.
std::string timeSharesLine(const EpochMetrics &metrics);
std::vector<std::string> finishedLines(const RunResult &result, const std::string &deviceList);

// DAWNBench's measure: the training seconds of the epochs up to the first whose test accuracy is at or above
// target, and that epoch; nullopt when no epoch reached it.
struct TargetReached
{
    int epoch = 0;
    double seconds = 0.0;
};
std::optional<TargetReached> timeToTarget(const std::vector<EpochMetrics> &epochs, double target);
constexpr double kDefaultTargetAccuracy = 0.90;
// "41.2 s (epoch 3)", or "-" when not reached.
std::string formatTimeToTarget(const std::optional<TargetReached> &reached);

// What a config changes in how the model learns from the chapter's recipe (fp32, the d2l init, plain SGD without
// momentum or weight decay, a constant rate, no augmentation), shortly: "bf16, kaiming init, momentum 0.9,
// wd 0.0005, cosine, crop 4, flip"; "d2l" when nothing. Batch size, rate and epochs are left to their own columns.
std::string recipeText(const ExperimentConfig &config);

} // namespace trainlab
