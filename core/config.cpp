#include "core/config.h"

#include "core/atomicfile.h"
#include "core/devices.h"
#include "core/idx.h"
#include "core/datasetstore.h"
#include "core/paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace trainlab {

using nlohmann::json;

ConfigError::ConfigError(const std::string &message, std::vector<std::string> problems)
    : std::runtime_error(message)
    , m_problems(std::move(problems))
{}

namespace {

constexpr std::size_t kMaxDepth = 64;
constexpr std::uintmax_t kMaxFileBytes = 1 << 20;
constexpr std::int64_t kMaxBatchSize = 1000000;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Long values are cut so that a hostile file cannot flood the message.
std::string cut(const std::string &text)
{
    constexpr std::size_t kMax = 80;
    if (text.size() <= kMax)
        return text;
    std::size_t end = kMax;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
        --end;
    return text.substr(0, end) + "\u2026";
}

std::string quote(const std::string &text)
{
    return "\"" + cut(text) + "\"";
}

std::string describe(const json &value)
{
    return cut(value.dump());
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

std::string rangeText(std::int64_t min, std::int64_t max)
{
    if (min == max)
        return "must be " + std::to_string(min);
    return "must be an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

// Whether an integral JSON number fits T, without the wrap-around of get<T>().
template<typename T>
bool fitsInto(const json &value, T &out)
{
    using Limits = std::numeric_limits<T>;
    if (value.is_number_unsigned()) {
        const auto u = value.get<std::uint64_t>();
        if constexpr (Limits::digits < 64) {
            if (u > static_cast<std::uint64_t>(Limits::max()))
                return false;
        }
        out = static_cast<T>(u);
        return true;
    }
    if (value.is_number_integer()) {
        const auto s = value.get<std::int64_t>();
        if (s >= 0)
            return fitsInto(json(static_cast<std::uint64_t>(s)), out);
        if constexpr (Limits::is_signed) {
            if constexpr (Limits::digits < 63) {
                if (s < static_cast<std::int64_t>(Limits::min()))
                    return false;
            }
            out = static_cast<T>(s);
            return true;
        }
        return false;
    }
    // T holds exactly [-2^digits, 2^digits) (signed) or [0, 2^digits), and 2^digits is exact in a double.
    const double d = value.get<double>();
    const double upper = std::ldexp(1.0, Limits::digits);
    if (!(d >= (Limits::is_signed ? -upper : 0.0) && d < upper))
        return false;
    out = static_cast<T>(d);
    return true;
}

// Builds the document as json::parse does, but bounds nesting, reports duplicate keys and keeps numbers as written.
class ConfigSax : public nlohmann::json_sax<json>
{
public:
    bool null() override { return scalar(json(nullptr)); }
    bool boolean(bool value) override { return scalar(json(value)); }
    bool number_integer(number_integer_t value) override { return scalar(json(value)); }
    bool number_unsigned(number_unsigned_t value) override { return scalar(json(value)); }
    bool number_float(number_float_t value, const string_t &written) override
    {
        if (!m_stack.empty() && m_stack.back().value->is_object())
            m_written[childPath()] = written;
        return scalar(json(value));
    }
    bool string(string_t &value) override { return scalar(json(std::move(value))); }
    // JSON text has no binary values.
    bool binary(binary_t &) override { return false; }
    bool start_object(std::size_t) override { return open(json::value_t::object); }
    bool start_array(std::size_t) override { return open(json::value_t::array); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t &name) override
    {
        Frame &frame = m_stack.back();
        frame.key = name;
        if (frame.value->contains(name))
            m_problems.push_back(cut(childPath()) + ": duplicate key");
        return true;
    }

    bool parse_error(std::size_t, const std::string &lastToken, const nlohmann::json::exception &error) override
    {
        if (error.id == 406) {
            m_problems.push_back(label() + "number out of range (beyond \u00b11.8e308), got " + cut(lastToken));
            m_aborted = true;
            return false;
        }
        std::string what = error.what();
        const std::string marker = "; last read: '";
        const std::size_t at = what.find(marker);
        if (at != std::string::npos && what.compare(at + marker.size(), lastToken.size(), lastToken) == 0)
            what.replace(at + marker.size(), lastToken.size(), cut(lastToken));
        m_syntaxError = what;
        return false;
    }

    json &root() { return m_root; }
    const std::string &syntaxError() const { return m_syntaxError; }
    bool aborted() const { return m_aborted; }
    std::vector<std::string> &problems() { return m_problems; }
    const std::map<std::string, std::string> &written() const { return m_written; }

private:
    struct Frame
    {
        json *value;
        std::string path;
        std::string key;
        std::size_t count = 0;
    };

    // The key path of the value about to be read.
    std::string childPath() const
    {
        if (m_stack.empty())
            return {};
        const Frame &frame = m_stack.back();
        if (frame.value->is_object())
            return frame.path.empty() ? frame.key : frame.path + "." + frame.key;
        return frame.path + "[" + std::to_string(frame.count) + "]";
    }

    std::string label() const
    {
        const std::string path = childPath();
        return path.empty() ? std::string() : cut(path) + ": ";
    }

    json *place(json value)
    {
        if (m_stack.empty()) {
            m_root = std::move(value);
            return &m_root;
        }
        Frame &frame = m_stack.back();
        if (frame.value->is_object())
            return &((*frame.value)[frame.key] = std::move(value));
        ++frame.count;
        frame.value->push_back(std::move(value));
        return &frame.value->back();
    }

    bool scalar(json value)
    {
        place(std::move(value));
        return true;
    }

    bool open(json::value_t type)
    {
        if (m_stack.size() >= kMaxDepth) {
            m_problems.push_back(label() + "nested deeper than " + std::to_string(kMaxDepth) + " levels");
            m_aborted = true;
            return false;
        }
        std::string path = childPath();
        json *value = place(json(type));
        m_stack.push_back({value, std::move(path), {}, 0});
        return true;
    }

    bool close()
    {
        m_stack.pop_back();
        return true;
    }

    json m_root;
    std::vector<Frame> m_stack;
    std::vector<std::string> m_problems;
    std::map<std::string, std::string> m_written;
    std::string m_syntaxError;
    bool m_aborted = false;
};

// Reads one object's keys, recording every unknown key or wrong type.
class Reader
{
public:
    Reader(const json &object, std::string prefix, std::vector<std::string> &problems,
           const std::map<std::string, std::string> &written)
        : m_object(object), m_prefix(std::move(prefix)), m_problems(problems), m_written(written)
    {}

    void checkUnknown(const std::set<std::string> &known) const
    {
        for (const auto &item : m_object.items()) {
            if (!known.count(item.key()))
                m_problems.push_back(cut(path(item.key())) + ": unknown key");
        }
    }

    // A value outside T is refused here, naming the field's range; one inside T but outside it is left to validate().
    template<typename T>
    void integer(const char *key, T &out, std::int64_t min, std::int64_t max) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (!value->is_number()
            || (value->is_number_float() && std::floor(value->get<double>()) != value->get<double>())) {
            wrongType(key, "an integer", *value);
            return;
        }
        if (!fitsInto(*value, out))
            m_problems.push_back(path(key) + ": " + rangeText(min, max) + ", got " + shown(key, *value));
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

    std::string shown(const char *key, const json &value) const
    {
        const auto it = m_written.find(path(key));
        return it == m_written.end() ? describe(value) : cut(it->second);
    }

    void wrongType(const char *key, const char *expected, const json &value) const
    {
        m_problems.push_back(path(key) + ": must be " + expected + ", got " + typeName(value) + " "
                             + shown(key, value));
    }

    const json &m_object;
    std::string m_prefix;
    std::vector<std::string> &m_problems;
    const std::map<std::string, std::string> &m_written;
};

template<typename T>
std::string str(T value)
{
    std::ostringstream out;
    out << value;
    return out.str();
}

// Bounded, so that a file growing after load() checked its size still cannot exhaust memory.
std::string readConfigFile(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw ConfigError(path + ": cannot open: " + std::strerror(errno));
    std::string text(kMaxFileBytes + 1, '\0');
    in.read(&text[0], static_cast<std::streamsize>(text.size()));
    if (in.bad())
        throw ConfigError(path + ": read error");
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes)
        throw ConfigError(path + ": is larger than 1 MB");
    return text;
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
    // The checkpoint stores the seed as an int64, so a larger one would not survive it.
    if (seed > static_cast<std::uint64_t>(kInt64Max))
        bad("seed", "must be at most " + std::to_string(kInt64Max), str(seed));
    if (precision != "fp32" && precision != "bf16")
        bad("precision", "must be \"fp32\" or \"bf16\"", quote(precision));
    if (cpuThreads < 0 || cpuThreads > 1024)
        bad("cpu_threads", "must be 0 (all logical cores) up to 1024", str(cpuThreads));
    if (collectiveTimeoutSeconds < 1 || collectiveTimeoutSeconds > 86400)
        bad("collective_timeout_s", "must be between 1 and 86400", str(collectiveTimeoutSeconds));
    if (checkpoints != "last+best" && checkpoints != "last" && checkpoints != "best" && checkpoints != "none")
        bad("checkpoints", "must be \"last+best\", \"last\", \"best\" or \"none\"", quote(checkpoints));
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
        {"checkpoints", checkpoints},
    };
    return j.dump(2) + "\n";
}

ExperimentConfig ExperimentConfig::fromJson(const std::string &text, const std::string &origin)
{
    ConfigSax sax;
    json::sax_parse(text, &sax);
    if (!sax.syntaxError().empty())
        throw ConfigError(origin + ": not valid JSON: " + sax.syntaxError());
    std::vector<std::string> problems = std::move(sax.problems());
    auto fail = [&] {
        std::string message = origin + ": ";
        for (std::size_t i = 0; i < problems.size(); ++i)
            message += (i ? "; " : "") + problems[i];
        throw ConfigError(message, problems);
    };
    if (sax.aborted())
        fail();
    const json &root = sax.root();
    if (!root.is_object())
        throw ConfigError(origin + ": must be a JSON object, got " + typeName(root));

    ExperimentConfig config;
    const auto &written = sax.written();
    Reader top(root, "", problems, written);
    top.checkUnknown({"schema_version", "name", "dataset", "model", "devices", "batch_size", "learning_rate",
                      "epochs", "momentum", "weight_decay", "seed", "precision", "cpu_threads",
                      "collective_timeout_s", "checkpoints"});
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
        r.checkUnknown({"arch", "in_channels", "num_classes"});
        r.string("arch", config.model.arch);
        r.integer("in_channels", config.model.inChannels, 1, 64);
        r.integer("num_classes", config.model.numClasses, 2, 100000);
    }
    top.strings("devices", config.devices);
    top.integer("batch_size", config.batchSize, 1, kMaxBatchSize);
    top.number("learning_rate", config.learningRate);
    top.integer("epochs", config.epochs, 1, 100000);
    top.number("momentum", config.momentum);
    top.number("weight_decay", config.weightDecay);
    top.integer("seed", config.seed, 0, kInt64Max);
    top.string("precision", config.precision);
    top.integer("cpu_threads", config.cpuThreads, 0, 1024);
    top.integer("collective_timeout_s", config.collectiveTimeoutSeconds, 1, 86400);
    top.string("checkpoints", config.checkpoints);

    if (!problems.empty())
        fail();
    return config;
}

ExperimentConfig ExperimentConfig::load(const std::string &path)
{
    namespace fs = std::filesystem;
    // Checked before opening: opening a FIFO blocks, and /dev/zero never ends.
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (fs::is_directory(status))
        throw ConfigError(path + ": is a directory, not a config file");
    if (fs::exists(status) && !fs::is_regular_file(status))
        throw ConfigError(path + ": not a regular file");
    const std::uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > kMaxFileBytes)
        throw ConfigError(path + ": is larger than 1 MB");
    return fromJson(readConfigFile(path), path);
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
