#pragma once

#include "core/runs/report.h"
#include "core/sweeps/queue.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainlab {

// One row of a sweep's closing table.
struct SweepRow
{
    int index = 0;                         // 1-based
    std::vector<std::string> values;       // one per SweepTable::axes
    std::string status;                    // completed, stopped, failed, not started, running
    std::string error;
    int devices = 0;
    double bestTestAcc = 0.0;
    double secondsPerEpoch = 0.0;
    double imagesPerSecond = 0.0;
    // A devices axis: against the run with the first device set and the same other values. 0: none.
    double speedup = 0.0;
    double ideal = 0.0;
    double efficiency = 0.0;               // percent: speedup / ideal
    std::optional<TargetReached> toTarget; // to kDefaultTargetAccuracy, from the entry's metrics
    std::string runDir;
    std::string notes;                     // the person's notes on the run (notes.txt), or why they cannot be read
};

struct SweepTable
{
    std::vector<std::string> axes;
    bool hasScaling = false;               // a devices axis with more than one value
    std::vector<SweepRow> rows;
};

// From the queue's entries (axes from their tags, in sweepAxisNames() order).
SweepTable sweepTable(const std::vector<QueueEntry> &entries);
// How one axis went with the best test accuracy over a sweep's completed runs.
struct AxisEffect
{
    std::string axis;
    int runs = 0;                          // completed runs measured
    // Numbers: Spearman's rank correlation of the value with best acc (+1: the higher, the better), so a log scale
    // reads the same as a linear one; nullopt for other values or when either side never varies.
    std::optional<double> rankCorrelation;
    bool beyondChance = false;             // |rank correlation| at least 1.96 / sqrt(runs - 1): about 5 % by chance
    // Up to six distinct values, some shared by runs: each with the mean best acc of its runs; numbers in order,
    // others as first met.
    std::vector<std::pair<std::string, double>> meanByValue;
};

// The axes that vary among at least three completed runs, in the table's order.
std::vector<AxisEffect> axisEffects(const SweepTable &table);

// A sweep as parallel coordinates: a vertical axis per swept setting, then best acc; each run a line across them.
struct ParallelAxis
{
    std::string name;                      // the last, "best acc", is always linear
    bool numeric = false;                  // every value a number: placed by value, else by order first met
    bool log = false;                      // a setting's numbers above 0 spanning 20 times or more: by their logarithm
    std::vector<std::string> values;       // bottom to top: a number axis's lowest and highest, else every value
};

struct ParallelPlot
{
    std::vector<ParallelAxis> axes;        // the table's axes, then "best acc"
    // Per table row, each axis's height in [0, 1]; empty for a run that has no result yet.
    std::vector<std::vector<double>> lines;
};

ParallelPlot parallelCoordinates(const SweepTable &table);

// The best of two or more completed runs and, over three or more, each axis's effect; "" when there is neither.
std::string formatSweepFindings(const SweepTable &table);
// Fixed-width text, one line per run, as `trainlab-cli sweep` prints at the end; then, after a blank line, the
// findings.
std::string formatSweepTable(const SweepTable &table);
std::string sweepTableCsv(const SweepTable &table);

// Where an epoch's training time went, by the number of devices a run used: the mean over runs, ranks and
// epochs, the first epoch left out where a run has more (it pays for the warm-up). Runs without timing are left out.
std::map<int, TimeSplit> timeByDeviceCount(const std::vector<QueueEntry> &entries);

// The entries of a finished or interrupted sweep read back from its run folders (for the Compare view).
std::vector<QueueEntry> loadSweepEntries(const std::string &runsDir, const std::string &sweepId);
// Any runs side by side, as a sweep's: their tags' axes are the sweep settings that differ between them, then
// the other configuration keys that do (otherDifferences; none when they agree), the id kSelectedRuns. Throws naming the run folder whose record cannot be read.
constexpr const char *kSelectedRuns = "selected runs";
std::vector<QueueEntry> loadRunEntries(const std::vector<std::string> &runDirs);
// The configuration keys (dotted paths) in which these runs differ beyond any sweep axis: "dataset.train_limit",
// "speed.channels_last"; empty when the axes say it all.
std::vector<std::string> otherDifferences(const std::vector<QueueEntry> &entries);
// The sweep ids found in runsDir's run folders, newest first.
std::vector<std::string> listSweepIds(const std::string &runsDir);

} // namespace trainlab
