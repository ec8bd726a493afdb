#pragma once

#include "core/config.h"
#include "core/train/checkpoint.h"

#include <torch/nn/modules/container/sequential.h>

#include <string>

namespace trainlab {

// A finished or stopped run's model as its checkpoint left it, on the CPU, in eval mode.
struct RunModel
{
    ExperimentConfig config;
    torch::nn::Sequential model{nullptr};
    CheckpointInfo info;
    std::string checkpointPath;     // best.pt or checkpoint.pt
};

// which: "best", "last" or "" (best.pt where the run has one). Throws naming the file or field at fault.
RunModel loadRunModel(const std::string &runDir, const std::string &which);

} // namespace trainlab
