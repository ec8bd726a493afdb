#include "core/train/schedule.h"

#include <algorithm>
#include <cmath>

namespace trainlab {

namespace {

constexpr double kPi = 3.14159265358979323846;

// From `from` at progress 0 to `to` at progress 1 along half a cosine (PyTorch's _annealing_cos).
double cosineBetween(double from, double to, double progress)
{
    return to + (from - to) / 2.0 * (std::cos(kPi * std::clamp(progress, 0.0, 1.0)) + 1.0);
}

} // namespace

double learningRateAt(const ExperimentConfig &config, std::int64_t step, std::int64_t stepsPerEpoch)
{
    const ScheduleConfig &s = config.schedule;
    const double base = config.learningRate;
    const std::int64_t total = std::max<std::int64_t>(1, static_cast<std::int64_t>(config.epochs) * stepsPerEpoch);
    step = std::clamp<std::int64_t>(step, 0, total - 1);
    if (s.kind == "one_cycle") {
        // OneCycleLR's defaults: from lr/25 up to lr, then down to lr/25/1e4.
        const double initial = base / 25.0, final = initial / 1e4;
        const double up = std::max(1.0, std::round(s.pctStart * static_cast<double>(total)) - 1.0);
        const double t = static_cast<double>(step);
        if (t <= up)
            return cosineBetween(initial, base, t / up);
        return cosineBetween(base, final, (t - up) / std::max(1.0, static_cast<double>(total - 1) - up));
    }
    const std::int64_t warmup = static_cast<std::int64_t>(std::llround(s.warmupEpochs * static_cast<double>(stepsPerEpoch)));
    if (step < warmup)
        return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
    if (s.kind == "step")
        return base * std::pow(s.stepFactor, static_cast<double>(step / (static_cast<std::int64_t>(s.stepEpochs) * stepsPerEpoch)));
    if (s.kind == "cosine")
        return cosineBetween(base, 0.0, static_cast<double>(step - warmup) / static_cast<double>(std::max<std::int64_t>(1, total - warmup)));
    return base;
}

int earlyStopBestEpoch(const std::vector<double> &testAcc, const EarlyStoppingConfig &early)
{
    if (early.patience <= 0 || testAcc.empty())
        return 0;
    double best = testAcc.front();
    int bestEpoch = 1;
    for (std::size_t i = 1; i < testAcc.size(); ++i) {
        if (testAcc[i] > best + early.minDelta) {
            best = testAcc[i];
            bestEpoch = static_cast<int>(i) + 1;
        }
    }
    return static_cast<int>(testAcc.size()) - bestEpoch >= early.patience ? bestEpoch : 0;
}

} // namespace trainlab
