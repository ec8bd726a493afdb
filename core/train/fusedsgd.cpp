#include "core/train/fusedsgd.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/stack.h>
#include <torch/version.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace trainlab {

namespace {

// The key SGD keeps a parameter's state under: the TensorImpl's address, as text (LibTorch 1.x) or as is (2.x).
template<typename Map>
typename Map::key_type stateKey(const Map &, const torch::Tensor &p)
{
    using Key = typename Map::key_type;
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream text;
        text << p.unsafeGetTensorImpl();
        return text.str();
    } else {
        return static_cast<Key>(p.unsafeGetTensorImpl());
    }
}

} // namespace

std::unique_ptr<torch::optim::SGD> makeOptimizer(torch::nn::Module &model, const ExperimentConfig &config)
{
    torch::optim::SGDOptions sgd(config.learningRate);
    sgd.momentum(config.momentum).weight_decay(config.weightDecay).nesterov(config.nesterov);
    if (config.weightDecayNormAndBias || config.weightDecay == 0)
        return std::make_unique<torch::optim::SGD>(model.parameters(), sgd);
    std::vector<torch::Tensor> decayed, exempt;
    for (const auto &p : model.parameters())
        (p.dim() > 1 ? decayed : exempt).push_back(p);
    auto noDecay = std::make_unique<torch::optim::SGDOptions>(sgd);
    noDecay->weight_decay(0.0);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decayed, std::make_unique<torch::optim::SGDOptions>(sgd));
    groups.emplace_back(exempt, std::move(noDecay));
    return std::make_unique<torch::optim::SGD>(std::move(groups), sgd);
}

void fusedSgdStep(torch::optim::SGD &optimizer)
{
    torch::NoGradGuard noGrad;
    auto &state = optimizer.state();
    for (auto &group : optimizer.param_groups()) {
        const auto &options = static_cast<const torch::optim::SGDOptions &>(group.options());
        std::vector<torch::Tensor> params, grads;
        for (const auto &p : group.params()) {
            if (p.grad().defined()) {
                params.push_back(p);
                grads.push_back(p.grad());
            }
        }
        if (params.empty())
            continue;
        // New tensors: the gradients are views into the all-reduce buckets and stay as they were.
        std::vector<torch::Tensor> steps = options.weight_decay() != 0
                                               ? at::_foreach_add(grads, params, options.weight_decay())
                                               : grads;
        if (options.momentum() != 0) {
            std::vector<torch::Tensor> buffers, oldBuffers, oldSteps;
            buffers.reserve(params.size());
            for (std::size_t i = 0; i < params.size(); ++i) {
                const auto key = stateKey(state, params[i]);
                const auto it = state.find(key);
                if (it == state.end()) {
                    // A parameter's first step: its buffer starts as the step itself, as SGD::step does.
                    auto fresh = std::make_unique<torch::optim::SGDParamState>();
                    fresh->momentum_buffer(torch::clone(steps[i]).detach());
                    buffers.push_back(fresh->momentum_buffer());
                    state[key] = std::move(fresh);
                } else {
                    buffers.push_back(static_cast<torch::optim::SGDParamState &>(*it->second).momentum_buffer());
                    oldBuffers.push_back(buffers.back());
                    oldSteps.push_back(steps[i]);
                }
            }
            if (!oldBuffers.empty()) {
                at::_foreach_mul_(oldBuffers, options.momentum());
                at::_foreach_add_(oldBuffers, oldSteps, 1 - options.dampening());
            }
            steps = options.nesterov() ? at::_foreach_add(steps, buffers, options.momentum()) : buffers;
        }
        at::_foreach_add_(params, steps, -options.lr());
    }
}

namespace {

std::vector<torch::Tensor> gradients(torch::optim::SGD &optimizer)
{
    std::vector<torch::Tensor> grads;
    for (const auto &group : optimizer.param_groups()) {
        for (const auto &p : group.params()) {
            if (p.grad().defined())
                grads.push_back(p.grad());
        }
    }
    return grads;
}

torch::Tensor totalNorm(const std::vector<torch::Tensor> &grads)
{
    if (grads.empty())
        return {};
    const std::vector<torch::Tensor> norms = at::_foreach_norm(grads, 2);
    return norms.size() == 1 ? norms.front() : at::stack(norms).norm(2);
}

} // namespace

torch::Tensor gradientNorm(torch::optim::SGD &optimizer)
{
    torch::NoGradGuard noGrad;
    return totalNorm(gradients(optimizer));
}

torch::Tensor clipGradientNorm(torch::optim::SGD &optimizer, double maxNorm)
{
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> grads = gradients(optimizer);
    const torch::Tensor total = totalNorm(grads);
    if (!total.defined())
        return {};
    const torch::Tensor factor = at::clamp(maxNorm / (total + 1e-6), c10::nullopt, 1.0);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    at::_foreach_mul_(grads, factor);   // one multi-tensor kernel rather than one per parameter (a GPU step's launches)
#else
    for (auto &g : grads)
        g.mul_(factor);
#endif
    return total;
}

torch::Tensor sgdStep(torch::optim::SGD &optimizer, double lr, const ExperimentConfig &config, bool measureNorm)
{
    torch::Tensor norm;
    if (config.gradClipNorm > 0)
        norm = clipGradientNorm(optimizer, config.gradClipNorm);
    else if (measureNorm)
        norm = gradientNorm(optimizer);
    for (auto &group : optimizer.param_groups())
        static_cast<torch::optim::SGDOptions &>(group.options()).lr(lr);
    if (config.speed.fusedSgd)
        fusedSgdStep(optimizer);
    else
        optimizer.step();
    return norm;
}

} // namespace trainlab
