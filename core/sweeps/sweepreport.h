#pragma once

#include "core/runs/report.h"
#include "core/sweeps/queue.h"

#include <map>
#include <string>
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
// Fixed-width text, one line per run, as `trainlab-cli sweep` prints at the end.
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
