#include "core/train/optimizer.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_addcdiv.h>
#include <ATen/ops/_foreach_addcmul.h>
#include <ATen/ops/_foreach_div.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/_foreach_sqrt.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/stack.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace trainlab {

namespace {

// The key an optimizer keeps a parameter's state under: the TensorImpl's address, as text (LibTorch 1.x) or as is (2.x).
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

// One group, or two with weight_decay_norm_and_bias false: the matrices and kernels decayed, the rest not.
template<typename Optimizer, typename Options>
std::unique_ptr<torch::optim::Optimizer> grouped(torch::nn::Module &model, const ExperimentConfig &config, const Options &options)
{
    if (config.weightDecayNormAndBias || config.weightDecay == 0)
        return std::make_unique<Optimizer>(model.parameters(), options);
    std::vector<torch::Tensor> decayed, exempt;
    for (const auto &p : model.parameters())
        (p.dim() > 1 ? decayed : exempt).push_back(p);
    auto noDecay = std::make_unique<Options>(options);
    noDecay->weight_decay(0.0);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decayed, std::make_unique<Options>(options));
    groups.emplace_back(exempt, std::move(noDecay));
    return std::make_unique<Optimizer>(std::move(groups), options);
}

} // namespace

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(torch::nn::Module &model, const ExperimentConfig &config)
{
    if (config.optimizer == "adamw") {
        torch::optim::AdamWOptions adamw(config.learningRate);
        adamw.betas(std::make_tuple(config.adamBeta1, config.adamBeta2)).eps(config.adamEps).weight_decay(config.weightDecay);
        return grouped<torch::optim::AdamW>(model, config, adamw);
    }
    torch::optim::SGDOptions sgd(config.learningRate);
    sgd.momentum(config.momentum).weight_decay(config.weightDecay).nesterov(config.nesterov);
    return grouped<torch::optim::SGD>(model, config, sgd);
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

void fusedAdamWStep(torch::optim::AdamW &optimizer)
{
    torch::NoGradGuard noGrad;
    auto &state = optimizer.state();
    struct Group
    {
        const torch::optim::AdamWOptions *options;
        std::vector<torch::Tensor> params, grads, averages, squares;
        std::vector<torch::optim::AdamWParamState *> states;
    };
    std::vector<Group> groups;
    for (auto &group : optimizer.param_groups()) {
        Group g{&static_cast<const torch::optim::AdamWOptions &>(group.options()), {}, {}, {}, {}, {}};
        for (const auto &p : group.params()) {
            if (!p.grad().defined())
                continue;
            const auto key = stateKey(state, p);
            auto it = state.find(key);
            if (it == state.end()) {
                // A parameter's first step: zero moments, as AdamW::step starts them.
                auto fresh = std::make_unique<torch::optim::AdamWParamState>();
                fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
                fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
                it = state.emplace(key, std::move(fresh)).first;
            }
            auto &s = static_cast<torch::optim::AdamWParamState &>(*it->second);
            g.params.push_back(p);
            g.grads.push_back(p.grad());
            g.averages.push_back(s.exp_avg());
            g.squares.push_back(s.exp_avg_sq());
            g.states.push_back(&s);
        }
        // One bias correction per group needs one step count; amsgrad keeps a third moment.
        const bool uneven = std::any_of(g.states.begin(), g.states.end(),
                                        [&](const auto *s) { return s->step() != g.states.front()->step(); });
        if (g.options->amsgrad() || uneven) {
            optimizer.step();
            return;
        }
        if (!g.params.empty())
            groups.push_back(std::move(g));
    }
    for (Group &g : groups) {
        for (auto *s : g.states)
            s->step(s->step() + 1);
        const double step = static_cast<double>(g.states.front()->step());
        const auto [beta1, beta2] = g.options->betas();
        const double lr = g.options->lr();
        if (g.options->weight_decay() != 0)
            at::_foreach_mul_(g.params, 1 - lr * g.options->weight_decay());
        at::_foreach_mul_(g.averages, beta1);
        at::_foreach_add_(g.averages, g.grads, 1 - beta1);
        at::_foreach_mul_(g.squares, beta2);
        at::_foreach_addcmul_(g.squares, g.grads, g.grads, 1 - beta2);
        const double correction1 = 1 - std::pow(beta1, step);
        const double correction2 = 1 - std::pow(beta2, step);
        std::vector<torch::Tensor> denominators = at::_foreach_sqrt(g.squares);
        at::_foreach_div_(denominators, std::sqrt(correction2));
        at::_foreach_add_(denominators, g.options->eps());
        at::_foreach_addcdiv_(g.params, g.averages, denominators, -lr / correction1);
    }
}

namespace {

std::vector<torch::Tensor> gradients(torch::optim::Optimizer &optimizer)
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

torch::Tensor gradientNorm(torch::optim::Optimizer &optimizer)
{
    torch::NoGradGuard noGrad;
    return totalNorm(gradients(optimizer));
}

torch::Tensor clipGradientNorm(torch::optim::Optimizer &optimizer, double maxNorm)
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

torch::Tensor stepOptimizer(torch::optim::Optimizer &optimizer, double lr, const ExperimentConfig &config, bool measureNorm)
{
    torch::Tensor norm;
    if (config.gradClipNorm > 0)
        norm = clipGradientNorm(optimizer, config.gradClipNorm);
    else if (measureNorm)
        norm = gradientNorm(optimizer);
    for (auto &group : optimizer.param_groups())
        group.options().set_lr(lr);
    if (!config.speed.fusedSgd)
        optimizer.step();
    else if (auto *sgd = dynamic_cast<torch::optim::SGD *>(&optimizer))
        fusedSgdStep(*sgd);
    else if (auto *adamw = dynamic_cast<torch::optim::AdamW *>(&optimizer))
        fusedAdamWStep(*adamw);
    else
        optimizer.step();
    return norm;
}

} // namespace trainlab
