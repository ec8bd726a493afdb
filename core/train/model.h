#pragma once

#include "core/config.h"
#include "core/runs/tensorboard.h"

#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

// d2l's ResNet-18 for small images: 3x3 stem without max-pool, four stages of two residual blocks.
torch::nn::Sequential makeResNet18(int inChannels, int numClasses);
// The init the chapter's PyTorch program really applies: N(0, 0.01) on the stem conv and fc weights; the
// residual blocks' convs keep the default (Kaiming-uniform) init, as d2l's lazy layers escape init_weights.
void initD2lWeights(torch::nn::Module &model);
// The first weights by ModelConfig::init's scheme ("d2l", "pytorch", "kaiming"); throws std::invalid_argument on others.
void initWeights(torch::nn::Module &model, const std::string &scheme);
std::int64_t parameterCount(const torch::nn::Module &model);

// t with NHWC strides spelled out (a 4-D tensor; others as they are). contiguous(ChannelsLast) keeps NCHW-looking
// strides where C or H×W is 1 (the stem, the 1×1 shortcuts, the images), and convolutions then pick NCHW kernels.
torch::Tensor channelsLast(const torch::Tensor &t);
// Every 4-D parameter and buffer of model in the layout's strides, in place: each keeps its TensorImpl, so an
// optimizer's state stays keyed to it. NhwcButLastStage keeps resnet_block4's NCHW, and its first residual turns its
// input to NCHW (a model without that block is all NHWC).
void toMemoryLayout(torch::nn::Module &model, MemoryLayout layout);
// The residual blocks' 3×3 stride-1 convolutions through oneDNN's Winograd kernels (fp32 on the CPU, where this
// build and CPU have them; see winograd.h) or LibTorch's conv2d.
void setWinograd(torch::nn::Module &model, bool on);
// The layout and Winograd switches of config for a replica on deviceId, applied to model; returns the layout its
// inputs need. Training and the learning-rate finder share it, so a switch reaches both.
MemoryLayout applySpeedSwitches(torch::nn::Module &model, const ExperimentConfig &config, const std::string &deviceId);
// TensorBoard's histogram of each weight matrix and kernel (the parameters of 2 or more dimensions: the convs and
// fc), tagged weights/<parameter name>, in `buckets` equal bins from its lowest to its highest value. Reads the
// device twice, whatever the number of tensors; a tensor with a non-finite value is left out.
std::vector<TbHistogram> weightHistograms(const torch::nn::Module &model, int buckets = 30);

} // namespace trainlab
