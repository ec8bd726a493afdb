#pragma once

#include "core/config.h"

#include <cstdint>
#include <vector>

namespace trainlab {

// The learning rate at global step `step` (0-based, counted over the whole run) of config's schedule, for a run of
// config.epochs epochs of stepsPerEpoch steps: a function of the step alone, so a resumed run follows it exactly.
double learningRateAt(const ExperimentConfig &config, std::int64_t step, std::int64_t stepsPerEpoch);

// Whether early stopping ends the run after these epochs' test accuracies: the best epoch (1-based) when it does,
// else 0. An epoch improves on the best only by more than min_delta.
int earlyStopBestEpoch(const std::vector<double> &testAcc, const EarlyStoppingConfig &early);

} // namespace trainlab
