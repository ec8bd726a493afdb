#pragma once

#include "core/config.h"
#include "core/train/observer.h"

#include <functional>
#include <string>
#include <vector>

namespace trainlab {

// The learning-rate range test (Smith 2017, fastai's lr_find): steps of the config's training at a rate rising
// geometrically from minLr to maxLr, the loss of each step recorded, stopped once it diverges.
struct LrFinderOptions
{
    double minLr = 1e-5;
    double maxLr = 10.0;
    int steps = 100;
    // Stop when the smoothed loss exceeds this many times its lowest so far (after the first tenth of the steps).
    double divergeFactor = 4.0;
};

struct LrFinderPoint
{
    int step = 0;               // 1-based
    double learningRate = 0.0;
    double loss = 0.0;          // this step's batch, before its update
    double smoothed = 0.0;      // exponential mean (0.98), bias-corrected
};

struct LrFinderResult
{
    std::vector<LrFinderPoint> points;
    std::string error;          // empty when the test ran (stopped or not)
    bool stopped = false;       // by the stop flag
    bool diverged = false;
    double lowestLossLr = 0.0;  // the rate at the lowest smoothed loss
    // A tenth of lowestLossLr: where the loss still falls fast, an order of magnitude below where it turns (Smith's
    // rule, fastai's lr_min; the smoothing's lag puts the lowest point late, which the tenth makes up for). 0 when too
    // few steps ran to say.
    double suggestedLr = 0.0;
};

// Problems with options, each "field: what is wrong, got value"; empty when valid.
std::vector<std::string> validateLrFinder(const LrFinderOptions &options);
// Runs the test on config's first device with its model, init, seed, momentum, weight decay, label smoothing and
// precision (no augmentation, no schedule: the rate is the test's). Each step is the run's: the global batch split
// into the shares its devices would take, one share after another, their gradients summed. The weights are thrown
// away; nothing is written. Never throws: the result's error says what went wrong. progress is called after each step.
LrFinderResult findLearningRate(const ExperimentConfig &config, const LrFinderOptions &options, const StopFlag &stop,
                                const std::function<void(const LrFinderPoint &)> &progress = {});
// The suggestion and the lowest-loss rate from a curve (exposed for tests).
void suggestLearningRate(LrFinderResult &result);
// How the test ended and what it suggests, one sentence for the CLI and the window: "the loss diverged after 52
// steps; lowest smoothed loss at lr 0.0732: suggested learning rate 0.0073 (a tenth of it)".
std::string lrFinderSummary(const LrFinderResult &result);
// "step,learning_rate,loss,smoothed_loss" and one row per point.
std::string lrFinderCsv(const LrFinderResult &result);

} // namespace trainlab
