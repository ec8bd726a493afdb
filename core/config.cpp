#include "core/config.h"

#include "core/data/datasetstore.h"
#include "core/data/idx.h"
#include "core/train/devices.h"
#include "core/util/atomicfile.h"
#include "core/util/jsonread.h"
#include "core/util/numtext.h"
#include "core/util/paths.h"

#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

namespace trainlab {

using nlohmann::json;

ConfigError::ConfigError(const std::string &message, std::vector<std::string> problems)
    : std::runtime_error(message)
    , m_problems(std::move(problems))
{}

namespace {

using namespace detail;

constexpr std::int64_t kMaxBatchSize = 1000000;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// "\"a\", \"b\" or \"c\"", as a validation message lists the choices.
std::string listChoices(const std::vector<std::string> &choices)
{
    std::string text;
    for (std::size_t i = 0; i < choices.size(); ++i)
        text += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + quote(choices[i]);
    return text;
}

} // namespace

const std::vector<std::string> &initSchemes()
{
    static const std::vector<std::string> list{"d2l", "pytorch", "kaiming"};
    return list;
}

const std::vector<std::string> &precisions()
{
    static const std::vector<std::string> list{"fp32", "bf16"};
    return list;
}

const std::vector<std::string> &autoModes()
{
    static const std::vector<std::string> list{"auto", "on", "off"};
    return list;
}

const std::vector<std::string> &optimizers()
{
    static const std::vector<std::string> list{"sgd", "adamw"};
    return list;
}

const std::vector<std::string> &scheduleKinds()
{
    static const std::vector<std::string> list{"constant", "step", "cosine", "one_cycle"};
    return list;
}

std::string ExperimentConfig::problemsText(const std::vector<std::string> &problems)
{
    std::string text = "invalid configuration:";
    for (const auto &p : problems)
        text += "\n  " + p;
    return text;
}

std::vector<std::string> ExperimentConfig::validate() const
{
    std::vector<std::string> problems;
    auto bad = [&](const std::string &key, const std::string &what, const std::string &got) {
        problems.push_back(key + ": " + what + ", got " + got);
    };
    auto oneOf = [&](const std::string &key, const std::string &value, const std::vector<std::string> &choices) {
        if (std::find(choices.begin(), choices.end(), value) == choices.end())
            bad(key, "must be " + listChoices(choices), quote(value));
    };
    if (name.empty())
        bad("name", "must not be empty", "\"\"");
    if (dataset.name != "fashion-mnist")
        bad("dataset.name", "must be \"fashion-mnist\"", quote(dataset.name));
    std::error_code ec;
    if (dataset.path.empty())
        bad("dataset.path", "must be \"builtin:sample\", \"fashion-mnist\" or a folder with the four IDX files", "\"\"");
    else if (dataset.path == "fashion-mnist") {
        if (const std::string hint = datasetMissingHint(dataset.path); !hint.empty())
            bad("dataset.path", hint, quote(dataset.path));
    } else if (dataset.path != "builtin:sample" && !std::filesystem::is_directory(dataset.path, ec)) {
        bad("dataset.path", ec && ec != std::errc::no_such_file_or_directory ? "cannot be read (" + ec.message() + ")" : "no such folder",
            quote(dataset.path));
    }
    // What `run` would refuse in the files themselves, from their headers only (never the pixels).
    std::int64_t trainImages = 0;
    if (problems.empty() && dataset.name == "fashion-mnist") {
        const DatasetStatus data = inspectDataset(dataset.path);
        if (!data.ok)
            bad("dataset.path", data.message, quote(dataset.path));
        else
            trainImages = dataset.trainLimit > 0 ? std::min(dataset.trainLimit, data.trainCount) : data.trainCount;
    }
    if (dataset.trainLimit < 0)
        bad("dataset.train_limit", "must be 0 (all) or more", str(dataset.trainLimit));
    if (dataset.testLimit < 0)
        bad("dataset.test_limit", "must be 0 (all) or more", str(dataset.testLimit));
    if (model.arch != "resnet18")
        bad("model.arch", "must be \"resnet18\"", quote(model.arch));
    if (model.inChannels != 1)
        bad("model.in_channels", "must be 1 (Fashion-MNIST images are grayscale)", str(model.inChannels));
    if (model.numClasses < 2 || model.numClasses > 100000)
        bad("model.num_classes", "must be between 2 and 100000", str(model.numClasses));
    oneOf("model.init", model.init, initSchemes());
    if (devices.empty())
        bad("devices", "must list at least one device", "[]");
    // Each CPU replica is a thread with its own model copy: more than the cores only slows the run down.
    const auto cpuReplicas = std::count(devices.begin(), devices.end(), std::string("cpu"));
    if (cpuReplicas > logicalCores())
        bad("devices", "lists \"cpu\" " + std::to_string(cpuReplicas) + " times; at most " + std::to_string(logicalCores())
                           + " (this machine's logical cores)", std::to_string(devices.size()) + " entries");
    for (std::size_t i = 0; i < devices.size() && i < 64; ++i) {
        const std::string why = checkDevice(devices[i]);
        if (!why.empty())
            bad("devices[" + std::to_string(i) + "]", why, quote(devices[i]));
        else if (devices[i] != "cpu"
                 && std::count(devices.begin(), devices.end(), devices[i]) > 1
                 && std::find(devices.begin(), devices.end(), devices[i]) - devices.begin()
                        != static_cast<long>(i))
            bad("devices[" + std::to_string(i) + "]", "is listed twice (only \"cpu\" may repeat)",
                quote(devices[i]));
    }
    if (batchSize < 1)
        bad("batch_size", "must be at least 1", str(batchSize));
    else if (batchSize > kMaxBatchSize)
        bad("batch_size", "must be at most " + std::to_string(kMaxBatchSize), str(batchSize));
    else if (trainImages > 0 && batchSize > trainImages)
        bad("batch_size", "must be at most the " + std::to_string(trainImages) + " training images", str(batchSize));
    else if (!devices.empty() && batchSize < static_cast<std::int64_t>(devices.size()))
        bad("batch_size", "must be at least the number of devices (" + std::to_string(devices.size()) + ")",
            str(batchSize));
    if (!std::isfinite(learningRate) || learningRate <= 0)
        bad("learning_rate", "must be finite and greater than 0", str(learningRate));
    if (epochs < 1 || epochs > 100000)
        bad("epochs", "must be between 1 and 100000", str(epochs));
    if (!std::isfinite(momentum) || momentum < 0 || momentum >= 1)
        bad("momentum", "must be at least 0 and below 1", str(momentum));
    if (!std::isfinite(weightDecay) || weightDecay < 0)
        bad("weight_decay", "must be finite and at least 0", str(weightDecay));
    oneOf("optimizer", optimizer, optimizers());
    if (!std::isfinite(adamBeta1) || adamBeta1 < 0 || adamBeta1 >= 1)
        bad("adam_beta1", "must be at least 0 and below 1", str(adamBeta1));
    if (!std::isfinite(adamBeta2) || adamBeta2 < 0 || adamBeta2 >= 1)
        bad("adam_beta2", "must be at least 0 and below 1", str(adamBeta2));
    if (!std::isfinite(adamEps) || adamEps <= 0 || adamEps > 1)
        bad("adam_eps", "must be above 0 and at most 1", str(adamEps));
    // SGD's keys would be silently unused: AdamW's momentum is adam_beta1.
    if (optimizer == "adamw" && momentum != 0)
        bad("momentum", "must be 0 with optimizer \"adamw\" (its momentum is adam_beta1)", str(momentum));
    // The checkpoint stores the seed as an int64, so a larger one would not survive it.
    if (seed > static_cast<std::uint64_t>(kInt64Max))
        bad("seed", "must be at most " + std::to_string(kInt64Max), str(seed));
    oneOf("precision", precision, precisions());
    if (cpuThreads < 0 || cpuThreads > 1024)
        bad("cpu_threads", "must be 0 (all logical cores) up to 1024", str(cpuThreads));
    if (collectiveTimeoutSeconds < 1 || collectiveTimeoutSeconds > 86400)
        bad("collective_timeout_s", "must be between 1 and 86400", str(collectiveTimeoutSeconds));
    oneOf("checkpoints", checkpoints, {"last+best", "last", "best", "none"});
    oneOf("schedule.kind", schedule.kind, scheduleKinds());
    if (!std::isfinite(schedule.warmupEpochs) || schedule.warmupEpochs < 0 || schedule.warmupEpochs > epochs)
        bad("schedule.warmup_epochs", "must be from 0 to the run's epochs (" + std::to_string(epochs) + ")",
            str(schedule.warmupEpochs));
    else if (schedule.kind == "one_cycle" && schedule.warmupEpochs > 0)
        bad("schedule.warmup_epochs", "must be 0 with one_cycle (pct_start is its warm-up)", str(schedule.warmupEpochs));
    if (schedule.stepEpochs < 1 || schedule.stepEpochs > 100000)
        bad("schedule.step_epochs", "must be between 1 and 100000", str(schedule.stepEpochs));
    if (!std::isfinite(schedule.stepFactor) || schedule.stepFactor <= 0 || schedule.stepFactor > 1)
        bad("schedule.step_factor", "must be above 0 and at most 1", str(schedule.stepFactor));
    if (!std::isfinite(schedule.pctStart) || schedule.pctStart <= 0 || schedule.pctStart >= 1)
        bad("schedule.pct_start", "must be above 0 and below 1", str(schedule.pctStart));
    if (nesterov && optimizer == "adamw")
        bad("nesterov", "is SGD's: must be false with optimizer \"adamw\"", "true");
    else if (nesterov && !(momentum > 0))
        bad("nesterov", "needs a momentum above 0", "true");
    if (!std::isfinite(labelSmoothing) || labelSmoothing < 0 || labelSmoothing >= 1)
        bad("label_smoothing", "must be at least 0 and below 1", str(labelSmoothing));
    if (!std::isfinite(gradClipNorm) || gradClipNorm < 0)
        bad("grad_clip_norm", "must be 0 (off) or a norm above 0", str(gradClipNorm));
    if (!std::isfinite(emaDecay) || emaDecay < 0 || emaDecay >= 1)
        bad("ema_decay", "must be 0 (off), or above 0 and below 1", str(emaDecay));
    if (augmentation.cropPadding < 0 || augmentation.cropPadding > 14)
        bad("augmentation.crop_padding", "must be 0 (off) up to 14 pixels (half the image)", str(augmentation.cropPadding));
    if (!std::isfinite(augmentation.erasing) || augmentation.erasing < 0 || augmentation.erasing > 1)
        bad("augmentation.erasing", "must be a probability from 0 to 1", str(augmentation.erasing));
    if (earlyStopping.patience < 0 || earlyStopping.patience > 100000)
        bad("early_stopping.patience", "must be 0 (off) up to 100000 epochs", str(earlyStopping.patience));
    if (!std::isfinite(earlyStopping.minDelta) || earlyStopping.minDelta < 0 || earlyStopping.minDelta > 1)
        bad("early_stopping.min_delta", "must be from 0 to 1 (test accuracy)", str(earlyStopping.minDelta));
    oneOf("speed.channels_last", speed.channelsLast, autoModes());
    oneOf("speed.warmup", speed.warmup, autoModes());
    return problems;
}

bool SpeedConfig::warmupOn(const std::string &device) const
{
    return warmup == "on" || (warmup == "auto" && device.rfind("cuda", 0) == 0);
}

bool SpeedConfig::winogradOn(const std::string &device, const std::string &precision) const
{
    return winograd && device == "cpu" && precision == "fp32";
}

MemoryLayout SpeedConfig::layout(const std::string &device, const std::string &precision) const
{
    if (channelsLast != "auto")
        return channelsLast == "on" ? MemoryLayout::Nhwc : MemoryLayout::Nchw;
    if (device.rfind("cuda", 0) == 0)
        return MemoryLayout::Nhwc;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    // Measured on oneDNN 2 only; oneDNN 3.6 (LibTorch 2.6) crashed in fp32 NHWC convolutions (docs/configuration.md).
    if (precision != "bf16")
        return MemoryLayout::Nchw;
#else
    (void)precision;
#endif
    // On the CPU (oneDNN 2.6) 7-17 % faster than NCHW in fp32, 1-4 % than all NHWC in bf16 (docs/performance.md).
    return MemoryLayout::NhwcButLastStage;
}

std::string AugmentationConfig::describe() const
{
    std::string text;
    auto add = [&text](const std::string &part) { text += (text.empty() ? "" : ", ") + part; };
    if (cropPadding > 0)
        add("crop " + std::to_string(cropPadding));
    if (flip)
        add("flip");
    if (erasing > 0)
        add("erasing " + formatGeneral(erasing));
    return text.empty() ? "none" : text;
}

std::optional<AugmentationConfig> AugmentationConfig::fromDescription(const std::string &text, std::string *error)
{
    AugmentationConfig a;
    std::istringstream parts(text);
    std::string part;
    bool none = false, any = false;
    while (std::getline(parts, part, ',')) {
        std::istringstream words(part);
        std::string word, value, extra;
        words >> word >> value >> extra;
        if (word.empty()) {
            *error = "an empty part between commas";
            return std::nullopt;
        }
        const bool ok = !extra.empty() ? false
                        : word == "none" || word == "flip" ? value.empty()
                        : word == "crop" ? parseInt(value, a.cropPadding)
                        : word == "erasing" ? parseDouble(value, a.erasing)
                                            : false;
        if (!ok) {
            const std::size_t from = part.find_first_not_of(' '), to = part.find_last_not_of(' ');
            *error = "must be none or parts among \"crop N\", \"flip\", \"erasing P\" split by commas; \""
                     + part.substr(from, to - from + 1) + "\" is not one";
            return std::nullopt;
        }
        none |= word == "none";
        any |= word != "none";
        a.flip |= word == "flip";
    }
    if (none && any) {
        *error = "none cannot go with other parts";
        return std::nullopt;
    }
    if (!none && !any) {
        *error = "is empty (write none for no augmentation)";
        return std::nullopt;
    }
    return a;
}

namespace {

// The distinct devices of each value of key(device), the values and devices in the run's order.
template <typename Key, typename KeyOf>
std::vector<std::pair<Key, std::vector<std::string>>> groupDevices(const std::vector<std::string> &devices, KeyOf keyOf)
{
    std::vector<std::pair<Key, std::vector<std::string>>> groups;
    for (const auto &d : devices) {
        const Key key = keyOf(d);
        auto group = std::find_if(groups.begin(), groups.end(), [&](const auto &g) { return g.first == key; });
        if (group == groups.end())
            group = groups.insert(groups.end(), {key, {}});
        if (std::find(group->second.begin(), group->second.end(), d) == group->second.end())
            group->second.push_back(d);
    }
    return groups;
}

std::string joinDevices(const std::vector<std::string> &list)
{
    std::string text;
    for (const auto &d : list)
        text += (text.empty() ? "" : " ") + d;
    return text;
}

} // namespace

std::string SpeedConfig::describe(const std::vector<std::string> &devices, const std::string &precision,
                                  const std::string &winogradMissing, const std::string &optimizer) const
{
    const bool cuda = std::any_of(devices.begin(), devices.end(), [](const std::string &d) { return d.rfind("cuda", 0) == 0; });
    const auto layouts = groupDevices<MemoryLayout>(devices, [&](const std::string &d) { return layout(d, precision); });
    std::string text = layouts.empty() ? "channels_last off" : "channels_last";
    for (std::size_t i = 0; i < layouts.size(); ++i) {
        const MemoryLayout l = layouts[i].first;
        text += i == 0 ? " " : ", ";
        text += l == MemoryLayout::Nhwc ? "on" : l == MemoryLayout::Nchw ? "off" : "on but " + std::string(kLastStageName);
        // The devices are named only where their layouts differ.
        if (layouts.size() > 1)
            text += " " + joinDevices(layouts[i].second);
    }
    const std::string name = optimizer == "adamw" ? "AdamW" : "SGD";
    text += fusedSgd ? "; fused " + name : "; " + name + " loop";
    text += !cudaGraphs ? "; eager steps" : cuda ? "; CUDA graphs" : "; CUDA graphs (no CUDA device: eager)";
    const auto warm = groupDevices<bool>(devices, [this](const std::string &d) { return warmupOn(d); });
    for (const auto &[on, list] : warm) {
        if (on)
            text += warm.size() == 1 ? "; warm-up" : "; warm-up on " + joinDevices(list);
    }
    // Said only where a CPU device runs: the switch does nothing on a GPU.
    if (std::find(devices.begin(), devices.end(), "cpu") != devices.end()) {
        const std::string where = cuda ? " on cpu" : "";
        if (!winograd)
            text += "; LibTorch's convolutions" + where;
        else if (!winogradOn("cpu", precision))
            text += "; LibTorch's convolutions" + where + " (Winograd is fp32 only)";
        else if (!winogradMissing.empty())
            text += "; LibTorch's convolutions" + where + " (no Winograd: " + winogradMissing + ")";
        else
            text += "; Winograd convolutions" + where;
    }
    return text;
}

std::string ExperimentConfig::toJson() const
{
    json j = {
        {"schema_version", kSchemaVersion},
        {"name", name},
        {"dataset", {{"name", dataset.name}, {"path", dataset.path},
                     {"train_limit", dataset.trainLimit}, {"test_limit", dataset.testLimit}}},
        {"model", {{"arch", model.arch}, {"in_channels", model.inChannels}, {"num_classes", model.numClasses}, {"init", model.init}}},
        {"devices", devices},
        {"batch_size", batchSize},
        {"learning_rate", learningRate},
        {"epochs", epochs},
        {"optimizer", optimizer},
        {"adam_beta1", adamBeta1},
        {"adam_beta2", adamBeta2},
        {"adam_eps", adamEps},
        {"momentum", momentum},
        {"weight_decay", weightDecay},
        {"weight_decay_norm_and_bias", weightDecayNormAndBias},
        {"nesterov", nesterov},
        {"label_smoothing", labelSmoothing},
        {"grad_clip_norm", gradClipNorm},
        {"ema_decay", emaDecay},
        {"schedule", {{"kind", schedule.kind}, {"warmup_epochs", schedule.warmupEpochs}, {"step_epochs", schedule.stepEpochs},
                      {"step_factor", schedule.stepFactor}, {"pct_start", schedule.pctStart}}},
        {"augmentation", {{"flip", augmentation.flip}, {"crop_padding", augmentation.cropPadding}, {"erasing", augmentation.erasing}}},
        {"early_stopping", {{"patience", earlyStopping.patience}, {"min_delta", earlyStopping.minDelta}}},
        {"seed", seed},
        {"precision", precision},
        {"cpu_threads", cpuThreads},
        {"collective_timeout_s", collectiveTimeoutSeconds},
        {"checkpoints", checkpoints},
        {"tensorboard", tensorboard},
        {"speed", {{"channels_last", speed.channelsLast}, {"fused_sgd", speed.fusedSgd}, {"cuda_graphs", speed.cudaGraphs}, {"warmup", speed.warmup}, {"winograd", speed.winograd}}},
    };
    return j.dump(2) + "\n";
}

ExperimentConfig ExperimentConfig::fromJson(const std::string &text, const std::string &origin)
{
    StrictJson doc = parseStrict(text, origin);
    std::vector<std::string> problems = std::move(doc.problems);
    const json &root = doc.root;
    ExperimentConfig config;
    const auto &written = doc.written;
    Reader top(root, "", problems, written);
    top.checkUnknown({"schema_version", "name", "dataset", "model", "devices", "batch_size", "learning_rate",
                      "epochs", "optimizer", "adam_beta1", "adam_beta2", "adam_eps", "momentum", "weight_decay", "seed", "precision", "cpu_threads",
                      "collective_timeout_s", "checkpoints", "speed", "nesterov", "weight_decay_norm_and_bias", "label_smoothing", "grad_clip_norm", "ema_decay", "schedule",
                      "augmentation", "early_stopping", "tensorboard"});
    int schema = kSchemaVersion;
    top.integer("schema_version", schema, kSchemaVersion, kSchemaVersion);
    if (schema != kSchemaVersion)
        problems.push_back("schema_version: must be " + std::to_string(kSchemaVersion) + ", got "
                           + std::to_string(schema));
    top.string("name", config.name);
    if (const json *dataset = top.object("dataset")) {
        Reader r(*dataset, "dataset", problems, written);
        r.checkUnknown({"name", "path", "train_limit", "test_limit"});
        r.string("name", config.dataset.name);
        r.string("path", config.dataset.path);
        r.integer("train_limit", config.dataset.trainLimit, 0, kInt64Max);
        r.integer("test_limit", config.dataset.testLimit, 0, kInt64Max);
    }
    if (const json *model = top.object("model")) {
        Reader r(*model, "model", problems, written);
        r.checkUnknown({"arch", "in_channels", "num_classes", "init"});
        r.string("arch", config.model.arch);
        r.integer("in_channels", config.model.inChannels, 1, 64);
        r.integer("num_classes", config.model.numClasses, 2, 100000);
        r.string("init", config.model.init);
    }
    top.strings("devices", config.devices);
    top.integer("batch_size", config.batchSize, 1, kMaxBatchSize);
    top.number("learning_rate", config.learningRate);
    top.integer("epochs", config.epochs, 1, 100000);
    top.string("optimizer", config.optimizer);
    top.number("adam_beta1", config.adamBeta1);
    top.number("adam_beta2", config.adamBeta2);
    top.number("adam_eps", config.adamEps);
    top.number("momentum", config.momentum);
    top.number("weight_decay", config.weightDecay);
    top.integer("seed", config.seed, 0, kInt64Max);
    top.string("precision", config.precision);
    top.integer("cpu_threads", config.cpuThreads, 0, 1024);
    top.integer("collective_timeout_s", config.collectiveTimeoutSeconds, 1, 86400);
    top.string("checkpoints", config.checkpoints);
    top.boolean("tensorboard", config.tensorboard);
    top.boolean("nesterov", config.nesterov);
    top.boolean("weight_decay_norm_and_bias", config.weightDecayNormAndBias);
    top.number("label_smoothing", config.labelSmoothing);
    top.number("grad_clip_norm", config.gradClipNorm);
    top.number("ema_decay", config.emaDecay);
    if (const json *schedule = top.object("schedule")) {
        Reader r(*schedule, "schedule", problems, written);
        r.checkUnknown({"kind", "warmup_epochs", "step_epochs", "step_factor", "pct_start"});
        r.string("kind", config.schedule.kind);
        r.number("warmup_epochs", config.schedule.warmupEpochs);
        r.integer("step_epochs", config.schedule.stepEpochs, 1, 100000);
        r.number("step_factor", config.schedule.stepFactor);
        r.number("pct_start", config.schedule.pctStart);
    }
    if (const json *augmentation = top.object("augmentation")) {
        Reader r(*augmentation, "augmentation", problems, written);
        r.checkUnknown({"flip", "crop_padding", "erasing"});
        r.boolean("flip", config.augmentation.flip);
        r.integer("crop_padding", config.augmentation.cropPadding, 0, 100000);
        r.number("erasing", config.augmentation.erasing);
    }
    if (const json *early = top.object("early_stopping")) {
        Reader r(*early, "early_stopping", problems, written);
        r.checkUnknown({"patience", "min_delta"});
        r.integer("patience", config.earlyStopping.patience, 0, 100000);
        r.number("min_delta", config.earlyStopping.minDelta);
    }
    if (const json *speed = top.object("speed")) {
        Reader r(*speed, "speed", problems, written);
        r.checkUnknown({"channels_last", "fused_sgd", "cuda_graphs", "warmup", "winograd"});
        r.string("channels_last", config.speed.channelsLast);
        r.string("warmup", config.speed.warmup);
        r.boolean("fused_sgd", config.speed.fusedSgd);
        r.boolean("cuda_graphs", config.speed.cudaGraphs);
        r.boolean("winograd", config.speed.winograd);
    }

    throwProblems(origin, problems);
    return config;
}

ExperimentConfig ExperimentConfig::load(const std::string &path)
{
    return fromJson(readBoundedFile(path), path);
}

void ExperimentConfig::save(const std::string &path) const
{
    writeFileAtomic(path, toJson());
}

bool ExperimentConfig::operator==(const ExperimentConfig &o) const
{
    return toJson() == o.toJson();
}

std::vector<std::string> presetNames()
{
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &entry : std::filesystem::directory_iterator(resourcesDir() + "/presets", ec)) {
        if (entry.path().extension() == ".json")
            names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

namespace {

void collectDifferences(const nlohmann::json &a, const nlohmann::json &b, const std::string &prefix,
                        std::vector<std::string> &out)
{
    if (a.is_object() && b.is_object()) {
        for (auto it = a.begin(); it != a.end(); ++it) {
            const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
            if (!b.contains(it.key()))
                out.push_back(key);
            else
                collectDifferences(it.value(), b.at(it.key()), key, out);
        }
        for (auto it = b.begin(); it != b.end(); ++it) {
            if (!a.contains(it.key()))
                out.push_back(prefix.empty() ? it.key() : prefix + "." + it.key());
        }
        return;
    }
    if (a != b)
        out.push_back(prefix.empty() ? "(whole configuration)" : prefix);
}

} // namespace

std::vector<std::string> configDifferences(const std::string &a, const std::string &b)
{
    std::vector<std::string> out;
    collectDifferences(nlohmann::json::parse(a), nlohmann::json::parse(b), "", out);
    return out;
}

std::string configValueText(const std::string &json, const std::string &key)
{
    const nlohmann::json config = nlohmann::json::parse(json);
    const nlohmann::json *value = &config;
    for (std::size_t begin = 0; begin <= key.size();) {
        const std::size_t dot = std::min(key.find('.', begin), key.size());
        const std::string part = key.substr(begin, dot - begin);
        if (!value->is_object() || !value->contains(part))
            return "-";
        value = &value->at(part);
        begin = dot + 1;
    }
    return value->is_string() ? value->get<std::string>() : value->dump();
}

ExperimentConfig withSettings(const ExperimentConfig &config, const std::vector<std::string> &assignments)
{
    constexpr std::size_t kMaxAssignment = 4096;
    ExperimentConfig out = config;
    std::vector<std::string> problems;
    for (const std::string &assignment : assignments) {
        const std::string shown = "--set " + cut(assignment);
        const std::size_t eq = assignment.find('=');
        if (eq == std::string::npos || eq == 0) {
            problems.push_back(shown + ": must be KEY=VALUE, e.g. optimizer=adamw");
            continue;
        }
        if (assignment.size() > kMaxAssignment) {
            problems.push_back(shown + ": longer than " + std::to_string(kMaxAssignment) + " characters");
            continue;
        }
        const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
        json root = json::parse(out.toJson());
        json *node = &root;
        for (std::size_t begin = 0; node && begin <= key.size();) {
            const std::size_t dot = std::min(key.find('.', begin), key.size());
            const std::string part = key.substr(begin, dot - begin);
            node = node->is_object() && node->contains(part) ? &(*node)[part] : nullptr;
            begin = dot + 1;
        }
        if (!node) {
            problems.push_back(shown + ": " + key + ": unknown key");
            continue;
        }
        // Read as a file's value is: nesting bounded, duplicate keys refused (named from key, not the wrapper "v").
        std::optional<StrictJson> wrapped;
        try {
            wrapped = parseStrict("{\"v\": " + text + "}", "value");
        } catch (const ConfigError &) {
            wrapped.reset();   // not JSON: the text is the value, as a string
        }
        if (wrapped && !wrapped->problems.empty()) {
            for (const std::string &p : wrapped->problems)
                problems.push_back(shown + ": " + key + p.substr(1));
            continue;
        }
        *node = wrapped && wrapped->root.size() == 1 ? wrapped->root["v"] : json(text);
        try {
            out = ExperimentConfig::fromJson(root.dump(), "--set");
        } catch (const ConfigError &e) {
            for (const std::string &p : e.problems())
                problems.push_back(shown + ": " + p);
            if (e.problems().empty())
                problems.push_back(shown + ": " + e.what());
        }
    }
    throwProblems("--set", problems);
    return out;
}

ExperimentConfig loadPreset(const std::string &name)
{
    const auto names = presetNames();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string known;
        for (const auto &n : names)
            known += (known.empty() ? "" : ", ") + n;
        throw ConfigError("unknown preset \"" + name + "\" (known: " + (known.empty() ? "none found in " + resourcesDir() : known) + ")");
    }
    return ExperimentConfig::load(resourcesDir() + "/presets/" + name + ".json");
}

} // namespace trainlab
