#pragma once

#include "core/config.h"
#include "core/train/observer.h"

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

// What a checkpoint says about the run it belongs to, beside the weights and the optimizer state.
struct CheckpointInfo
{
    static constexpr int kFormatVersion = 2;

    int formatVersion = kFormatVersion;
    int epoch = 0;                          // the last complete epoch the weights are from
    std::uint64_t seed = 0;
    std::string config;                     // the run's configuration as JSON, epochs left out
    std::string configHash;                 // FNV-1a of config
    std::vector<EpochMetrics> metrics;      // epochs 1..epoch, so the run record can be rebuilt from it
};

// The configuration a checkpoint is bound to: the experiment's JSON without `epochs`, which may grow, `speed`
// (how steps run, not what they compute) and `tensorboard` (what else is written).
std::string checkpointConfigJson(const std::string &configJson);
// A checkpoint's bound configuration as this TrainLab writes it: keys added since (at their defaults) make an older
// checkpoint no different.
std::string currentBoundConfig(const std::string &checkpointConfig);
std::string fnv1aHex(const std::string &data);

// Serialised in memory, so a full disk surfaces as an error from writeFileAtomic rather than as an
// exception thrown from PyTorchStreamWriter's destructor (which terminates the process).
// ema: the weights' moving average (ema_decay), kept beside them as "ema" where given.
std::string serializeCheckpoint(torch::nn::Module &model, torch::optim::Optimizer &optimizer, const CheckpointInfo &info,
                                torch::nn::Module *ema = nullptr);
// Atomic (temporary file, fsync, rename); throws naming the file.
void saveCheckpoint(const std::string &path, torch::nn::Module &model, torch::optim::Optimizer &optimizer,
                    const CheckpointInfo &info);

// origin names the file in errors. Throws "<origin>: not a TrainLab checkpoint: ..." for anything unreadable.
CheckpointInfo readCheckpointInfo(const std::string &bytes, const std::string &origin);
// Loads the weights (and the optimizer state, and the moving average, when given) onto device; returns the
// checkpoint's info. A checkpoint without the moving average asked for is refused.
CheckpointInfo loadCheckpointBytes(const std::string &bytes, const std::string &origin, torch::nn::Module &model,
                                   torch::optim::Optimizer *optimizer, const torch::Device &device = torch::kCPU,
                                   torch::nn::Module *ema = nullptr);
CheckpointInfo loadCheckpoint(const std::string &path, torch::nn::Module &model,
                              torch::optim::Optimizer *optimizer = nullptr);
// The weights the run evaluated, for evaluate, classify and export: the moving average where the run kept one
// (ema_decay), else the trained weights.
CheckpointInfo loadEvaluatedWeights(const std::string &path, torch::nn::Module &model);

} // namespace trainlab
