#include "core/config.h"

#include "core/atomicfile.h"
#include "core/devices.h"
#include "core/datasetstore.h"
#include "core/paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace trainlab {

using nlohmann::json;

ConfigError::ConfigError(const std::string &message, std::vector<std::string> problems)
    : std::runtime_error(message)
    , m_problems(std::move(problems))
{}

namespace {

std::string describe(const json &value)
{
    std::string text = value.dump();
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

std::string typeName(const json &value)
{
    if (value.is_number_integer())
        return "an integer";
    if (value.is_number())
        return "a number";
    const std::string name = value.type_name();
    return (name == "array" || name == "object" ? "an " : "a ") + name;
}

// Reads one object's keys, recording every unknown key or wrong type.
class Reader
{
public:
    Reader(const json &object, std::string prefix, std::vector<std::string> &problems)
        : m_object(object), m_prefix(std::move(prefix)), m_problems(problems)
    {}

    void checkUnknown(const std::set<std::string> &known) const
    {
        for (const auto &item : m_object.items()) {
            if (!known.count(item.key()))
                m_problems.push_back(path(item.key()) + ": unknown key");
        }
    }

    template<typename T>
    void integer(const char *key, T &out) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (value->is_number_integer())
            out = value->get<T>();
        else if (value->is_number_float() && std::floor(value->get<double>()) == value->get<double>()
                 && std::fabs(value->get<double>()) < 9e15)
            out = static_cast<T>(value->get<double>());
        else
            wrongType(key, "an integer", *value);
    }

    void number(const char *key, double &out) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (value->is_number())
            out = value->get<double>();
        else
            wrongType(key, "a number", *value);
    }

    void string(const char *key, std::string &out) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (value->is_string())
            out = value->get<std::string>();
        else
            wrongType(key, "a string", *value);
    }

    void strings(const char *key, std::vector<std::string> &out) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (!value->is_array()) {
            wrongType(key, "an array of strings", *value);
            return;
        }
        std::vector<std::string> result;
        for (std::size_t i = 0; i < value->size(); ++i) {
            const json &element = (*value)[i];
            if (element.is_string())
                result.push_back(element.get<std::string>());
            else
                m_problems.push_back(path(key) + "[" + std::to_string(i) + "]: must be a string, got "
                                     + describe(element));
        }
        out = result;
    }

    const json *object(const char *key) const
    {
        const json *value = find(key);
        if (value && !value->is_object()) {
            wrongType(key, "an object", *value);
            return nullptr;
        }
        return value;
    }

    std::string path(const std::string &key) const { return m_prefix.empty() ? key : m_prefix + "." + key; }

private:
    const json *find(const char *key) const
    {
        auto it = m_object.find(key);
        return it == m_object.end() ? nullptr : &*it;
    }

    void wrongType(const char *key, const char *expected, const json &value) const
    {
        m_problems.push_back(path(key) + ": must be " + expected + ", got " + typeName(value) + " "
                             + describe(value));
    }

    const json &m_object;
    std::string m_prefix;
    std::vector<std::string> &m_problems;
};

template<typename T>
std::string str(T value)
{
    std::ostringstream out;
    out << value;
    return out.str();
}

} // namespace

std::vector<std::string> ExperimentConfig::validate() const
{
    std::vector<std::string> problems;
    auto bad = [&](const std::string &key, const std::string &what, const std::string &got) {
        problems.push_back(key + ": " + what + ", got " + got);
    };
    if (name.empty())
        bad("name", "must not be empty", "\"\"");
    if (dataset.name != "fashion-mnist")
        bad("dataset.name", "must be \"fashion-mnist\"", "\"" + dataset.name + "\"");
    std::error_code ec;
    if (dataset.path.empty())
        bad("dataset.path", "must be \"builtin:sample\", \"fashion-mnist\" or a folder with the four IDX files", "\"\"");
    else if (dataset.path == "fashion-mnist") {
        if (const std::string hint = datasetMissingHint(dataset.path); !hint.empty())
            bad("dataset.path", hint, "\"" + dataset.path + "\"");
    } else if (dataset.path != "builtin:sample" && !std::filesystem::is_directory(dataset.path, ec))
        bad("dataset.path", "no such folder", "\"" + dataset.path + "\"");
    if (dataset.trainLimit < 0)
        bad("dataset.train_limit", "must be 0 (all) or more", str(dataset.trainLimit));
    if (dataset.testLimit < 0)
        bad("dataset.test_limit", "must be 0 (all) or more", str(dataset.testLimit));
    if (model.arch != "resnet18")
        bad("model.arch", "must be \"resnet18\"", "\"" + model.arch + "\"");
    if (model.inChannels < 1 || model.inChannels > 64)
        bad("model.in_channels", "must be between 1 and 64", str(model.inChannels));
    if (model.numClasses < 2 || model.numClasses > 100000)
        bad("model.num_classes", "must be between 2 and 100000", str(model.numClasses));
    if (devices.empty())
        bad("devices", "must list at least one device", "[]");
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const std::string why = checkDevice(devices[i]);
        if (!why.empty())
            bad("devices[" + std::to_string(i) + "]", why, "\"" + devices[i] + "\"");
        else if (devices[i] != "cpu"
                 && std::count(devices.begin(), devices.end(), devices[i]) > 1
                 && std::find(devices.begin(), devices.end(), devices[i]) - devices.begin()
                        != static_cast<long>(i))
            bad("devices[" + std::to_string(i) + "]", "is listed twice (only \"cpu\" may repeat)",
                "\"" + devices[i] + "\"");
    }
    if (batchSize < 1)
        bad("batch_size", "must be at least 1", str(batchSize));
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
    if (precision != "fp32" && precision != "bf16")
        bad("precision", "must be \"fp32\" or \"bf16\"", "\"" + precision + "\"");
    if (cpuThreads < 0 || cpuThreads > 1024)
        bad("cpu_threads", "must be 0 (all logical cores) up to 1024", str(cpuThreads));
    if (collectiveTimeoutSeconds < 1 || collectiveTimeoutSeconds > 86400)
        bad("collective_timeout_s", "must be between 1 and 86400", str(collectiveTimeoutSeconds));
    return problems;
}

std::string ExperimentConfig::toJson() const
{
    json j = {
        {"schema_version", kSchemaVersion},
        {"name", name},
        {"dataset", {{"name", dataset.name}, {"path", dataset.path},
                     {"train_limit", dataset.trainLimit}, {"test_limit", dataset.testLimit}}},
        {"model", {{"arch", model.arch}, {"in_channels", model.inChannels}, {"num_classes", model.numClasses}}},
        {"devices", devices},
        {"batch_size", batchSize},
        {"learning_rate", learningRate},
        {"epochs", epochs},
        {"momentum", momentum},
        {"weight_decay", weightDecay},
        {"seed", seed},
        {"precision", precision},
        {"cpu_threads", cpuThreads},
        {"collective_timeout_s", collectiveTimeoutSeconds},
    };
    return j.dump(2) + "\n";
}

ExperimentConfig ExperimentConfig::fromJson(const std::string &text, const std::string &origin)
{
    json root;
    try {
        root = json::parse(text);
    } catch (const json::parse_error &e) {
        throw ConfigError(origin + ": not valid JSON: " + e.what());
    }
    if (!root.is_object())
        throw ConfigError(origin + ": must be a JSON object, got " + typeName(root));

    std::vector<std::string> problems;
    ExperimentConfig config;
    Reader top(root, "", problems);
    top.checkUnknown({"schema_version", "name", "dataset", "model", "devices", "batch_size", "learning_rate",
                      "epochs", "momentum", "weight_decay", "seed", "precision", "cpu_threads",
                      "collective_timeout_s"});
    int schema = kSchemaVersion;
    top.integer("schema_version", schema);
    if (schema != kSchemaVersion)
        problems.push_back("schema_version: must be " + std::to_string(kSchemaVersion) + ", got "
                           + std::to_string(schema));
    top.string("name", config.name);
    if (const json *dataset = top.object("dataset")) {
        Reader r(*dataset, "dataset", problems);
        r.checkUnknown({"name", "path", "train_limit", "test_limit"});
        r.string("name", config.dataset.name);
        r.string("path", config.dataset.path);
        r.integer("train_limit", config.dataset.trainLimit);
        r.integer("test_limit", config.dataset.testLimit);
    }
    if (const json *model = top.object("model")) {
        Reader r(*model, "model", problems);
        r.checkUnknown({"arch", "in_channels", "num_classes"});
        r.string("arch", config.model.arch);
        r.integer("in_channels", config.model.inChannels);
        r.integer("num_classes", config.model.numClasses);
    }
    top.strings("devices", config.devices);
    top.integer("batch_size", config.batchSize);
    top.number("learning_rate", config.learningRate);
    top.integer("epochs", config.epochs);
    top.number("momentum", config.momentum);
    top.number("weight_decay", config.weightDecay);
    if (root.contains("seed") && root["seed"].is_number_integer() && root["seed"].get<long long>() < 0)
        problems.push_back("seed: must be 0 or more, got " + describe(root["seed"]));
    else
        top.integer("seed", config.seed);
    top.string("precision", config.precision);
    top.integer("cpu_threads", config.cpuThreads);
    top.integer("collective_timeout_s", config.collectiveTimeoutSeconds);

    if (!problems.empty()) {
        std::string message = origin + ": ";
        for (std::size_t i = 0; i < problems.size(); ++i)
            message += (i ? "; " : "") + problems[i];
        throw ConfigError(message, problems);
    }
    return config;
}

ExperimentConfig ExperimentConfig::load(const std::string &path)
{
    std::string text;
    try {
        text = readFile(path);
    } catch (const std::exception &e) {
        throw ConfigError(e.what());
    }
    return fromJson(text, path);
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
