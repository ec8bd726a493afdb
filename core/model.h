#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <cstdint>

namespace trainlab {

// d2l's ResNet-18 for small images: 3x3 stem without max-pool, four stages of two residual blocks.
torch::nn::Sequential makeResNet18(int inChannels, int numClasses);
// d2l's init: N(0, 0.01) on the weights of every Conv2d and Linear.
void initD2lWeights(torch::nn::Module &model);
std::int64_t parameterCount(const torch::nn::Module &model);

} // namespace trainlab
