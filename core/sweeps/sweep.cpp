#include "core/sweeps/sweep.h"

#include "core/util/atomicfile.h"
#include "core/util/jsonread.h"
#include "core/util/numtext.h"
#include "core/util/paths.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace trainlab {

using namespace detail;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

std::string number(double value)
{
    return formatGeneral(value);
}

std::string joined(const std::vector<std::string> &devices)
{
    std::string text;
    for (const auto &d : devices)
        text += (text.empty() ? "" : ",") + d;
    return text;
}

// Reads one axis: a non-empty array whose every element convert() accepts; problems name axes.KEY[i].
template<typename T>
void readAxis(const json &axes, const char *key, std::vector<T> &out, std::vector<std::string> &problems,
              const std::string &expected, const std::function<bool(const json &, T &)> &convert)
{
    const auto it = axes.find(key);
    if (it == axes.end())
        return;
    const std::string path = std::string("axes.") + key;
    if (!it->is_array()) {
        problems.push_back(path + ": must be a list of values, each " + expected + ", got " + typeName(*it) + " " + describe(*it));
        return;
    }
    if (it->empty()) {
        problems.push_back(path + ": must list at least one value (leave the key out to keep the base's), got []");
        return;
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
        T value{};
        if (convert((*it)[i], value))
            out.push_back(value);
        else
            problems.push_back(path + "[" + std::to_string(i) + "]: must be " + expected + ", got " + describe((*it)[i]));
    }
}

// Each value an augmentation object (keys left out are off) or "none".
void readAugmentationAxis(const json &axes, std::vector<AugmentationConfig> &out, std::vector<std::string> &problems,
                          const std::map<std::string, std::string> &written)
{
    const auto it = axes.find("augmentation");
    if (it == axes.end())
        return;
    if (!it->is_array() || it->empty()) {
        problems.push_back("axes.augmentation: must be a non-empty list of augmentation objects or \"none\", got "
                           + typeName(*it) + " " + describe(*it));
        return;
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
        const json &v = (*it)[i];
        const std::string path = "axes.augmentation[" + std::to_string(i) + "]";
        AugmentationConfig a;
        if (v.is_string() && v.get<std::string>() == "none") {
            out.push_back(a);
        } else if (v.is_object()) {
            Reader r(v, path, problems, written);
            r.checkUnknown({"flip", "crop_padding", "erasing"});
            r.boolean("flip", a.flip);
            r.integer("crop_padding", a.cropPadding, 0, 100000);
            r.number("erasing", a.erasing);
            out.push_back(a);
        } else {
            problems.push_back(path + ": must be an object of crop_padding, flip, erasing or \"none\", got "
                               + typeName(v) + " " + describe(v));
        }
    }
}

bool readBool(const json &root, const char *key, bool &out, std::vector<std::string> &problems)
{
    const auto it = root.find(key);
    if (it == root.end())
        return false;
    if (it->is_boolean())
        out = it->get<bool>();
    else
        problems.push_back(std::string(key) + ": must be true or false, got " + typeName(*it) + " " + describe(*it));
    return true;
}

bool readString(const json &v, std::string &out)
{
    if (!v.is_string())
        return false;
    out = v.get<std::string>();
    return true;
}

bool isInteger(const json &v)
{
    return v.is_number() && !(v.is_number_float() && std::floor(v.get<double>()) != v.get<double>());
}

ExperimentConfig readBase(const json &base, const std::string &baseDir, std::vector<std::string> &problems)
{
    try {
        if (base.is_object())
            return ExperimentConfig::fromJson(base.dump(), "base");
        if (!base.is_string()) {
            problems.push_back("base: must be an experiment object, a config file path or \"preset:NAME\", got "
                               + typeName(base) + " " + describe(base));
            return {};
        }
        const std::string ref = base.get<std::string>();
        if (ref.rfind("preset:", 0) == 0)
            return loadPreset(ref.substr(7));
        const fs::path path = fs::path(ref).is_absolute() ? fs::path(ref) : fs::path(baseDir) / ref;
        return ExperimentConfig::load(path.string());
    } catch (const ConfigError &e) {
        if (base.is_object() && !e.problems().empty()) {
            for (const auto &p : e.problems())
                problems.push_back("base." + p);
        } else {
            problems.push_back("base: " + std::string(e.what()));
        }
    }
    return {};
}

// One run's values: an index into each listed axis, a drawn value for each range.
struct Choice
{
    std::map<std::string, std::size_t> index;
    std::map<std::string, double> drawn;
};

// The field a number axis sets; nullptr for the other axes.
template <typename Config>
auto numberField(Config &c, const std::string &axis) -> decltype(&c.learningRate)
{
    if (axis == "learning_rate")
        return &c.learningRate;
    if (axis == "momentum")
        return &c.momentum;
    if (axis == "weight_decay")
        return &c.weightDecay;
    if (axis == "label_smoothing")
        return &c.labelSmoothing;
    if (axis == "grad_clip_norm")
        return &c.gradClipNorm;
    if (axis == "ema_decay")
        return &c.emaDecay;
    if (axis == "warmup_epochs")
        return &c.schedule.warmupEpochs;
    return nullptr;
}

// A sweep's list for a number axis (the axes numberField knows); nullptr for the other axes.
template <typename Sweep>
auto numberValues(Sweep &s, const std::string &axis) -> decltype(&s.learningRate)
{
    if (axis == "learning_rate")
        return &s.learningRate;
    if (axis == "momentum")
        return &s.momentum;
    if (axis == "weight_decay")
        return &s.weightDecay;
    if (axis == "label_smoothing")
        return &s.labelSmoothing;
    if (axis == "grad_clip_norm")
        return &s.gradClipNorm;
    if (axis == "ema_decay")
        return &s.emaDecay;
    if (axis == "warmup_epochs")
        return &s.warmupEpochs;
    return nullptr;
}

ExperimentConfig applyChoice(const SweepConfig &s, const Choice &choice, SweepTag &tag)
{
    ExperimentConfig c = s.base;
    for (const auto &axis : s.activeAxes()) {
        if (const auto drawn = choice.drawn.find(axis); drawn != choice.drawn.end()) {
            *numberField(c, axis) = drawn->second;
            tag.values.emplace_back(axis, axisValue(c, axis));
            continue;
        }
        const std::size_t i = choice.index.at(axis);
        if (const auto *values = numberValues(s, axis))
            *numberField(c, axis) = values->at(i);
        else if (axis == "batch_size")
            c.batchSize = s.batchSize[i];
        else if (axis == "devices")
            c.devices = s.devices[i];
        else if (axis == "epochs")
            c.epochs = s.epochs[i];
        else if (axis == "seed")
            c.seed = s.seed[i];
        else if (axis == "precision")
            c.precision = s.precision[i];
        else if (axis == "schedule")
            c.schedule.kind = s.schedule[i];
        else if (axis == "augmentation")
            c.augmentation = s.augmentation[i];
        else if (axis == "init")
            c.model.init = s.init[i];
        else if (axis == "optimizer")
            c.optimizer = s.optimizer[i];
        tag.values.emplace_back(axis, axisValue(c, axis));
    }
    if (s.scaleLrWithBatch && s.base.batchSize > 0)
        c.learningRate *= static_cast<double>(c.batchSize) / static_cast<double>(s.base.batchSize);
    return c;
}

// splitmix64: a fixed generator, so a sweep file draws the same runs on every machine and library.
std::uint64_t nextRandom(std::uint64_t &state)
{
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double unitRandom(std::uint64_t &state)
{
    return static_cast<double>(nextRandom(state) >> 11) * 0x1.0p-53;
}

// A value in the range, rounded so that tables and folder labels stay readable: to 3 significant digits, or to a
// hundredth of the range's width where that is finer (0.99..0.9999 would otherwise draw 0.99, 0.999 or 1).
double drawFrom(const AxisRange &r, double u)
{
    const double v = r.log ? std::exp(std::log(r.min) + u * (std::log(r.max) - std::log(r.min)))
                           : r.min + u * (r.max - r.min);
    if (!(r.max > r.min) || v == 0)
        return std::clamp(v, r.min, r.max);
    const int bySize = 2 - static_cast<int>(std::floor(std::log10(std::fabs(v))));
    const int byWidth = 2 + static_cast<int>(std::ceil(-std::log10(r.max - r.min)));
    double rounded = v;
    if (!parseDouble(formatFixed(v, std::clamp(std::max(bySize, byWidth), 0, 15)), rounded))
        rounded = v;
    return std::clamp(rounded, r.min, r.max);
}

std::vector<Choice> choices(const SweepConfig &s)
{
    const auto axes = s.activeAxes();
    std::vector<Choice> out;
    const long long count = s.runCount();
    if (count < 0)
        return out;
    if (s.mode == "random") {
        std::uint64_t state = s.randomSeed;
        for (long long k = 0; k < count; ++k) {
            Choice c;
            for (const auto &a : axes) {
                const double u = unitRandom(state);
                if (const auto range = s.ranges.find(a); range != s.ranges.end()) {
                    c.drawn[a] = drawFrom(range->second, u);
                } else {
                    const std::size_t n = s.axisSize(a);
                    c.index[a] = std::min(n - 1, static_cast<std::size_t>(u * static_cast<double>(n)));
                }
            }
            out.push_back(c);
        }
        return out;
    }
    if (s.mode == "zip") {
        for (long long k = 0; k < count; ++k) {
            Choice c;
            for (const auto &a : axes)
                c.index[a] = static_cast<std::size_t>(k);
            out.push_back(c);
        }
        return out;
    }
    for (long long k = 0; k < count; ++k) {
        Choice c;
        long long rest = k;
        for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
            const auto n = static_cast<long long>(s.axisSize(*a));
            c.index[*a] = static_cast<std::size_t>(rest % n);
            rest /= n;
        }
        out.push_back(c);
    }
    return out;
}

// The key a config problem ("devices[1]: ...", "batch_size: ...", "schedule.kind: ...") is about.
std::string keyOfProblem(const std::string &problem)
{
    return problem.substr(0, problem.find_first_of(":["));
}

// The swept axis that set a problem's key, or "" when the base did.
std::string axisOfKey(const std::string &key, const std::vector<std::string> &axes)
{
    const auto active = [&axes](const char *axis) { return std::find(axes.begin(), axes.end(), axis) != axes.end(); };
    if (key == "schedule.warmup_epochs" && active("warmup_epochs"))
        return "warmup_epochs";
    if (key.rfind("schedule.", 0) == 0 && active("schedule"))
        return "schedule";
    if (key.rfind("augmentation.", 0) == 0 && active("augmentation"))
        return "augmentation";
    if (key == "model.init" && active("init"))
        return "init";
    // The base's momentum is valid alone: the optimizer axis is what made it wrong.
    if ((key == "momentum" || key == "nesterov" || key.rfind("adam_", 0) == 0) && !active(key.c_str()) && active("optimizer"))
        return "optimizer";
    return active(key.c_str()) ? key : std::string();
}

} // namespace

std::vector<std::string> PruneRule::problems() const
{
    std::vector<std::string> out;
    if (!on())
        return out;
    if (rule != "median" && rule != "percentile" && rule != "threshold")
        out.push_back("rule: must be \"median\", \"percentile\" or \"threshold\", got " + quote(rule));
    if (comparesRuns() && (startupRuns < 1 || startupRuns > SweepConfig::kMaxRuns))
        out.push_back("startup_runs: must be from 1 to " + std::to_string(SweepConfig::kMaxRuns) + ", got "
                      + std::to_string(startupRuns));
    if (minEpochs < 1 || minEpochs > 100000)
        out.push_back("min_epochs: must be from 1 to 100000, got " + std::to_string(minEpochs));
    if (rule == "percentile" && !(percentile > 0.0 && percentile < 100.0))
        out.push_back("percentile: must be above 0 and below 100 (the top share kept, in %), got "
                      + formatGeneral(percentile, 12));
    if (rule == "threshold" && !(minTestAcc > 0.0 && minTestAcc <= 1.0))
        out.push_back("min_test_acc: must be above 0 and at most 1, got " + formatGeneral(minTestAcc, 12));
    return out;
}

std::string PruneRule::toJson() const
{
    json j = {{"rule", rule}};
    if (comparesRuns())
        j["startup_runs"] = startupRuns;
    j["min_epochs"] = minEpochs;
    if (rule == "percentile")
        j["percentile"] = percentile;
    if (rule == "threshold")
        j["min_test_acc"] = minTestAcc;
    return j.dump();
}

std::string PruneRule::describe() const
{
    const std::string from = ", from epoch " + std::to_string(minEpochs);
    const std::string once = " once " + std::to_string(startupRuns) + " others reached the epoch";
    if (rule == "median")
        return "below the median of the others" + once + from;
    if (rule == "percentile")
        return "outside the top " + formatGeneral(percentile, 6) + " % of the others" + once + from;
    if (rule == "threshold")
        return "below test acc " + formatGeneral(minTestAcc, 6) + from;
    return {};
}

std::string PruneRule::reason(int epoch, double testAcc, std::vector<double> others) const
{
    const std::string acc = "test acc " + formatFixed(testAcc, 3) + " at epoch " + std::to_string(epoch);
    if (rule == "threshold")
        return testAcc < minTestAcc ? acc + " is below the threshold " + formatGeneral(minTestAcc, 6) : std::string();
    if (!comparesRuns() || others.empty() || others.size() < static_cast<std::size_t>(startupRuns))
        return {};
    std::sort(others.begin(), others.end());
    // The (100 - kept)th percentile, interpolated between neighbours as numpy's and Optuna's are; 50: the median.
    const double kept = rule == "median" ? 50.0 : percentile;
    const double at = (100.0 - kept) / 100.0 * static_cast<double>(others.size() - 1);
    const auto low = static_cast<std::size_t>(std::floor(at));
    const std::size_t high = std::min(low + 1, others.size() - 1);
    const double bar = others[low] + (at - static_cast<double>(low)) * (others[high] - others[low]);
    if (!(testAcc < bar))
        return {};
    const std::string runs = " of the sweep's " + std::to_string(others.size()) + " other runs there";
    if (rule == "median")
        return acc + " is below the median " + formatFixed(bar, 3) + runs;
    return acc + " is below " + formatFixed(bar, 3) + ", the bar for the top " + formatGeneral(percentile, 6)
           + " %" + runs;
}

std::string AxisRange::text() const
{
    return formatGeneral(min, 12) + ".." + formatGeneral(max, 12) + (log ? " log" : "");
}

bool isRangeAxis(const std::string &axis)
{
    ExperimentConfig c;
    return numberField(c, axis) != nullptr;
}

std::string SweepTag::label() const
{
    std::string text;
    for (const auto &[axis, value] : values)
        text += (text.empty() ? "" : " ") + axis + "=" + value;
    return text;
}

const std::vector<std::string> &sweepAxisNames()
{
    static const std::vector<std::string> names = {"learning_rate", "batch_size", "devices", "epochs", "seed",
                                                   "precision", "momentum", "weight_decay", "label_smoothing",
                                                   "grad_clip_norm", "ema_decay", "schedule", "warmup_epochs", "augmentation", "init",
                                                   "optimizer"};
    return names;
}

std::string axisValue(const ExperimentConfig &c, const std::string &axis)
{
    if (const double *field = numberField(c, axis))
        return number(*field);
    if (axis == "batch_size")
        return std::to_string(c.batchSize);
    if (axis == "devices")
        return joined(c.devices);
    if (axis == "epochs")
        return std::to_string(c.epochs);
    if (axis == "seed")
        return std::to_string(c.seed);
    if (axis == "precision")
        return c.precision;
    if (axis == "schedule")
        return c.schedule.kind;
    if (axis == "augmentation") {
        // "crop 2+flip": one value, with no comma to read as a separator.
        std::string shown = c.augmentation.describe();
        for (std::size_t at = shown.find(", "); at != std::string::npos; at = shown.find(", "))
            shown.replace(at, 2, "+");
        return shown;
    }
    if (axis == "init")
        return c.model.init;
    if (axis == "optimizer")
        return c.optimizer;
    throw std::invalid_argument("not a sweep axis: \"" + axis + "\"");
}

std::size_t SweepConfig::axisSize(const std::string &axis) const
{
    if (const auto *values = numberValues(*this, axis))
        return values->size();
    if (axis == "batch_size")
        return batchSize.size();
    if (axis == "devices")
        return devices.size();
    if (axis == "epochs")
        return epochs.size();
    if (axis == "seed")
        return seed.size();
    if (axis == "precision")
        return precision.size();
    if (axis == "schedule")
        return schedule.size();
    if (axis == "augmentation")
        return augmentation.size();
    if (axis == "init")
        return init.size();
    if (axis == "optimizer")
        return optimizer.size();
    return 0;
}

std::vector<std::string> SweepConfig::activeAxes() const
{
    std::vector<std::string> axes;
    for (const auto &a : sweepAxisNames()) {
        if (axisSize(a) > 0 || ranges.count(a))
            axes.push_back(a);
    }
    return axes;
}

std::string SweepConfig::axisSummary(const std::string &axis) const
{
    if (const auto range = ranges.find(axis); range != ranges.end())
        return range->second.text();
    return std::to_string(axisSize(axis));
}

long long SweepConfig::runCount() const
{
    const auto axes = activeAxes();
    long long count = 1;
    if (mode == "random")
        return runs;
    if (mode == "zip") {
        if (axes.empty())
            return 1;
        const std::size_t n = axisSize(axes.front());
        for (const auto &a : axes) {
            if (axisSize(a) != n)
                return -1;
        }
        return static_cast<long long>(n);
    }
    for (const auto &a : axes) {
        count *= static_cast<long long>(axisSize(a));
        if (count > kMaxRuns)
            return count;   // already too many; stop before it can overflow
    }
    return count;
}

std::vector<std::string> SweepConfig::validate() const
{
    std::vector<std::string> problems;
    if (name.empty())
        problems.push_back("name: must not be empty, got \"\"");
    if (mode != "grid" && mode != "zip" && mode != "random") {
        problems.push_back("mode: must be \"grid\", \"zip\" or \"random\", got " + quote(mode));
        return problems;
    }
    if (mode == "random" && (runs < 1 || runs > kMaxRuns)) {
        problems.push_back("runs: mode \"random\" needs how many runs to draw, from 1 to " + std::to_string(kMaxRuns)
                           + ", got " + std::to_string(runs));
        return problems;
    }
    if (mode != "random" && !ranges.empty()) {
        problems.push_back("axes." + ranges.begin()->first + ": a range {min, max} is drawn from in mode \"random\" only; "
                           + "give a list of values for mode " + quote(mode) + ", got " + ranges.begin()->second.text());
        return problems;
    }
    for (const auto &[axis, range] : ranges) {
        const std::string path = "axes." + axis;
        if (!isRangeAxis(axis)) {
            problems.push_back(path + ": only a number axis takes a range, got " + range.text());
            continue;
        }
        if (!std::isfinite(range.min) || !std::isfinite(range.max) || range.min > range.max) {
            problems.push_back(path + ": min must not be above max, got " + range.text());
            continue;
        }
        if (range.log && range.min <= 0) {
            problems.push_back(path + ".min: a log range needs min above 0, got " + formatGeneral(range.min, 12));
            continue;
        }
        // The values between are as valid as both ends for every number key.
        for (const auto &[end, value] : {std::pair{"min", range.min}, std::pair{"max", range.max}}) {
            ExperimentConfig c = base;
            *numberField(c, axis) = value;
            for (const auto &p : c.validate()) {
                if (axisOfKey(keyOfProblem(p), {axis}) == axis)
                    problems.push_back(path + "." + end + ": " + p);
            }
        }
    }
    if (!problems.empty())
        return problems;
    const long long count = runCount();
    if (count < 0) {
        std::string sizes;
        for (const auto &a : activeAxes())
            sizes += (sizes.empty() ? "" : ", ") + a + " " + std::to_string(axisSize(a));
        problems.push_back("axes: zip mode needs every axis to have the same number of values, got " + sizes);
        return problems;
    }
    if (count > kMaxRuns) {
        problems.push_back("axes: the grid has " + std::to_string(count) + " runs or more; at most "
                           + std::to_string(kMaxRuns));
        return problems;
    }
    for (const std::string &p : pruning.problems())
        problems.push_back("pruning." + p);
    if (scaleLrWithBatch && batchSize.empty())
        problems.push_back("scale_lr_with_batch: needs a batch_size axis to scale by, got true");
    std::set<std::string> seen;
    const auto all = choices(*this);
    const auto axes = activeAxes();
    // The base's own invalid values count once; an axis value's problem is named by its position.
    for (std::size_t k = 0; k < all.size(); ++k) {
        SweepTag tag;
        const ExperimentConfig run = applyChoice(*this, all[k], tag);
        for (const auto &p : run.validate()) {
            const std::string key = keyOfProblem(p);
            const std::string axis = axisOfKey(key, axes);
            std::string named;
            if (!axis.empty() && all[k].drawn.count(axis)) {
                named = "axes." + axis + " (run " + std::to_string(k + 1) + " drew " + formatGeneral(all[k].drawn.at(axis), 12) + "): " + p;
            } else if (!axis.empty()) {
                const std::string at = "axes." + axis + "[" + std::to_string(all[k].index.at(axis)) + "]";
                // A key inside the axis's object ("schedule.warmup_epochs" of a schedule value) stays named.
                named = key == axis ? at + p.substr(axis.size()) : at + ": " + p;
                if (axis == "learning_rate" && scaleLrWithBatch)
                    named += " (after scale_lr_with_batch, run " + std::to_string(k + 1) + ": " + tag.label() + ")";
            } else {
                named = "base." + p;
            }
            if (seen.insert(named).second)
                problems.push_back(named);
        }
    }
    return problems;
}

std::string SweepConfig::toJson() const
{
    json axes = json::object();
    if (!learningRate.empty())
        axes["learning_rate"] = learningRate;
    if (!batchSize.empty())
        axes["batch_size"] = batchSize;
    if (!devices.empty())
        axes["devices"] = devices;
    if (!epochs.empty())
        axes["epochs"] = epochs;
    if (!seed.empty())
        axes["seed"] = seed;
    if (!precision.empty())
        axes["precision"] = precision;
    if (!momentum.empty())
        axes["momentum"] = momentum;
    if (!weightDecay.empty())
        axes["weight_decay"] = weightDecay;
    if (!labelSmoothing.empty())
        axes["label_smoothing"] = labelSmoothing;
    if (!gradClipNorm.empty())
        axes["grad_clip_norm"] = gradClipNorm;
    if (!emaDecay.empty())
        axes["ema_decay"] = emaDecay;
    if (!schedule.empty())
        axes["schedule"] = schedule;
    if (!warmupEpochs.empty())
        axes["warmup_epochs"] = warmupEpochs;
    for (const AugmentationConfig &a : augmentation)
        axes["augmentation"].push_back({{"flip", a.flip}, {"crop_padding", a.cropPadding}, {"erasing", a.erasing}});
    if (!init.empty())
        axes["init"] = init;
    if (!optimizer.empty())
        axes["optimizer"] = optimizer;
    for (const auto &[axis, range] : ranges)
        axes[axis] = {{"min", range.min}, {"max", range.max}, {"log", range.log}};
    json j = {
        {"schema_version", kSchemaVersion},
        {"name", name},
        {"base", json::parse(base.toJson())},
        {"mode", mode},
        {"axes", axes},
        {"scale_lr_with_batch", scaleLrWithBatch},
        {"stop_on_failure", stopOnFailure},
    };
    if (pruning.on())
        j["pruning"] = json::parse(pruning.toJson());
    if (mode == "random") {
        j["runs"] = runs;
        j["random_seed"] = randomSeed;
    }
    return j.dump(2) + "\n";
}

SweepConfig SweepConfig::fromJson(const std::string &text, const std::string &origin, const std::string &baseDir)
{
    StrictJson doc = parseStrict(text, origin);
    std::vector<std::string> problems = std::move(doc.problems);
    const json &root = doc.root;
    SweepConfig s;
    Reader top(root, "", problems, doc.written);
    top.checkUnknown({"schema_version", "name", "base", "mode", "axes", "scale_lr_with_batch", "stop_on_failure", "runs",
                      "random_seed", "pruning"});
    int schema = kSchemaVersion;
    top.integer("schema_version", schema, kSchemaVersion, kSchemaVersion);
    if (schema != kSchemaVersion)
        problems.push_back("schema_version: must be " + std::to_string(kSchemaVersion) + ", got " + std::to_string(schema));
    top.string("name", s.name);
    top.string("mode", s.mode);
    top.integer("runs", s.runs, 1, kMaxRuns);
    top.integer("random_seed", s.randomSeed, 0, kInt64Max);
    if (s.mode != "random") {
        for (const char *key : {"runs", "random_seed"}) {
            if (root.contains(key))
                problems.push_back(std::string(key) + ": only mode \"random\" draws runs, got mode " + quote(s.mode));
        }
    }
    readBool(root, "scale_lr_with_batch", s.scaleLrWithBatch, problems);
    readBool(root, "stop_on_failure", s.stopOnFailure, problems);
    if (const json *pruning = top.object("pruning")) {
        Reader r(*pruning, "pruning", problems, doc.written);
        r.checkUnknown({"rule", "startup_runs", "min_epochs", "percentile", "min_test_acc"});
        if (!pruning->contains("rule"))
            problems.push_back("pruning.rule: missing (\"median\", \"percentile\" or \"threshold\")");
        r.string("rule", s.pruning.rule);
        if (pruning->contains("rule") && s.pruning.rule.empty())
            problems.push_back("pruning.rule: must be \"median\", \"percentile\" or \"threshold\", got \"\"");
        r.integer("startup_runs", s.pruning.startupRuns, 1, kMaxRuns);
        r.integer("min_epochs", s.pruning.minEpochs, 1, 100000);
        r.number("percentile", s.pruning.percentile);
        r.number("min_test_acc", s.pruning.minTestAcc);
        // A key the rule does not read would be silently ignored: say so.
        const std::pair<const char *, bool> readBy[] = {{"startup_runs", s.pruning.comparesRuns()},
                                                        {"percentile", s.pruning.rule == "percentile"},
                                                        {"min_test_acc", s.pruning.rule == "threshold"}};
        for (const auto &[key, read] : readBy) {
            if (pruning->contains(key) && !read && !s.pruning.rule.empty())
                problems.push_back(std::string("pruning.") + key + ": rule " + quote(s.pruning.rule) + " does not read it");
        }
        if (s.pruning.rule == "threshold" && !pruning->contains("min_test_acc"))
            problems.push_back("pruning.min_test_acc: missing (the test acc a run must reach, such as 0.2)");
    }
    if (const auto base = root.find("base"); base != root.end())
        s.base = readBase(*base, baseDir, problems);
    else
        problems.push_back("base: missing (an experiment object, a config file path or \"preset:NAME\")");
    if (const json *axes = top.object("axes")) {
        Reader r(*axes, "axes", problems, doc.written);
        r.checkUnknown({sweepAxisNames().begin(), sweepAxisNames().end()});
        for (const std::string &key : sweepAxisNames()) {
            std::vector<double> *values = numberValues(s, key);
            if (!values)
                continue;
            if (const auto range = axes->find(key); range != axes->end() && range->is_object()) {
                Reader rr(*range, std::string("axes.") + key, problems, doc.written);
                rr.checkUnknown({"min", "max", "log"});
                AxisRange r;
                for (const char *end : {"min", "max"}) {
                    if (!range->contains(end))
                        problems.push_back(rr.path(end) + ": missing (a range is {\"min\": A, \"max\": B})");
                }
                rr.number("min", r.min);
                rr.number("max", r.max);
                rr.boolean("log", r.log);
                s.ranges[key] = r;
                continue;
            }
            readAxis<double>(*axes, key.c_str(), *values, problems, "a number", [](const json &v, double &out) {
                if (!v.is_number())
                    return false;
                out = v.get<double>();
                return true;
            });
        }
        // Any string: a value the config refuses is named by its axis entry when the grid is expanded.
        const std::tuple<const char *, std::vector<std::string> *, const char *> stringAxes[] = {
            {"schedule", &s.schedule, "a schedule kind (a string)"},
            {"precision", &s.precision, "a string"},
            {"init", &s.init, "a string"},
            {"optimizer", &s.optimizer, "a string"}};
        for (const auto &[key, values, expected] : stringAxes)
            readAxis<std::string>(*axes, key, *values, problems, expected, readString);
        readAugmentationAxis(*axes, s.augmentation, problems, doc.written);
        readAxis<std::int64_t>(*axes, "batch_size", s.batchSize, problems, "an integer from 1 to 1000000",
                               [](const json &v, std::int64_t &out) { return isInteger(v) && fitsInto(v, out); });
        readAxis<int>(*axes, "epochs", s.epochs, problems, "an integer from 1 to 100000",
                      [](const json &v, int &out) { return isInteger(v) && fitsInto(v, out); });
        readAxis<std::uint64_t>(*axes, "seed", s.seed, problems, "an integer from 0 to 9223372036854775807",
                                [](const json &v, std::uint64_t &out) {
                                    return isInteger(v) && fitsInto(v, out) && out <= static_cast<std::uint64_t>(kInt64Max);
                                });
        readAxis<std::vector<std::string>>(*axes, "devices", s.devices, problems,
                                           "a non-empty array of device names, as [\"cpu\"] or [\"cuda:0\",\"cuda:1\"]",
                                           [](const json &v, std::vector<std::string> &out) {
                                               if (!v.is_array() || v.empty())
                                                   return false;
                                               for (const auto &d : v) {
                                                   if (!d.is_string())
                                                       return false;
                                                   out.push_back(d.get<std::string>());
                                               }
                                               return true;
                                           });
    }
    throwProblems(origin, problems);
    return s;
}

SweepConfig SweepConfig::load(const std::string &path)
{
    return fromJson(readBoundedFile(path), path, fs::path(path).parent_path().string().empty()
                                                     ? std::string(".")
                                                     : fs::path(path).parent_path().string());
}

void SweepConfig::save(const std::string &path) const
{
    writeFileAtomic(path, toJson());
}

std::vector<PlannedRun> planSweep(const SweepConfig &sweep)
{
    const long long count = sweep.runCount();
    if (count < 0 || count > SweepConfig::kMaxRuns)
        throw ConfigError("sweep " + sweep.name + ": cannot plan its runs (see validate())");
    std::vector<PlannedRun> runs;
    const auto all = choices(sweep);
    for (std::size_t k = 0; k < all.size(); ++k) {
        PlannedRun run;
        run.config = applyChoice(sweep, all[k], run.tag);
        run.config.name = sweep.name + "-" + std::to_string(k + 1);
        run.tag.index = static_cast<int>(k);
        run.tag.count = static_cast<int>(all.size());
        runs.push_back(std::move(run));
    }
    return runs;
}

std::vector<std::string> sweepPresetNames()
{
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(resourcesDir() + "/presets/sweeps", ec)) {
        if (entry.path().extension() == ".json")
            names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

SweepConfig loadSweepPreset(const std::string &name)
{
    const auto names = sweepPresetNames();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string known;
        for (const auto &n : names)
            known += (known.empty() ? "" : ", ") + n;
        throw ConfigError("unknown sweep preset \"" + name + "\" (known: " + known + ")");
    }
    return SweepConfig::load(resourcesDir() + "/presets/sweeps/" + name + ".json");
}

} // namespace trainlab
