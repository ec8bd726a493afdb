#pragma once

#include "core/config.h"

#include <torch/nn/module.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>

#include <memory>

namespace trainlab {

// torch::optim::SGD's step (weight decay, momentum, dampening, Nesterov) as a handful of multi-tensor
// `_foreach_` kernels over all parameters instead of three or four kernels per parameter. The state stays the
// optimizer's own (its momentum buffers, under its own keys), so checkpoints and resume are unchanged, and the
// result equals SGD::step's: the same operations on the same values.
void fusedSgdStep(torch::optim::SGD &optimizer);
// torch::optim::AdamW's step (decoupled weight decay, bias-corrected moments; not amsgrad) the same way: about ten
// multi-tensor kernels instead of about ten kernels per parameter, in AdamW's own state. A group whose parameters
// have taken different numbers of steps goes through AdamW::step's loop instead.
void fusedAdamWStep(torch::optim::AdamW &optimizer);
// Scales every gradient of optimizer's parameters so that their global L2 norm is at most maxNorm, as PyTorch's
// clip_grad_norm_ does, but without its host sync: the factor stays a device tensor (CUDA graphs can capture it).
// Returns the norm before clipping, a 0-dim device tensor (undefined when no parameter has a gradient).
torch::Tensor clipGradientNorm(torch::optim::Optimizer &optimizer, double maxNorm);
// The global L2 norm of every gradient of optimizer's parameters, a 0-dim device tensor (no host sync); undefined
// when no parameter has a gradient.
torch::Tensor gradientNorm(torch::optim::Optimizer &optimizer);
// One step of the run's optimizer at learning rate lr (set in every group): the gradients clipped where config's
// grad_clip_norm says, then the fused step or LibTorch's as speed.fused_sgd says. Training and the range test share
// it. Returns the gradients' norm before the step where it clipped or measureNorm asks, else an undefined tensor.
torch::Tensor stepOptimizer(torch::optim::Optimizer &optimizer, double lr, const ExperimentConfig &config,
                            bool measureNorm = false);

// The run's SGD or AdamW (config.optimizer) over model's parameters: one group, or with weight_decay_norm_and_bias
// false two, the matrices and kernels (dim > 1) decayed and BatchNorm's weights and the biases not.
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(torch::nn::Module &model, const ExperimentConfig &config);

} // namespace trainlab
