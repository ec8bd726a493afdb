#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainlab {

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
    double momentum = 0.0;
    double weightDecay = 0.0;
    std::uint64_t seed = 0;
    std::string precision = "fp32";
    int cpuThreads = 0;
    int collectiveTimeoutSeconds = 300;
    // Which checkpoints a run keeps: "last+best", "last" (resumable), "best", "none" (45 MB each).
    std::string checkpoints = "last+best";

    // Every problem at once, each "key.path: what is wrong, got value"; empty when valid.
    std::vector<std::string> validate() const;

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

// Loads a preset shipped with TrainLab by name (d2l-1gpu, d2l-2gpu, quick-demo).
ExperimentConfig loadPreset(const std::string &name);
std::vector<std::string> presetNames();

} // namespace trainlab
