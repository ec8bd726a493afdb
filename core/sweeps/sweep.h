#pragma once

#include "core/config.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trainlab {

// What ties a run folder to the sweep it belongs to; summary.json keeps it under "sweep".
struct SweepTag
{
    std::string id;               // empty: not part of a sweep
    int index = -1;               // 0-based position in the sweep
    int count = 0;                // runs in the sweep
    std::vector<std::pair<std::string, std::string>> values;   // axis name -> value as shown

    bool empty() const { return id.empty(); }
    // "learning_rate=0.1 batch_size=64"
    std::string label() const;
};

// The axes a sweep may vary, in the order its tables show them.
const std::vector<std::string> &sweepAxisNames();
// An axis's value in c as the sweep's tables show it ("0.1", "cpu,cpu", "crop 2+flip"); throws invalid_argument
// for a name sweepAxisNames() does not hold.
std::string axisValue(const ExperimentConfig &c, const std::string &axis);

// A number axis drawn from in mode "random": uniform in [min, max], or log-uniform when log.
struct AxisRange
{
    double min = 0;
    double max = 0;
    bool log = false;

    // "0.001..0.3 log", as the Add Sweep dialog reads it
    std::string text() const;
};

// Stops a sweep's run early when it does worse than the sweep's other runs did at the same epoch.
struct PruneRule
{
    // "": never; "median": below the median test acc of the others at that epoch; "percentile": outside the top
    // `percentile` % of them (Optuna's PercentilePruner; 50 is the median); "threshold": below minTestAcc.
    std::string rule;
    int startupRuns = 3;          // median, percentile: other runs that must have reached the epoch first
    int minEpochs = 1;            // epochs every run trains before it can be stopped
    double percentile = 25.0;     // percentile: the share of the others' accuracies a run must reach into, in %
    double minTestAcc = 0.0;      // threshold: the test acc every run must reach at each epoch from minEpochs

    bool on() const { return !rule.empty(); }
    bool comparesRuns() const { return rule == "median" || rule == "percentile"; }
    bool operator==(const PruneRule &o) const
    {
        return rule == o.rule && startupRuns == o.startupRuns && minEpochs == o.minEpochs && percentile == o.percentile
               && minTestAcc == o.minTestAcc;
    }
    // Each problem as "key: what is wrong, got value", the key without its parent ("rule", "percentile").
    std::vector<std::string> problems() const;
    // The JSON object a sweep file and queue.json keep: only the keys the rule reads.
    std::string toJson() const;
    // "below the median of the others once 3 reached the epoch, from epoch 1", for plans and dialogs.
    std::string describe() const;
    // Why a run at testAcc is stopped against the others' test accs at that epoch; "" when it goes on.
    std::string reason(int epoch, double testAcc, std::vector<double> others) const;
};

// The axes that take a range in mode "random" (the number axes).
bool isRangeAxis(const std::string &axis);

// A sweep file (schema_version 1): a base experiment and lists of values to try.
struct SweepConfig
{
    static constexpr int kSchemaVersion = 1;
    static constexpr int kMaxRuns = 10000;
    static constexpr int kAskAbove = 200;       // front-ends ask before starting more runs than this

    std::string name = "sweep";
    ExperimentConfig base;
    // grid: every combination; zip: the i-th value of each axis; random: `runs` draws, each axis's value picked
    // from its list or its range
    std::string mode = "grid";
    int runs = 0;                               // random: how many runs to draw
    std::uint64_t randomSeed = 0;               // random: the draws' seed; the same file plans the same runs
    std::map<std::string, AxisRange> ranges;    // random: number axes given as {min, max, log}
    std::vector<double> learningRate;
    std::vector<std::int64_t> batchSize;
    std::vector<std::vector<std::string>> devices;
    std::vector<int> epochs;
    std::vector<std::uint64_t> seed;
    std::vector<std::string> precision;
    std::vector<double> momentum;
    std::vector<double> weightDecay;
    std::vector<double> labelSmoothing;
    std::vector<double> gradClipNorm;
    std::vector<double> emaDecay;
    std::vector<std::string> schedule;              // schedule kinds; the schedule's other keys are the base's
    std::vector<double> warmupEpochs;               // schedule.warmup_epochs
    std::vector<AugmentationConfig> augmentation;   // each a whole augmentation object
    std::vector<std::string> init;                  // model.init schemes
    std::vector<std::string> optimizer;             // "sgd", "adamw"
    // The linear scaling rule: each run's learning rate is multiplied by its batch size / base.batch_size.
    bool scaleLrWithBatch = false;
    bool stopOnFailure = false;
    PruneRule pruning;

    // The axes that have values, in sweepAxisNames() order.
    std::vector<std::string> activeAxes() const;
    // How many values an axis has (0 when it is not swept or is a range).
    std::size_t axisSize(const std::string &axis) const;
    // "3" (values) or "0.001..0.3 log" (a range), for plans and counts.
    std::string axisSummary(const std::string &axis) const;
    // grid: the product of the axis sizes; zip: their common size; random: runs; 1 without axes; -1 when zip
    // sizes differ.
    long long runCount() const;

    // Every problem at once, each "key.path: what is wrong, got value"; checks each planned run's config too.
    std::vector<std::string> validate() const;

    std::string toJson() const;
    // baseDir: where a base given as a path is looked up when relative. Throws ConfigError naming every problem.
    static SweepConfig fromJson(const std::string &text, const std::string &origin = "sweep",
                                const std::string &baseDir = ".");
    static SweepConfig load(const std::string &path);
    void save(const std::string &path) const;
};

struct PlannedRun
{
    ExperimentConfig config;
    SweepTag tag;                 // id left empty: the queue gives it
};

// The runs in order (the last axis varies fastest in a grid); throws ConfigError when runCount() is invalid.
std::vector<PlannedRun> planSweep(const SweepConfig &sweep);

// Sweeps shipped with TrainLab (resources/presets/sweeps): d2l-scaling, lr-sweep-quick, random-search-quick.
std::vector<std::string> sweepPresetNames();
SweepConfig loadSweepPreset(const std::string &name);

} // namespace trainlab
