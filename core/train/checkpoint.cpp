#include "core/train/checkpoint.h"

#include "core/config.h"
#include "core/train/engine.h"
#include "core/util/atomicfile.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

namespace trainlab {

using nlohmann::json;

namespace {

// The learning rate, then the gradient norm last: checkpoints before them have 6 or 7.
constexpr int kMetricColumns = 8;

torch::Tensor metricsTensor(const std::vector<EpochMetrics> &rows)
{
    torch::Tensor t = torch::zeros({static_cast<std::int64_t>(rows.size()), kMetricColumns}, torch::kFloat64);
    auto a = t.accessor<double, 2>();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const EpochMetrics &m = rows[i];
        const double values[kMetricColumns] = {static_cast<double>(m.epoch), m.trainLoss, m.trainAcc, m.testAcc,
                                               m.seconds, m.imagesPerSecond, m.learningRate, m.gradNorm};
        for (int c = 0; c < kMetricColumns; ++c)
            a[static_cast<std::int64_t>(i)][c] = values[c];
    }
    return t;
}

std::vector<EpochMetrics> metricsRows(const torch::Tensor &t)
{
    std::vector<EpochMetrics> rows;
    if (t.dim() != 2 || t.size(1) < kMetricColumns - 2 || t.size(1) > kMetricColumns)
        throw std::runtime_error("metrics table has the wrong shape");
    const torch::Tensor c = t.to(torch::kFloat64).contiguous();
    auto a = c.accessor<double, 2>();
    for (std::int64_t i = 0; i < c.size(0); ++i) {
        EpochMetrics m;
        m.epoch = static_cast<int>(a[i][0]);
        m.trainLoss = a[i][1];
        m.trainAcc = a[i][2];
        m.testAcc = a[i][3];
        m.seconds = a[i][4];
        m.imagesPerSecond = a[i][5];
        m.learningRate = c.size(1) > 6 ? a[i][6] : 0.0;
        m.gradNorm = c.size(1) > 7 ? a[i][7] : 0.0;
        rows.push_back(m);
    }
    return rows;
}

CheckpointInfo readInfo(torch::serialize::InputArchive &archive)
{
    CheckpointInfo info;
    c10::IValue version;
    if (!archive.try_read("format_version", version))
        throw std::runtime_error("written by an older TrainLab (format 1, without its configuration); it cannot be resumed");
    info.formatVersion = static_cast<int>(version.toInt());
    if (info.formatVersion != CheckpointInfo::kFormatVersion)
        throw std::runtime_error("format version " + std::to_string(info.formatVersion) + ", this TrainLab reads "
                                 + std::to_string(CheckpointInfo::kFormatVersion));
    torch::Tensor epoch, seed, metrics;
    archive.read("epoch", epoch);
    archive.read("seed", seed);
    archive.read("metrics", metrics);
    c10::IValue config, hash;
    archive.read("config", config);
    archive.read("config_hash", hash);
    info.epoch = static_cast<int>(epoch.item<std::int64_t>());
    info.seed = static_cast<std::uint64_t>(seed.item<std::int64_t>());
    info.config = config.toStringRef();
    info.configHash = hash.toStringRef();
    info.metrics = metricsRows(metrics);
    if (fnv1aHex(info.config) != info.configHash)
        throw std::runtime_error("its configuration does not match its hash");

    if (static_cast<int>(info.metrics.size()) != info.epoch)
        throw std::runtime_error("it holds " + std::to_string(info.metrics.size()) + " epochs of metrics for epoch "
                                 + std::to_string(info.epoch));
    return info;
}

// The frame every reader shares: the archive, its info, then what the caller reads; errors name the origin.
template <typename Read>
CheckpointInfo readArchive(const std::string &bytes, const std::string &origin, const torch::Device &device, Read &&read)
{
    try {
        torch::serialize::InputArchive archive;
        archive.load_from(bytes.data(), bytes.size(), device);
        CheckpointInfo info = readInfo(archive);
        read(archive);
        return info;
    } catch (const std::exception &e) {
        throw std::runtime_error(origin + ": not a TrainLab checkpoint: " + errorText(e));
    }
}

} // namespace

std::string fnv1aHex(const std::string &data)
{
    std::uint64_t hash = 1469598103934665603ULL;
    for (const unsigned char c : data)
        hash = (hash ^ c) * 1099511628211ULL;
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

std::string checkpointConfigJson(const std::string &configJson)
{
    json j = json::parse(configJson);
    j.erase("epochs");
    j.erase("speed");
    j.erase("tensorboard");
    return j.dump();
}

std::string currentBoundConfig(const std::string &checkpointConfig)
{
    try {
        return checkpointConfigJson(ExperimentConfig::fromJson(checkpointConfig).toJson());
    } catch (const std::exception &) {
        return checkpointConfig;   // compared as written: the comparison names what differs
    }
}


std::string serializeCheckpoint(torch::nn::Module &model, torch::optim::Optimizer &optimizer, const CheckpointInfo &info,
                                torch::nn::Module *ema)
{
    torch::serialize::OutputArchive archive, modelArchive, optimizerArchive;
    model.save(modelArchive);
    optimizer.save(optimizerArchive);
    archive.write("model", modelArchive);
    archive.write("optimizer", optimizerArchive);
    if (ema) {
        torch::serialize::OutputArchive emaArchive;
        ema->save(emaArchive);
        archive.write("ema", emaArchive);
    }
    archive.write("format_version", c10::IValue(static_cast<std::int64_t>(CheckpointInfo::kFormatVersion)));
    archive.write("epoch", torch::tensor(static_cast<std::int64_t>(info.epoch)));
    archive.write("seed", torch::tensor(static_cast<std::int64_t>(info.seed)));
    archive.write("config", c10::IValue(info.config));
    archive.write("config_hash", c10::IValue(fnv1aHex(info.config)));
    archive.write("metrics", metricsTensor(info.metrics));
    archive.write("cpu_rng_state", at::detail::getDefaultCPUGenerator().get_state());
    std::ostringstream out;
    archive.save_to(out);
    return out.str();
}

void saveCheckpoint(const std::string &path, torch::nn::Module &model, torch::optim::Optimizer &optimizer,
                    const CheckpointInfo &info)
{
    writeFileAtomic(path, serializeCheckpoint(model, optimizer, info));
}

CheckpointInfo readCheckpointInfo(const std::string &bytes, const std::string &origin)
{
    return readArchive(bytes, origin, torch::kCPU, [](torch::serialize::InputArchive &) {});
}

CheckpointInfo loadCheckpointBytes(const std::string &bytes, const std::string &origin, torch::nn::Module &model,
                                   torch::optim::Optimizer *optimizer, const torch::Device &device, torch::nn::Module *ema)
{
    return readArchive(bytes, origin, device, [&](torch::serialize::InputArchive &archive) {
        torch::serialize::InputArchive modelArchive;
        archive.read("model", modelArchive);
        model.load(modelArchive);
        if (optimizer) {
            torch::serialize::InputArchive optimizerArchive;
            archive.read("optimizer", optimizerArchive);
            optimizer->load(optimizerArchive);
        }
        if (ema) {
            torch::serialize::InputArchive emaArchive;
            if (!archive.try_read("ema", emaArchive))
                throw std::runtime_error("it holds no moving average of the weights (ema_decay)");
            ema->load(emaArchive);
        }
    });
}

CheckpointInfo loadCheckpoint(const std::string &path, torch::nn::Module &model, torch::optim::Optimizer *optimizer)
{
    return loadCheckpointBytes(readFile(path, kMaxCheckpointBytes), path, model, optimizer);
}

CheckpointInfo loadEvaluatedWeights(const std::string &path, torch::nn::Module &model)
{
    return readArchive(readFile(path, kMaxCheckpointBytes), path, torch::kCPU, [&](torch::serialize::InputArchive &archive) {
        torch::serialize::InputArchive weights;
        if (!archive.try_read("ema", weights))
            archive.read("model", weights);
        model.load(weights);
    });
}

} // namespace trainlab
