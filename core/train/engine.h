#pragma once

#include "core/data/dataset.h"
#include "core/train/checkpoint.h"
#include "core/train/observer.h"
#include "core/train/torcherror.h"
#include "core/train/trainer.h"

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <vector>

namespace trainlab {

class RunRecord;

// Everything one node needs to train its local replicas as part of the world.
struct EngineSetup
{
    ExperimentConfig config;
    DataBundle data;
    std::function<torch::nn::Sequential()> makeModel;   // built once, then copied to every replica
    RunOptions options;
    RunRecord *record = nullptr;                        // node 0 only
    // Where a resumed run goes on from (node 0; the other nodes learn it at the rendezvous). No bytes: a new run.
    std::shared_ptr<const std::string> resumeCheckpoint;
    std::string resumeOrigin;                           // the checkpoint's file, for errors
};

struct EngineResult
{
    RunResult result;
    std::vector<torch::nn::Sequential> replicas;        // this node's replicas, for tests and checks
    std::vector<torch::nn::Sequential> averages;        // with ema_decay: their weights' moving averages
    std::string weightsDigest;                          // FNV-1a of rank 0's parameters and buffers
};

// One replica per local device, each on its own thread; gradients all-reduced through c10d.
EngineResult runEngine(EngineSetup setup, TrainingObserver &observer, const StopFlag &stop);
std::string weightsDigest(const torch::nn::Module &model);

} // namespace trainlab
