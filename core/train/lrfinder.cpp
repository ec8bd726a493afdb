#include "core/train/lrfinder.h"

#include "core/data/dataset.h"
#include "core/train/devices.h"
#include "core/train/optimizer.h"
#include "core/train/model.h"
#include "core/train/precision.h"
#include "core/train/torcherror.h"
#include "core/util/numtext.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace trainlab {

namespace {

constexpr double kSmoothing = 0.98;   // fastai's: about the last 50 steps

} // namespace

std::vector<std::string> validateLrFinder(const LrFinderOptions &o)
{
    std::vector<std::string> problems;
    if (!std::isfinite(o.minLr) || o.minLr <= 0)
        problems.push_back("min_lr: must be a number above 0, got " + formatGeneral(o.minLr));
    if (!std::isfinite(o.maxLr) || o.maxLr <= o.minLr || o.maxLr > 1e6)
        problems.push_back("max_lr: must be above min_lr (" + formatGeneral(o.minLr) + ") and at most 1e6, got " + formatGeneral(o.maxLr));
    if (o.steps < 10 || o.steps > 100000)
        problems.push_back("steps: must be from 10 to 100000, got " + std::to_string(o.steps));
    if (!std::isfinite(o.divergeFactor) || o.divergeFactor <= 1)
        problems.push_back("diverge_factor: must be above 1, got " + formatGeneral(o.divergeFactor));
    return problems;
}

void suggestLearningRate(LrFinderResult &result)
{
    result.lowestLossLr = result.suggestedLr = 0.0;
    const auto &p = result.points;
    if (p.size() < 10)
        return;
    const auto lowest = std::min_element(p.begin(), p.end(), [](const LrFinderPoint &a, const LrFinderPoint &b) {
        return a.smoothed < b.smoothed;
    });
    result.lowestLossLr = lowest->learningRate;
    // A loss that only rose from the first step has no rate below its turn to suggest.
    if (lowest != p.begin())
        result.suggestedLr = lowest->learningRate / 10.0;
}

LrFinderResult findLearningRate(const ExperimentConfig &config, const LrFinderOptions &options, const StopFlag &stop,
                                const std::function<void(const LrFinderPoint &)> &progress)
{
    LrFinderResult result;
    std::vector<std::string> problems = config.validate();
    for (const std::string &p : validateLrFinder(options))
        problems.push_back("learning-rate finder: " + p);
    if (!problems.empty()) {
        result.error = ExperimentConfig::problemsText(problems);
        return result;
    }
    try {
        const DataBundle data = loadData(config.dataset, config.model.numClasses);
        const std::string &deviceId = config.devices.front();
        const torch::Device device = deviceId == "cpu" ? torch::Device(torch::kCPU) : torch::Device(deviceId);
        if (device.is_cpu())
            at::set_num_threads(config.cpuThreads > 0 ? config.cpuThreads : logicalCores());
        setThreadPrecision(device, config.precision);
        torch::manual_seed(config.seed);
        auto model = makeResNet18(config.model.inChannels, config.model.numClasses);
        initWeights(*model, config.model.init);
        model->to(device);
        const MemoryLayout layout = applySpeedSwitches(*model, config, deviceId);
        model->train();
        auto optimizer = makeOptimizer(*model, config);

        const std::int64_t n = data.train.size();
        const std::int64_t batch = std::min<std::int64_t>(config.batchSize, n);
        const std::int64_t world = static_cast<std::int64_t>(config.devices.size());
        const auto loss = torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum).label_smoothing(config.labelSmoothing);
        std::vector<std::int64_t> order;
        std::int64_t next = n;
        int epoch = 0;
        double average = 0.0, best = 0.0;
        const int patience = std::max(5, options.steps / 10);
        for (int step = 1; step <= options.steps; ++step) {
            if (stop) {
                result.stopped = true;
                break;
            }
            // Whole batches in each epoch's order, as the run would take them; a short last one is left out.
            if (next + batch > n) {
                order = epochPermutation(n, config.seed, ++epoch);
                next = 0;
            }
            const double t = options.steps > 1 ? static_cast<double>(step - 1) / (options.steps - 1) : 0.0;
            const double lr = options.minLr * std::pow(options.maxLr / options.minLr, t);
            optimizer->zero_grad();
            // Each device's share in turn, as the run's replicas take them (BatchNorm sees the same images), their
            // gradients summed: the run's step in one device's memory. Their losses add up on the device: one host
            // read a step, after the update is queued.
            const torch::Tensor lossSum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
            for (std::int64_t r = 0; r < world; ++r) {
                const BatchShare share = batchShare(batch, world, r);
                if (share.count == 0)
                    continue;
                const auto first = order.begin() + next + share.offset;
                const torch::Tensor index = torch::tensor(std::vector<std::int64_t>(first, first + share.count));
                torch::Tensor x = toInput(data.train.images.index_select(0, index)).to(device);
                if (layout != MemoryLayout::Nchw)
                    x = channelsLast(x);
                const torch::Tensor y = data.train.labels.index_select(0, index).to(device);
                const torch::Tensor l = torch::nn::functional::cross_entropy(model->forward(x).to(torch::kFloat32), y, loss);
                (l * (1.0 / static_cast<double>(batch))).backward();
                lossSum.add_(l.detach());
            }
            next += batch;
            stepOptimizer(*optimizer, lr, config);
            LrFinderPoint point;
            point.step = step;
            point.learningRate = lr;
            point.loss = lossSum.item<double>() / static_cast<double>(batch);
            if (!std::isfinite(point.loss)) {
                result.diverged = true;
                break;
            }
            average = kSmoothing * average + (1 - kSmoothing) * point.loss;
            point.smoothed = average / (1 - std::pow(kSmoothing, step));
            result.points.push_back(point);
            if (progress)
                progress(point);
            if (step == 1 || point.smoothed < best)
                best = point.smoothed;
            if (step > patience && point.smoothed > options.divergeFactor * best) {
                result.diverged = true;
                break;
            }
        }
    } catch (const std::exception &e) {
        result.error = errorText(e);
        return result;
    }
    suggestLearningRate(result);
    return result;
}

std::string lrFinderSummary(const LrFinderResult &r)
{
    const std::string ended = (r.stopped ? "stopped" : r.diverged ? "the loss diverged" : "the last rate reached")
                              + std::string(" after ") + std::to_string(r.points.size()) + (r.points.size() == 1 ? " step" : " steps");
    if (r.suggestedLr > 0)
        return ended + "; lowest smoothed loss at lr " + formatGeneral(r.lowestLossLr, 3) + ": suggested learning rate "
               + formatGeneral(r.suggestedLr, 2) + " (a tenth of it)";
    return ended + "; no suggestion: "
           + (r.points.size() < 10 ? std::string("it takes at least 10 steps")
                                   : std::string("the loss was lowest at the first rate (try a lower minimum)"));
}

std::string lrFinderCsv(const LrFinderResult &result)
{
    std::string text = "step,learning_rate,loss,smoothed_loss\n";
    for (const LrFinderPoint &p : result.points)
        text += std::to_string(p.step) + "," + formatGeneral(p.learningRate, 6) + "," + formatGeneral(p.loss, 6) + ","
                + formatGeneral(p.smoothed, 6) + "\n";
    return text;
}

} // namespace trainlab
