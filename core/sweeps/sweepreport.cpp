#include "core/sweeps/sweepreport.h"

#include "core/runs/runrecord.h"
#include "core/runs/runstorage.h"
#include "core/util/numtext.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <filesystem>
#include <map>
#include <set>

namespace trainlab {

namespace fs = std::filesystem;

namespace {

std::string statusText(EntryState state)
{
    return state == EntryState::Waiting ? "not started" : toString(state);
}

std::string valueOf(const SweepTag &tag, const std::string &axis)
{
    for (const auto &[a, v] : tag.values) {
        if (a == axis)
            return v;
    }
    return {};
}

std::string fixed(double value, int decimals)
{
    return formatFixed(value, decimals);
}

std::string csvField(const std::string &text)
{
    if (text.find_first_of(",\"\n\r") == std::string::npos)
        return text;
    std::string quoted = "\"";
    for (const char c : text)
        quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

// A run folder as the Compare view and the tables take it; throws when its config or metrics cannot be read.
QueueEntry entryOfRun(const RunSummary &s)
{
    QueueEntry e;
    e.config = ExperimentConfig::load(s.dir + "/config.json");
    e.metrics = readMetrics(s.dir);
    readTiming(s.dir, e.metrics);
    e.tag = s.sweep;
    e.runDir = s.dir;
    e.error = s.error;
    e.state = s.status == "completed" ? EntryState::Completed
              : s.status == "failed"  ? EntryState::Failed
              : s.status == "running" ? EntryState::Running
                                      : EntryState::Stopped;
    e.epochsDone = static_cast<int>(e.metrics.size());
    RunResult r;
    r.epochs = e.metrics;
    r.summarize();
    e.bestTestAcc = r.bestTestAcc;
    e.meanEpochSeconds = r.meanEpochSeconds;
    double ips = 0.0;
    for (const auto &m : e.metrics)
        ips += m.imagesPerSecond / static_cast<double>(e.metrics.size());
    e.imagesPerSecond = ips;
    return e;
}

// Ranks from 1, ties sharing their mean rank.
std::vector<double> ranks(const std::vector<double> &values)
{
    std::vector<std::size_t> order(values.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::sort(order.begin(), order.end(), [&values](std::size_t a, std::size_t b) { return values[a] < values[b]; });
    std::vector<double> out(values.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]])
            ++j;
        const double mean = (static_cast<double>(i + j) / 2.0) + 1.0;
        for (std::size_t k = i; k <= j; ++k)
            out[order[k]] = mean;
        i = j + 1;
    }
    return out;
}

std::optional<double> pearson(const std::vector<double> &x, const std::vector<double> &y)
{
    const double n = static_cast<double>(x.size());
    const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
    const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    if (sxx <= 0 || syy <= 0)
        return std::nullopt;
    return sxy / std::sqrt(sxx * syy);
}

std::string signedFixed(double value, int decimals)
{
    return (value >= 0 ? "+" : "") + fixed(value, decimals);
}

} // namespace

std::vector<AxisEffect> axisEffects(const SweepTable &table)
{
    std::vector<const SweepRow *> done;
    for (const SweepRow &r : table.rows) {
        if (r.status == "completed" && r.secondsPerEpoch > 0)
            done.push_back(&r);
    }
    std::vector<AxisEffect> out;
    if (done.size() < 3)
        return out;
    std::vector<double> acc;
    for (const SweepRow *r : done)
        acc.push_back(r->bestTestAcc);
    for (std::size_t a = 0; a < table.axes.size(); ++a) {
        AxisEffect e;
        e.axis = table.axes[a];
        e.runs = static_cast<int>(done.size());
        std::vector<double> numbers;
        std::vector<std::pair<std::string, std::pair<double, int>>> byValue;
        for (const SweepRow *r : done) {
            const std::string &v = r->values[a];
            double x = 0;
            if (parseDouble(v, x))
                numbers.push_back(x);
            auto it = std::find_if(byValue.begin(), byValue.end(), [&v](const auto &p) { return p.first == v; });
            if (it == byValue.end())
                it = byValue.insert(byValue.end(), {v, {0.0, 0}});
            it->second.first += r->bestTestAcc;
            ++it->second.second;
        }
        if (byValue.size() < 2)
            continue;
        if (numbers.size() == done.size()) {
            std::sort(byValue.begin(), byValue.end(), [](const auto &a, const auto &b) {
                double x = 0, y = 0;
                return parseDouble(a.first, x) && parseDouble(b.first, y) && x < y;
            });
            e.rankCorrelation = pearson(ranks(numbers), ranks(acc));
            e.beyondChance = e.rankCorrelation && done.size() >= 4
                             && std::fabs(*e.rankCorrelation) >= 1.96 / std::sqrt(static_cast<double>(done.size() - 1));
        }
        if (byValue.size() <= 6 && byValue.size() < done.size()) {
            for (const auto &[value, sum] : byValue)
                e.meanByValue.emplace_back(value, sum.first / sum.second);
        }
        out.push_back(std::move(e));
    }
    return out;
}

SweepTable sweepTable(const std::vector<QueueEntry> &entries)
{
    SweepTable table;
    std::set<std::string> present;
    for (const auto &e : entries) {
        for (const auto &v : e.tag.values)
            present.insert(v.first);
    }
    for (const auto &axis : sweepAxisNames()) {
        if (present.erase(axis))
            table.axes.push_back(axis);
    }
    // Runs compared by hand: the other configuration keys that differ, in the order first tagged.
    for (const auto &e : entries) {
        for (const auto &v : e.tag.values) {
            if (present.erase(v.first))
                table.axes.push_back(v.first);
        }
    }
    std::string firstDevices;
    std::set<std::string> deviceSets;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const QueueEntry &e = entries[i];
        SweepRow row;
        row.index = e.tag.index >= 0 ? e.tag.index + 1 : static_cast<int>(i) + 1;
        for (const auto &axis : table.axes)
            row.values.push_back(valueOf(e.tag, axis));
        row.status = statusText(e.state);
        row.error = e.error;
        row.devices = static_cast<int>(e.config.devices.size());
        row.bestTestAcc = e.bestTestAcc;
        row.secondsPerEpoch = e.meanEpochSeconds;
        row.imagesPerSecond = e.imagesPerSecond;
        row.runDir = e.runDir;
        if (!e.runDir.empty()) {
            try {
                row.notes = readRunNotes(e.runDir);
            } catch (const std::exception &error) {
                row.notes = "(" + std::string(error.what()) + ")";   // as the history shows it; the run reads fine
            }
        }
        row.toTarget = timeToTarget(e.metrics, kDefaultTargetAccuracy);
        const std::string devices = valueOf(e.tag, "devices");
        if (!devices.empty()) {
            if (firstDevices.empty())
                firstDevices = devices;
            deviceSets.insert(devices);
        }
        table.rows.push_back(std::move(row));
    }
    const auto devicesAxis = std::find(table.axes.begin(), table.axes.end(), "devices");
    table.hasScaling = devicesAxis != table.axes.end() && deviceSets.size() > 1;
    if (!table.hasScaling)
        return table;
    const auto d = static_cast<std::size_t>(devicesAxis - table.axes.begin());
    for (SweepRow &row : table.rows) {
        // The reference: the first device set, every other axis the same.
        for (const SweepRow &ref : table.rows) {
            bool same = ref.values[d] == firstDevices;
            for (std::size_t a = 0; a < table.axes.size() && same; ++a)
                same = a == d || ref.values[a] == row.values[a];
            if (!same)
                continue;
            if (ref.imagesPerSecond > 0 && row.imagesPerSecond > 0 && ref.devices > 0) {
                row.speedup = row.imagesPerSecond / ref.imagesPerSecond;
                row.ideal = static_cast<double>(row.devices) / ref.devices;
                row.efficiency = 100.0 * row.speedup / row.ideal;
            }
            break;
        }
    }
    return table;
}

ParallelPlot parallelCoordinates(const SweepTable &table)
{
    ParallelPlot plot;
    std::vector<const SweepRow *> ran;
    for (const SweepRow &r : table.rows) {
        if (r.secondsPerEpoch > 0)
            ran.push_back(&r);
    }
    std::vector<std::vector<std::string>> columns(table.axes.size() + 1);
    for (const SweepRow *r : ran) {
        for (std::size_t a = 0; a < table.axes.size(); ++a)
            columns[a].push_back(r->values[a]);
        columns.back().push_back(formatShortest(r->bestTestAcc));
    }
    std::vector<std::vector<double>> heights(columns.size());
    for (std::size_t a = 0; a < columns.size(); ++a) {
        ParallelAxis axis;
        axis.name = a < table.axes.size() ? table.axes[a] : "best acc";
        std::vector<double> numbers;
        for (const std::string &v : columns[a]) {
            double x = 0;
            if (parseDouble(v, x))
                numbers.push_back(x);
        }
        axis.numeric = !numbers.empty() && numbers.size() == columns[a].size();
        if (axis.numeric) {
            const auto [low, high] = std::minmax_element(numbers.begin(), numbers.end());
            const bool acc = a == table.axes.size();
            axis.log = !acc && *low > 0 && *high >= 20 * *low;
            const auto place = [&axis](double v) { return axis.log ? std::log(v) : v; };
            const double from = place(*low);
            const double span = place(*high) - from;
            for (double v : numbers)
                heights[a].push_back(span > 0 ? (place(v) - from) / span : 0.5);
            axis.values = {acc ? fixed(*low, 3) : formatShortest(*low), acc ? fixed(*high, 3) : formatShortest(*high)};
        } else {
            for (const std::string &v : columns[a]) {
                if (std::find(axis.values.begin(), axis.values.end(), v) == axis.values.end())
                    axis.values.push_back(v);
            }
            const double last = static_cast<double>(axis.values.size() - 1);
            for (const std::string &v : columns[a]) {
                const auto at = std::find(axis.values.begin(), axis.values.end(), v) - axis.values.begin();
                heights[a].push_back(last > 0 ? static_cast<double>(at) / last : 0.5);
            }
        }
        plot.axes.push_back(std::move(axis));
    }
    std::size_t k = 0;
    for (const SweepRow &r : table.rows) {
        std::vector<double> line;
        if (r.secondsPerEpoch > 0) {
            for (const auto &h : heights)
                line.push_back(h[k]);
            ++k;
        }
        plot.lines.push_back(std::move(line));
    }
    return plot;
}

std::string formatSweepFindings(const SweepTable &table)
{
    std::string out;
    const SweepRow *best = nullptr;
    int completed = 0;
    for (const SweepRow &r : table.rows) {
        if (r.status != "completed" || r.secondsPerEpoch <= 0)
            continue;
        ++completed;
        if (!best || r.bestTestAcc > best->bestTestAcc)
            best = &r;
    }
    if (best && completed >= 2) {
        std::string values;
        for (std::size_t a = 0; a < table.axes.size(); ++a)
            values += (values.empty() ? "" : " ") + table.axes[a] + "=" + best->values[a];
        out += "best: run " + std::to_string(best->index) + (values.empty() ? "" : " (" + values + ")") + ", test acc "
               + fixed(best->bestTestAcc, 3) + "\n";
    }
    const auto effects = axisEffects(table);
    if (effects.empty())
        return out;
    out += "how each setting went with best acc over the " + std::to_string(completed)
           + " completed runs (Spearman's rank correlation, * unlikely by chance at 5 %; mean best acc per value):\n";
    std::size_t width = 0;
    for (const AxisEffect &e : effects)
        width = std::max(width, e.axis.size());
    for (const AxisEffect &e : effects) {
        std::string line = "  " + e.axis + std::string(width - e.axis.size(), ' ');
        line += e.rankCorrelation ? "  " + signedFixed(*e.rankCorrelation, 2) + (e.beyondChance ? " *" : "  ") : "       ";
        std::string means;
        for (const auto &[value, mean] : e.meanByValue)
            means += (means.empty() ? "" : ", ") + value + " " + fixed(mean, 3);
        if (!means.empty())
            line += "  " + means;
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out += line + "\n";
    }
    return out;
}

std::string formatSweepTable(const SweepTable &table)
{
    std::vector<std::string> header = {"#"};
    for (const auto &a : table.axes)
        header.push_back(a);
    for (const char *h : {"status", "best acc", "sec/epoch", "img/s"})
        header.push_back(h);
    header.push_back("to " + fixed(kDefaultTargetAccuracy, 2));
    if (table.hasScaling) {
        for (const char *h : {"speed-up", "ideal", "eff %"})
            header.push_back(h);
    }
    std::vector<std::vector<std::string>> cells;
    for (const SweepRow &r : table.rows) {
        std::vector<std::string> line = {std::to_string(r.index)};
        line.insert(line.end(), r.values.begin(), r.values.end());
        const bool ran = r.status != "not started";
        line.push_back(r.status);
        line.push_back(ran && r.secondsPerEpoch > 0 ? fixed(r.bestTestAcc, 3) : "-");
        line.push_back(ran && r.secondsPerEpoch > 0 ? fixed(r.secondsPerEpoch, 1) : "-");
        line.push_back(ran && r.imagesPerSecond > 0 ? fixed(r.imagesPerSecond, 1) : "-");
        line.push_back(r.toTarget ? fixed(r.toTarget->seconds, 1) + " s (" + std::to_string(r.toTarget->epoch) + ")" : "-");
        if (table.hasScaling) {
            line.push_back(r.speedup > 0 ? fixed(r.speedup, 2) + "x" : "-");
            line.push_back(r.ideal > 0 ? fixed(r.ideal, 2) + "x" : "-");
            line.push_back(r.efficiency > 0 ? fixed(r.efficiency, 0) : "-");
        }
        cells.push_back(std::move(line));
    }
    std::vector<std::size_t> width(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) {
        width[c] = header[c].size();
        for (const auto &line : cells)
            width[c] = std::max(width[c], line[c].size());
    }
    auto render = [&](const std::vector<std::string> &line) {
        std::string text;
        for (std::size_t c = 0; c < line.size(); ++c) {
            const std::string pad(width[c] - line[c].size(), ' ');
            // Numbers right-aligned, names left-aligned.
            const bool numeric = c == 0 || c > table.axes.size() + 1;
            text += (c ? "  " : "") + (numeric ? pad + line[c] : line[c] + pad);
        }
        while (!text.empty() && text.back() == ' ')
            text.pop_back();
        return text + "\n";
    };
    std::string out = render(header);
    for (const auto &line : cells)
        out += render(line);
    for (const SweepRow &r : table.rows) {
        if (!r.error.empty())
            out += "run " + std::to_string(r.index) + " " + r.status + ": " + r.error + "\n";
    }
    const std::string findings = formatSweepFindings(table);
    return findings.empty() ? out : out + "\n" + findings;
}

std::string sweepTableCsv(const SweepTable &table)
{
    std::string out = "index";
    for (const auto &a : table.axes)
        out += "," + a;
    out += ",status,best_test_acc,sec_per_epoch,images_per_second,device_count,speedup,ideal,efficiency_pct,seconds_to_target,epoch_to_target,run_dir,error,notes\n";
    for (const SweepRow &r : table.rows) {
        out += std::to_string(r.index);
        for (const auto &v : r.values)
            out += "," + csvField(v);
        out += "," + r.status + "," + fixed(r.bestTestAcc, 6) + "," + fixed(r.secondsPerEpoch, 3) + ","
               + fixed(r.imagesPerSecond, 1) + "," + std::to_string(r.devices) + "," + fixed(r.speedup, 4) + ","
               + fixed(r.ideal, 4) + "," + fixed(r.efficiency, 2) + ","
               + (r.toTarget ? fixed(r.toTarget->seconds, 3) + "," + std::to_string(r.toTarget->epoch) : std::string(",")) + ","
               + csvField(r.runDir) + "," + csvField(r.error) + "," + csvField(r.notes)
               + "\n";
    }
    return out;
}

std::map<int, TimeSplit> timeByDeviceCount(const std::vector<QueueEntry> &entries)
{
    std::map<int, std::pair<TimeSplit, int>> sums;
    for (const QueueEntry &e : entries) {
        const int devices = static_cast<int>(e.config.devices.size());
        const std::size_t first = e.metrics.size() > 1 ? 1 : 0;
        for (std::size_t i = first; i < e.metrics.size(); ++i) {
            for (const TimeSplit &t : e.metrics[i].time) {
                auto &[sum, count] = sums[devices];
                sum += t;
                ++count;
            }
        }
    }
    std::map<int, TimeSplit> means;
    for (const auto &[devices, sum] : sums)
        (means[devices] = sum.first) /= sum.second;
    return means;
}

std::vector<QueueEntry> loadSweepEntries(const std::string &runsDir, const std::string &sweepId)
{
    std::error_code ec;
    const std::string state = sweepDir(runsDir, sweepId) + "/queue.json";
    if (fs::exists(state, ec)) {
        try {
            std::vector<QueueEntry> entries;
            const Queue queue = Queue::load(state);
            for (const QueueEntry &e : queue.entries()) {
                if (e.tag.id != sweepId)
                    continue;
                entries.push_back(e);
                // queue.json keeps no per-epoch metrics; the run folder's metrics.csv has them.
                QueueEntry &added = entries.back();
                if (added.metrics.empty() && !added.runDir.empty()) {
                    try {
                        added.metrics = readMetrics(added.runDir);
                        readTiming(added.runDir, added.metrics);
                    } catch (const std::exception &) {
                        // An unreadable metrics.csv: the run is still listed, without its curve.
                    }
                }
            }
            return entries;
        } catch (const std::exception &) {
            // A damaged state file: the run folders below still tell what ran.
        }
    }
    std::map<int, QueueEntry> byIndex;
    for (const RunSummary &s : listRuns(runsDir)) {
        if (s.sweep.id != sweepId || byIndex.count(s.sweep.index))
            continue;   // newest first: a rerun of an index hides the older folder
        try {
            byIndex.emplace(s.sweep.index, entryOfRun(s));
        } catch (const std::exception &) {
            continue;
        }
    }
    std::vector<QueueEntry> entries;
    for (auto &[index, e] : byIndex)
        entries.push_back(std::move(e));
    return entries;
}

std::vector<QueueEntry> loadRunEntries(const std::vector<std::string> &runDirs)
{
    std::vector<QueueEntry> entries;
    for (const std::string &dir : runDirs) {
        entries.push_back(entryOfRun(readRunSummary(dir)));
        entries.back().tag = SweepTag();   // a sweep's own tag names its axes, not what differs here
    }
    // The axes: the settings a sweep could vary that differ between these runs.
    for (const std::string &axis : sweepAxisNames()) {
        std::vector<std::string> values;
        for (const QueueEntry &e : entries)
            values.push_back(axisValue(e.config, axis));
        if (std::set<std::string>(values.begin(), values.end()).size() < 2)
            continue;
        for (std::size_t i = 0; i < entries.size(); ++i)
            entries[i].tag.values.emplace_back(axis, values[i]);
    }
    // Then every other configuration key in which they differ, by its dotted path, as config.json has it.
    const std::vector<std::string> others = otherDifferences(entries);
    std::vector<std::string> json;
    for (const QueueEntry &e : entries)
        json.push_back(others.empty() ? std::string() : e.config.toJson());
    for (const std::string &key : others) {
        for (std::size_t i = 0; i < entries.size(); ++i)
            entries[i].tag.values.emplace_back(key, configValueText(json[i], key));
    }
    for (std::size_t i = 0; i < entries.size(); ++i) {
        entries[i].tag.id = kSelectedRuns;
        entries[i].tag.index = static_cast<int>(i);
        entries[i].tag.count = static_cast<int>(entries.size());
    }
    return entries;
}

std::vector<std::string> otherDifferences(const std::vector<QueueEntry> &entries)
{
    // Each axis's key in config.json; the run's name differs by design.
    static const std::vector<std::string> covered = {"name", "learning_rate", "batch_size", "devices", "epochs", "seed",
                                                     "precision", "momentum", "weight_decay", "label_smoothing",
                                                     "grad_clip_norm", "ema_decay", "schedule.kind", "schedule.warmup_epochs",
                                                     "augmentation", "model.init", "optimizer"};
    std::vector<std::string> out;
    for (std::size_t i = 1; i < entries.size(); ++i) {
        for (const std::string &key : configDifferences(entries.front().config.toJson(), entries[i].config.toJson())) {
            const bool axis = std::any_of(covered.begin(), covered.end(), [&key](const std::string &c) {
                return key == c || key.rfind(c + ".", 0) == 0;
            });
            if (!axis && std::find(out.begin(), out.end(), key) == out.end())
                out.push_back(key);
        }
    }
    return out;
}

std::vector<std::string> listSweepIds(const std::string &runsDir)
{
    std::vector<std::string> ids;
    for (const RunSummary &s : listRuns(runsDir)) {
        if (!s.sweep.id.empty() && std::find(ids.begin(), ids.end(), s.sweep.id) == ids.end())
            ids.push_back(s.sweep.id);
    }
    return ids;
}

} // namespace trainlab
