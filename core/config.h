#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainlab {

// The values each choice key takes, in the order the window offers them; validation names them all.
const std::vector<std::string> &initSchemes();        // model.init
const std::vector<std::string> &precisions();         // precision
const std::vector<std::string> &autoModes();          // speed.channels_last, speed.warmup
const std::vector<std::string> &scheduleKinds();      // schedule.kind
const std::vector<std::string> &optimizers();         // optimizer

// Raised for an unreadable or invalid configuration; what() names the file or key.
class ConfigError : public std::runtime_error
{
public:
    explicit ConfigError(const std::string &message, std::vector<std::string> problems = {});
    const std::vector<std::string> &problems() const { return m_problems; }

private:
    std::vector<std::string> m_problems;
};

struct DatasetConfig
{
    std::string name = "fashion-mnist";
    std::string path = "builtin:sample";
    std::int64_t trainLimit = 0;
    std::int64_t testLimit = 0;
};

struct ModelConfig
{
    std::string arch = "resnet18";
    int inChannels = 1;
    int numClasses = 10;
    // The weights' first values: "d2l" (the chapter's: N(0, 0.01) on the stem conv and fc, LibTorch's default
    // elsewhere), "pytorch" (LibTorch's default on every layer), "kaiming" (torchvision's ResNet: Kaiming-normal
    // fan-out on every conv).
    std::string init = "d2l";
};

// The strides a replica's 4-D weights and activations keep. NhwcButLastStage: NHWC up to resnet_block4, whose 4×4
// maps run faster in oneDNN's NCHW kernels on the CPU (docs/performance.md).
enum class MemoryLayout { Nchw, Nhwc, NhwcButLastStage };
// The model's name for that last stage, which the log names too.
inline constexpr const char *kLastStageName = "resnet_block4";

// How the steps run, not what they compute (within float rounding): each a switch, so a user or the GPU check can
// turn one off. Not part of what a checkpoint is bound to: a run resumes with other switches.
struct SpeedConfig
{
    // 4-D weights and activations in NHWC strides: "auto" (on for CUDA, on but resnet_block4 on the CPU), "on", "off".
    std::string channelsLast = "auto";
    // One multi-tensor (_foreach_) SGD or AdamW update over every parameter instead of a loop of kernels per parameter.
    bool fusedSgd = true;
    // Capture each CUDA replica's full-batch step once and replay it (CUDA only; a failed capture runs eagerly).
    bool cudaGraphs = false;
    // Before epoch 1, each step shape once on zeros (cuDNN's autotune and the allocator settle there, not in epoch 1),
    // and evaluation in the training batch's shape: "auto" (on for CUDA), "on", "off". The run computes the same.
    std::string warmup = "auto";
    // The CPU's fp32 3×3 stride-1 convolutions through oneDNN's Winograd kernels (where the build and CPU have them).
    bool winograd = true;

    // The layout of a replica on device ("cpu", "cuda:1") at precision ("fp32", "bf16").
    MemoryLayout layout(const std::string &device, const std::string &precision) const;
    bool warmupOn(const std::string &device) const;
    // Whether a replica on device at precision asks for Winograd convolutions (the CPU in fp32).
    bool winogradOn(const std::string &device, const std::string &precision) const;
    // The path these switches give the devices, for the log and summary.json: "channels_last on cuda:0, on but
    // resnet_block4 cpu; fused SGD; CUDA graphs; warm-up on cuda:0; Winograd convolutions on cpu". winogradMissing:
    // why this process has no Winograd kernels (winogradUnavailableReason()), empty where it has them.
    std::string describe(const std::vector<std::string> &devices, const std::string &precision,
                         const std::string &winogradMissing, const std::string &optimizer = "sgd") const;
};

// The learning rate over the run, a function of the global step (so a resumed run follows it exactly).
struct ScheduleConfig
{
    // "constant" (the chapter's), "step", "cosine" (to 0 at the last step), "one_cycle" (PyTorch's OneCycleLR, cos).
    std::string kind = "constant";
    // A linear rise to learning_rate over these epochs first (not with one_cycle, which has its own).
    double warmupEpochs = 0.0;
    int stepEpochs = 30;        // step: multiply by step_factor every step_epochs epochs
    double stepFactor = 0.1;
    double pctStart = 0.3;      // one_cycle: the share of the steps rising to learning_rate
};

// Training images altered per step on the device (evaluation sees them as they are), drawn from the run's seed
// and the global step: every replica and a resumed run draw the same.
struct AugmentationConfig
{
    bool flip = false;       // mirror left-right with probability 1/2
    int cropPadding = 0;     // shift by up to this many pixels each way, zeros filling in (torchvision's padded RandomCrop)
    double erasing = 0.0;    // probability of blanking one rectangle of 2-33 % of the image (RandomErasing, value 0)

    bool any() const { return flip || cropPadding > 0 || erasing > 0; }
    bool operator==(const AugmentationConfig &o) const { return flip == o.flip && cropPadding == o.cropPadding && erasing == o.erasing; }
    bool operator!=(const AugmentationConfig &o) const { return !(*this == o); }
    // "crop 4, flip, erasing 0.25", or "none".
    std::string describe() const;
    // describe()'s text read back, parts in any order; nullopt with *error saying what is wrong (ranges are validate()'s).
    static std::optional<AugmentationConfig> fromDescription(const std::string &text, std::string *error);
};

// Ends a run whose test accuracy has not risen by more than min_delta over its best for patience epochs.
struct EarlyStoppingConfig
{
    int patience = 0;           // 0: off
    double minDelta = 0.0;
};

// One experiment, as saved in JSON (schema_version 1).
struct ExperimentConfig
{
    static constexpr int kSchemaVersion = 1;

    std::string name = "experiment";
    DatasetConfig dataset;
    ModelConfig model;
    std::vector<std::string> devices = {"cpu"};
    std::int64_t batchSize = 256;
    double learningRate = 0.1;
    int epochs = 10;
    // "sgd" (the chapter's) or "adamw" (PyTorch's AdamW: decoupled weight decay); momentum and nesterov are SGD's,
    // the adam_ keys AdamW's.
    std::string optimizer = "sgd";
    double adamBeta1 = 0.9;
    double adamBeta2 = 0.999;
    double adamEps = 1e-8;
    double momentum = 0.0;
    double weightDecay = 0.0;
    // false: BatchNorm's weights and every bias take no weight decay (two parameter groups), as many recipes do.
    bool weightDecayNormAndBias = true;
    bool nesterov = false;
    double labelSmoothing = 0.0;
    // Above 0: before each SGD step the averaged gradients are scaled so that their global L2 norm is at most this
    // (PyTorch's clip_grad_norm_); 0: off.
    double gradClipNorm = 0.0;
    // Above 0: evaluation (and the checkpoint's evaluated weights) use an exponential moving average of the weights
    // and BatchNorm statistics, updated after every step with this decay (warmed up over the first steps); 0: off.
    double emaDecay = 0.0;
    ScheduleConfig schedule;
    AugmentationConfig augmentation;
    EarlyStoppingConfig earlyStopping;
    std::uint64_t seed = 0;
    std::string precision = "fp32";
    int cpuThreads = 0;
    int collectiveTimeoutSeconds = 300;
    // Which checkpoints a run keeps: "last+best", "last" (resumable), "best", "none" (45 MB each).
    std::string checkpoints = "last+best";
    // TensorBoard event files in the run's tb/ folder, appended per epoch.
    bool tensorboard = true;
    SpeedConfig speed;

    // Every problem at once, each "key.path: what is wrong, got value"; empty when valid.
    std::vector<std::string> validate() const;
    // validate()'s problems as one error: "invalid configuration:" and a line for each.
    static std::string problemsText(const std::vector<std::string> &problems);

    std::string toJson() const;
    // Throws ConfigError listing every structural problem (unknown or repeated key, wrong type, nesting over 64 levels, a number its field cannot hold).
    static ExperimentConfig fromJson(const std::string &text, const std::string &origin = "config");
    // Only a regular file of at most 1 MB, checked before it is opened.
    static ExperimentConfig load(const std::string &path);
    // Atomic: written to a temporary file, then renamed.
    void save(const std::string &path) const;

    bool operator==(const ExperimentConfig &other) const;
    bool operator!=(const ExperimentConfig &other) const { return !(*this == other); }
};

// Names every key (as a dotted path) whose value differs between two configurations' JSON texts; empty when equal.
std::vector<std::string> configDifferences(const std::string &a, const std::string &b);
// The value at a dotted key of a configuration's JSON ("dataset.train_limit") as a table shows it: a string without
// quotes, anything else as compact JSON; "-" where the configuration has no such key.
std::string configValueText(const std::string &json, const std::string &key);

// config with each "key=value" of assignments applied in turn (trainlab-cli's --set): key is a dotted path the file
// has (schedule.kind), value JSON where it reads as JSON (0.1, true, ["cpu", "cpu"], {"flip": true}) and a string
// otherwise (adamw). Read as a file is: throws ConfigError whose problems each name their assignment,
// "--set epochs=ten: epochs: must be an integer, got a string \"ten\"". Validation stays the caller's.
ExperimentConfig withSettings(const ExperimentConfig &config, const std::vector<std::string> &assignments);

// Loads a preset shipped with TrainLab by name (d2l-1gpu, d2l-2gpu, fmnist-fast, quick-demo).
ExperimentConfig loadPreset(const std::string &name);
std::vector<std::string> presetNames();

} // namespace trainlab
