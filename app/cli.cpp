#include "cliargs.h"
#include "downloadconsole.h"

#include "core/config.h"
#include "core/data/datasetstore.h"
#include "core/data/download.h"
#include "core/eval/classify.h"
#include "core/eval/evaluation.h"
#include "core/eval/export.h"
#include "core/monitor/devicemonitor.h"
#include "core/monitor/devicesampler.h"
#include "core/runs/report.h"
#include "core/runs/runexport.h"
#include "core/runs/runrecord.h"
#include "core/runs/runstorage.h"
#include "core/sweeps/queue.h"
#include "core/sweeps/sweepreport.h"
#include "core/train/devices.h"
#include "core/train/hugepageallocator.h"
#include "core/train/launcher.h"
#include "core/train/lrfinder.h"
#include "core/train/trainer.h"
#include "core/util/atomicfile.h"
#include "core/util/numtext.h"
#include "core/util/paths.h"
#include "core/util/wordfilter.h"
#include "trainlab/version.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

trainlab::StopFlag g_stop{false};

void onSignal(int)
{
    g_stop.store(true);
}

// Prints the run the way d2l does, plus a progress line when stdout is a terminal.
class ConsoleObserver : public trainlab::TrainingObserver
{
public:
    void onRunStarted(const trainlab::RunInfo &info) override
    {
        m_devices = trainlab::deviceList(info.devices);
        m_epochs = info.epochs;
        m_started = true;
        std::printf("%s\n", trainlab::runStartedLine(info).c_str());
        std::fflush(stdout);
    }

    bool onBatch(const trainlab::BatchProgress &p) override
    {
        if (m_tty) {
            std::printf("\repoch %d/%d  batch %lld/%lld  loss %.3f  %.0f img/s ", p.epoch, p.epochs,
                        static_cast<long long>(p.batch), static_cast<long long>(p.batches), p.loss, p.imagesPerSecond);
            std::fflush(stdout);
        }
        return true;
    }

    void onEpoch(const trainlab::EpochMetrics &m) override
    {
        std::printf("%s%s\n", m_tty ? "\r\033[K" : "", trainlab::epochLine(m, m_epochs).c_str());
        if (const std::string shares = trainlab::timeSharesLine(m); !shares.empty())
            std::printf("  %s\n", shares.c_str());
        // The record's figures over the epoch (devices.csv); without a record, each device as it reads now.
        if (m_monitor && !m.devices.empty()) {
            for (const trainlab::DeviceEpochStats &d : m.devices)
                std::printf("  monitor %s\n", trainlab::formatEpochStats(d).c_str());
        } else if (m_monitor) {
            for (const trainlab::DeviceReading &r : m_monitor->read())
                std::printf("  monitor %s\n", trainlab::formatReading(r).c_str());
        }
        std::fflush(stdout);
    }

    void enableMonitor()
    {
        m_monitor = std::make_unique<trainlab::DeviceMonitor>();
        m_monitor->setCudaBusIds(trainlab::cudaBusIds());
        if (!m_monitor->hasGpus())
            std::printf("monitor: the CPU only (no NVIDIA management library on this machine)\n");
    }

    void onLog(const std::string &line) override
    {
        std::printf("%s%s\n", m_tty ? "\r\033[K" : "", line.c_str());
        std::fflush(stdout);
    }

    void onFinished(const trainlab::RunResult &r) override
    {
        if (m_tty)
            std::printf("\r\033[K");
        for (const auto &line : trainlab::finishedLines(r, m_devices)) {
            // Failures go to stderr, prefixed with the program name, as every other CLI error.
            if (line.rfind("run failed: ", 0) == 0)
                std::fprintf(stderr, "trainlab-cli: %s\n", line.c_str());
            else
                std::printf("%s\n", line.c_str());
        }
        std::fflush(stdout);
    }

    int m_epochs = 0;
    bool m_started = false;
    std::unique_ptr<trainlab::DeviceMonitor> m_monitor;
    bool m_tty = ::isatty(STDOUT_FILENO) != 0;
    std::string m_devices;
};

int datasetCommand(const trainlab::CliArgs &args)
{
    if (args.subcommand == "where") {
        const std::string dir = trainlab::managedDatasetDir();
        std::printf("%s\n", dir.c_str());
        const std::string hint = trainlab::datasetMissingHint("fashion-mnist");
        std::printf("%s\n", hint.empty() ? "the four files are there (trainlab-cli dataset verify checks them)"
                                         : "not downloaded yet: run trainlab-cli dataset download");
        return 0;
    }
    if (args.subcommand == "verify") {
        const trainlab::DatasetVerification v = trainlab::verifyDataset(args.datasetDir);
        if (!v.valid) {
            std::fprintf(stderr, "trainlab-cli: %s: not a usable dataset:\n", args.datasetDir.c_str());
            for (const auto &p : v.problems)
                std::fprintf(stderr, "  %s\n", p.c_str());
            return 1;
        }
        std::printf("%s\n", v.message.c_str());
        return 0;
    }
    const std::string dir = args.datasetDir.empty() ? trainlab::managedDatasetDir() : args.datasetDir;
    trainlab::DownloadOptions options;
    options.mirrors = args.mirrors;
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    std::signal(SIGHUP, onSignal);
    trainlab::DownloadConsole console;
    std::printf("downloading Fashion-MNIST into %s\n", dir.c_str());
    std::fflush(stdout);
    const trainlab::DownloadResult r = trainlab::downloadDataset(dir, trainlab::fashionMnistManifest(), console, g_stop, options);
    console.endLine();
    if (!r.ok) {
        std::fprintf(stderr, "trainlab-cli: %s\n", r.error.c_str());
        return 1;
    }
    const trainlab::DatasetVerification v = trainlab::verifyDataset(dir);
    std::printf("%s\n", v.message.c_str());
    return v.valid ? 0 : 1;
}

int runsCommand(const trainlab::CliArgs &args)
{
    const std::string dir = args.runsDir.empty() ? trainlab::defaultRunsDir() : args.runsDir;
    const auto runs = trainlab::listRuns(dir);
    if (!args.csv.empty()) {
        std::vector<trainlab::RunSummary> readable;
        for (const auto &r : runs) {
            if (r.status == "unreadable")
                std::fprintf(stderr, "trainlab-cli: left out: %s\n", r.error.c_str());
            else
                readable.push_back(r);
        }
        const std::string table = args.csv == "metrics" ? trainlab::runsMetricsCsv(readable) : trainlab::runsDevicesCsv(readable);
        std::fwrite(table.data(), 1, table.size(), stdout);
        return 0;
    }
    if (runs.empty()) {
        std::printf(args.json ? "[]\n" : "no runs in %s\n", dir.c_str());
        return 0;
    }
    // One row per run: its figures typed (empty where the run has none; --sort puts those last), formatted last.
    struct Row
    {
        const trainlab::RunSummary *run = nullptr;
        std::string statusNote;   // why it is where it is, and how to go on
        std::optional<double> best, lr;
        std::optional<long long> batch;
        std::optional<trainlab::TargetReached> reached;   // the first epoch at kDefaultTargetAccuracy
        std::optional<std::string> recipe;

        std::string name() const { return std::filesystem::path(run->dir).filename().string(); }
        // The table's cells; the NOTE cell adds the first line of the person's notes to the status note.
        std::vector<std::string> cells() const
        {
            const auto fixed = [](const std::optional<double> &v) {
                char text[32] = "-";
                if (v)
                    std::snprintf(text, sizeof text, "%.4f", *v);
                return std::string(text);
            };
            std::string note = statusNote;
            if (!run->notes.empty())
                note += (note.empty() ? "" : " · ") + trainlab::notesHeadline(run->notes, 60);
            return {name(),
                    run->status,
                    std::to_string(run->epochsDone) + "/" + std::to_string(run->epochsPlanned),
                    fixed(best),
                    trainlab::formatTimeToTarget(reached),
                    lr ? trainlab::formatGeneral(*lr, 4) : "-",
                    batch ? std::to_string(*batch) : "-",
                    recipe.value_or("-"),
                    note};
        }
    };
    std::vector<Row> rows;
    for (const auto &r : runs) {
        Row row;
        row.run = &r;
        if (r.status == "unreadable")
            row.statusNote = r.error;
        else if (r.status == "interrupted")
            row.statusNote = "last ran as pid " + std::to_string(r.pid) + " on " + r.host + "; trainlab-cli resume to go on";
        else if (r.canResume())
            row.statusNote = "trainlab-cli resume to go on";
        if (r.epochsDone > 0)
            row.best = r.bestTestAcc;
        if (r.epochsDone > 0 && r.status != "unreadable") {
            try {
                row.reached = trainlab::timeToTarget(trainlab::readMetrics(r.dir), trainlab::kDefaultTargetAccuracy);
            } catch (const std::exception &) {
                // metrics.csv unreadable: the run's own line says enough
            }
        }
        // What was trained, from the run's own config.json.
        if (r.status != "unreadable") {
            try {
                const auto config = trainlab::ExperimentConfig::load(r.dir + "/config.json");
                row.lr = config.learningRate;
                row.batch = config.batchSize;
                row.recipe = trainlab::recipeText(config);
            } catch (const std::exception &) {
                // History and resume name the problem; the table stays readable
            }
        }
        rows.push_back(std::move(row));
    }
    // --filter: every word somewhere in the row, in any case (as the window's History filter).
    const trainlab::WordFilter filter(args.filter);
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const Row &row) {
                                  std::string text;
                                  for (const std::string &cell : row.cells())
                                      text += cell + '\n';
                                  return !filter.matches(text + row.run->notes);
                              }),
               rows.end());
    if (rows.empty() && !args.json) {
        std::printf("no run of the %zu in %s holds every word of \"%s\"\n", runs.size(), dir.c_str(), args.filter.c_str());
        return 0;
    }
    // --sort: the listing is the newest first already ("date"); a stable sort keeps that order among equals.
    using Value = std::optional<double>;
    static const std::map<std::string, std::pair<Value (*)(const Row &), bool>> numeric = {
        {"best", {[](const Row &r) { return r.best; }, true}},
        {"epochs", {[](const Row &r) { return Value(r.run->epochsDone); }, true}},
        {"to", {[](const Row &r) { return r.reached ? Value(r.reached->seconds) : Value(); }, false}},
        {"lr", {[](const Row &r) { return r.lr; }, false}},
        {"batch", {[](const Row &r) { return r.batch ? Value(static_cast<double>(*r.batch)) : Value(); }, false}},
    };
    if (const auto key = numeric.find(args.sort); key != numeric.end()) {
        const auto value = key->second.first;
        const bool highestFirst = key->second.second;
        std::stable_sort(rows.begin(), rows.end(), [value, highestFirst](const Row &a, const Row &b) {
            const Value va = value(a), vb = value(b);
            if (!va || !vb)
                return va.has_value() && !vb.has_value();
            return highestFirst ? *va > *vb : *va < *vb;
        });
    } else if (args.sort == "name" || args.sort == "status") {
        const bool byName = args.sort == "name";
        std::stable_sort(rows.begin(), rows.end(), [byName](const Row &a, const Row &b) {
            return byName ? a.name() < b.name() : a.run->status < b.run->status;
        });
    }
    // Padded columns; a row without a note ends at its recipe, not in blanks.
    const auto printRow = [](const std::vector<std::string> &cells) {
        static const std::size_t widths[] = {44, 12, 9, 8, 18, 8, 6, 24};
        std::string line;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            line += cells[i];
            if (i < std::size(widths))
                line += std::string(cells[i].size() < widths[i] ? widths[i] + 1 - cells[i].size() : 1, ' ');
        }
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        std::printf("%s\n", line.c_str());
    };
    if (args.json) {
        // For scripts: the same rows, in the same order, each run's figures as numbers (null where it has none).
        nlohmann::json list = nlohmann::json::array();
        const auto orNull = [](const auto &v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
        for (const Row &row : rows) {
            const trainlab::RunSummary &r = *row.run;
            list.push_back({{"dir", r.dir}, {"name", r.name}, {"status", r.status}, {"error", r.error},
                            {"epochs_done", r.epochsDone}, {"epochs_planned", r.epochsPlanned}, {"best_test_acc", orNull(row.best)},
                            {"best_epoch", r.bestEpoch}, {"final_test_acc", r.epochsDone > 0 ? nlohmann::json(r.finalTestAcc) : nlohmann::json()},
                            {"seconds_to_target", row.reached ? nlohmann::json(row.reached->seconds) : nlohmann::json()},
                            {"learning_rate", orNull(row.lr)}, {"batch_size", orNull(row.batch)}, {"recipe", orNull(row.recipe)},
                            {"start_time", r.startTime}, {"sweep", r.sweep.id}, {"notes", r.notes}});
        }
        // Bytes that are not UTF-8 (a hostile name) come out as U+FFFD rather than end the listing.
        std::printf("%s\n", list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    printRow({"RUN", "STATUS", "EPOCHS", "BEST", "TO 0.90", "LR", "BATCH", "RECIPE", "NOTE"});
    for (const Row &row : rows)
        printRow(row.cells());
    return 0;
}

// compare RUN_DIR...: which row is which run, then the table a sweep ends with.
int compareCommand(const trainlab::CliArgs &args)
{
    try {
        const std::vector<trainlab::QueueEntry> entries = trainlab::loadRunEntries(args.runDirs);
        const trainlab::SweepTable table = trainlab::sweepTable(entries);
        for (const trainlab::SweepRow &row : table.rows) {
            const std::string notes = trainlab::notesHeadline(row.notes, 60);
            std::printf("%d  %s%s%s\n", row.index, row.runDir.c_str(), notes.empty() ? "" : "  ", notes.c_str());
        }
        if (table.axes.empty())
            std::printf("(their configurations are the same but for the name)\n");
        std::printf("\n%s", trainlab::formatSweepTable(table).c_str());
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "trainlab-cli: compare: %s\n", e.what());
        return 1;
    }
}

// delete RUN_DIR...: each to the trash (or gone with --permanently), a line each; exit 1 when any is kept.
int deleteCommand(const trainlab::CliArgs &args)
{
    int status = 0;
    for (const std::string &dir : args.runDirs) {
        try {
            // A linked run folder is trashed or removed as the link; anything else must be a run folder.
            std::error_code ec;
            if (!std::filesystem::is_symlink(dir, ec))
                trainlab::requireRunFolder(dir);
            else if (!std::filesystem::exists(dir + "/summary.json", ec))
                throw std::runtime_error(dir + ": not a run folder (no summary.json)");
            if (args.permanently) {
                trainlab::deleteRun(dir);
                std::printf("%s: deleted\n", dir.c_str());
            } else {
                std::printf("%s: moved to the trash: %s\n", dir.c_str(), trainlab::trashRun(dir).c_str());
            }
        } catch (const std::exception &e) {
            std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
            status = 1;
        }
    }
    return status;
}

// notes RUN_DIR: prints them; notes RUN_DIR TEXT|-: replaces them.
int notesCommand(const trainlab::CliArgs &args)
{
    const std::string &dir = args.configPath;
    try {
        if (!args.notes) {
            trainlab::requireRunFolder(dir);
            if (const std::string notes = trainlab::readRunNotes(dir); !notes.empty())
                std::printf("%s\n", notes.c_str());
            return 0;
        }
        std::string text = *args.notes;
        if (text == "-") {
            // One byte over the bound is enough to refuse it by name, whatever the pipe holds.
            text.resize(trainlab::kMaxRunNotesBytes + 1);
            std::cin.read(text.data(), static_cast<std::streamsize>(text.size()));
            text.resize(static_cast<std::size_t>(std::cin.gcount()));
        }
        trainlab::checkRunNotes(text);
        trainlab::writeRunNotes(dir, text);
        const std::string kept = trainlab::readRunNotes(dir);
        if (kept.empty())
            std::printf("%s: no notes\n", dir.c_str());
        else
            std::printf("%s: notes saved (%zu bytes)\n", dir.c_str(), kept.size());
        return 0;
    } catch (const std::invalid_argument &e) {
        std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
        return 1;
    }
}

// Where the run keeps its record and how this process meets the others: the flags, else torchrun's or Slurm's
// variables (throws invalid_argument naming a bad or contradicting one); Ctrl-C and SIGTERM stop it.
trainlab::RunOptions runOptions(const trainlab::CliArgs &args)
{
    trainlab::RunOptions options;
    options.runsDir = args.runsDir;
    options.notes = args.runNotes;
    const trainlab::Launch launch = trainlab::resolveLaunch({args.nnodes, args.nodeRank, args.masterPort, args.masterAddr},
                                                            [](const char *name) { return std::getenv(name); });
    options.node = launch.node;
    if (launch.launcher != "none") {
        std::string origins;
        for (const auto &o : launch.origins)
            origins += (origins.empty() ? "" : ", ") + o;
        options.node.launcher = launch.launcher + ": " + origins;
    }
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    std::signal(SIGHUP, onSignal);
    return options;
}

int printProblems(const std::string &origin, const std::vector<std::string> &problems)
{
    std::fprintf(stderr, "%s: invalid configuration:\n", origin.c_str());
    for (const auto &p : problems)
        std::fprintf(stderr, "  %s\n", p.c_str());
    return 2;
}

// One line per finished run; the runs' own epoch lines only on a terminal's progress line.
class SweepConsole : public trainlab::QueueObserver
{
public:
    explicit SweepConsole(const trainlab::Queue &queue) : m_queue(queue) {}

    bool onBatch(const trainlab::BatchProgress &p) override
    {
        if (m_tty) {
            std::printf("\r\033[Krun %zu/%zu  epoch %d/%d  batch %lld/%lld  loss %.3f  %.0f img/s", m_current + 1,
                        m_queue.size(), p.epoch, p.epochs, static_cast<long long>(p.batch),
                        static_cast<long long>(p.batches), p.loss, p.imagesPerSecond);
            std::fflush(stdout);
        }
        return true;
    }
    void onEntryStarted(std::size_t i, const trainlab::QueueEntry &) override { m_current = i; }
    void onEntryFinished(std::size_t i, const trainlab::QueueEntry &e) override
    {
        if (m_tty)
            std::printf("\r\033[K");
        std::printf("run %zu/%zu %s: %s  best acc %.3f  %.1f s/epoch  %.1f img/s  %s\n", i + 1, m_queue.size(),
                    trainlab::toString(e.state), e.tag.label().c_str(), e.bestTestAcc, e.meanEpochSeconds,
                    e.imagesPerSecond, e.runDir.c_str());
        if (e.state == trainlab::EntryState::Pruned)
            std::printf("    pruned: %s\n", e.error.c_str());
        else if (!e.error.empty())
            std::fprintf(stderr, "trainlab-cli: run %zu failed: %s\n", i + 1, e.error.c_str());
        if (e.state != trainlab::EntryState::Stopped) {
            if (const auto left = m_queue.estimate())
                std::printf("    %s\n", left->text().c_str());
        }
        std::fflush(stdout);
    }

private:
    const trainlab::Queue &m_queue;
    std::size_t m_current = 0;
    bool m_tty = ::isatty(STDOUT_FILENO) != 0;
};

void printPlan(const trainlab::Queue &queue, const std::string &name, const std::string &mode, const std::string &dir)
{
    std::printf("sweep %s (%s): %zu runs, %s\n", name.c_str(), queue.sweepId().c_str(), queue.size(), mode.c_str());
    if (!dir.empty())
        std::printf("sweep folder: %s\n", dir.c_str());
    for (std::size_t i = 0; i < queue.size(); ++i) {
        const auto &e = queue.at(i);
        std::printf("  %3zu  %-10s %s  (lr %g, batch %lld, %s)\n", i + 1, e.state == trainlab::EntryState::Waiting ? "planned" : trainlab::toString(e.state),
                    e.tag.label().c_str(), e.config.learningRate, static_cast<long long>(e.config.batchSize),
                    trainlab::deviceList(e.config.devices).c_str());
    }
    std::fflush(stdout);
}

int sweepCommand(const trainlab::CliArgs &args)
{
    namespace fs = std::filesystem;
    trainlab::RunOptions options;
    try {
        options = runOptions(args);
    } catch (const std::invalid_argument &e) {
        std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
        return 2;
    }
    trainlab::Queue queue;
    std::unique_ptr<trainlab::FolderLock> sweepLock;
    std::string name, mode;
    if (!args.resumeSweep.empty()) {
        const std::string state = args.resumeSweep + "/queue.json";
        try {
            sweepLock = std::make_unique<trainlab::FolderLock>(args.resumeSweep);
            queue = trainlab::Queue::load(state);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
            return 2;
        }
        // <runs>/sweeps/<id>: the run folders sit two levels up.
        if (options.runsDir.empty())
            options.runsDir = fs::path(args.resumeSweep).lexically_normal().parent_path().parent_path().string();
        name = queue.sweepId();
        mode = "resumed";
        // The notes the sweep was started with go to the runs it has yet to start.
        try {
            options.notes = trainlab::readRunNotes(args.resumeSweep);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "trainlab-cli: the sweep's notes are not used: %s\n", e.what());
        }
    } else {
        trainlab::SweepConfig sweep;
        const std::string origin = args.preset.empty() ? args.configPath : "sweep preset " + args.preset;
        try {
            sweep = args.preset.empty() ? trainlab::SweepConfig::load(args.configPath)
                                        : trainlab::loadSweepPreset(args.preset);
            sweep.base = trainlab::withSettings(sweep.base, args.settings);
        } catch (const trainlab::ConfigError &e) {
            if (!e.problems().empty())
                return printProblems(origin, e.problems());
            std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
            return 2;
        }
        if ((args.sweepRuns || args.randomSeed) && sweep.mode != "random") {
            std::fprintf(stderr, "trainlab-cli: %s: --runs and --random-seed draw the runs of a random sweep; this one is "
                                 "mode \"%s\"\n", origin.c_str(), sweep.mode.c_str());
            return 2;
        }
        if (args.sweepRuns)
            sweep.runs = *args.sweepRuns;
        if (args.randomSeed)
            sweep.randomSeed = static_cast<std::uint64_t>(*args.randomSeed);
        if (args.epochs)
            sweep.base.epochs = *args.epochs;
        if (args.trainLimit)
            sweep.base.dataset.trainLimit = *args.trainLimit;
        if (args.testLimit)
            sweep.base.dataset.testLimit = *args.testLimit;
        sweep.stopOnFailure = sweep.stopOnFailure || args.stopOnFailure;
        const auto problems = sweep.validate();
        name = sweep.name;
        mode = sweep.mode == "random" ? "random (" + std::to_string(sweep.runs) + " runs, seed "
                                            + std::to_string(sweep.randomSeed) + ")"
                                      : sweep.mode;
        for (const auto &axis : sweep.activeAxes())
            mode += " " + axis + " (" + sweep.axisSummary(axis) + ")";
        if (sweep.scaleLrWithBatch)
            mode += ", learning rate scaled with the batch size";
        if (sweep.pruning.on())
            mode += ", pruned " + sweep.pruning.describe();
        if (problems.empty() || args.dryRun) {
            if (sweep.runCount() >= 0 && sweep.runCount() <= trainlab::SweepConfig::kMaxRuns)
                queue.addSweep(sweep, "dry-run");
        }
        if (args.dryRun) {
            printPlan(queue, name, mode, "");
            return problems.empty() ? 0 : printProblems(origin, problems);
        }
        if (!problems.empty())
            return printProblems(origin, problems);
        if (queue.size() > static_cast<std::size_t>(trainlab::SweepConfig::kAskAbove) && !args.yes) {
            std::fprintf(stderr, "trainlab-cli: %s: %zu runs, more than %d; check the plan with --dry-run, then pass --yes\n",
                         origin.c_str(), queue.size(), trainlab::SweepConfig::kAskAbove);
            return 2;
        }
        const std::string runsDir = options.runsDir.empty() ? trainlab::defaultRunsDir() : options.runsDir;
        const std::string id = trainlab::newSweepId(runsDir, sweep.name);
        const std::string dir = trainlab::sweepDir(runsDir, id);
        queue = trainlab::Queue(dir + "/queue.json");
        try {
            fs::create_directories(dir);
            sweepLock = std::make_unique<trainlab::FolderLock>(dir);
            sweep.save(dir + "/sweep.json");
            if (!options.notes.empty())
                trainlab::writeFileAtomic(dir + "/notes.txt", options.notes + "\n");   // for sweep --resume
            queue.addSweep(sweep, id);
            queue.save();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "trainlab-cli: %s: cannot create the sweep folder: %s\n", dir.c_str(), e.what());
            return 1;
        }
        options.runsDir = runsDir;
        printPlan(queue, name, mode, dir);
    }
    SweepConsole console(queue);
    trainlab::runQueue(queue, console, g_stop, options);
    const trainlab::SweepTable table = trainlab::sweepTable(queue.entries());
    const std::string text = trainlab::formatSweepTable(table);
    std::printf("\n%s", text.c_str());
    const std::string dir = fs::path(queue.stateFile()).parent_path().string();
    try {
        trainlab::writeFileAtomic(dir + "/results.txt", text);
        trainlab::writeFileAtomic(dir + "/results.csv", trainlab::sweepTableCsv(table));
        std::printf("results: %s/results.csv\n", dir.c_str());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "trainlab-cli: cannot write the results: %s\n", e.what());
    }
    bool allDone = true;
    for (const auto &e : queue.entries())
        allDone = allDone && (e.state == trainlab::EntryState::Completed || e.state == trainlab::EntryState::Pruned);
    if (!allDone && g_stop.load())
        std::printf("stopped; go on with: trainlab-cli sweep --resume %s\n", dir.c_str());
    std::fflush(stdout);
    return allDone ? 0 : 1;
}

// Evaluates the run and keeps its evaluation.json; nullopt (the reason on stderr) when it cannot be evaluated.
std::optional<trainlab::Evaluation> evaluateAndKeep(const std::string &runDir, const std::string &checkpoint)
{
    trainlab::Evaluation evaluation;
    try {
        evaluation = trainlab::evaluateRun(runDir, checkpoint);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "trainlab-cli: evaluate: %s\n", e.what());
        return std::nullopt;
    }
    const std::string kept = (std::filesystem::path(runDir) / trainlab::kEvaluationFile).string();
    try {
        trainlab::writeFileAtomic(kept, trainlab::evaluationJson(evaluation));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "trainlab-cli: evaluate: not kept: %s\n", e.what());
    }
    return evaluation;
}

int evaluateCommand(const trainlab::CliArgs &args)
{
    const std::optional<trainlab::Evaluation> evaluation = evaluateAndKeep(args.configPath, args.checkpoint);
    if (!evaluation)
        return 1;
    if (args.against.empty()) {
        std::printf("%s", args.json ? trainlab::evaluationJson(*evaluation).c_str() : trainlab::formatEvaluation(*evaluation).c_str());
        std::fflush(stdout);
        return 0;
    }
    const std::optional<trainlab::Evaluation> other = evaluateAndKeep(args.against, args.checkpoint);
    if (!other)
        return 1;
    try {
        const trainlab::EvaluationDiff diff = trainlab::diffEvaluations(*evaluation, *other);
        const auto named = [](const std::string &dir, const trainlab::Evaluation &e) {
            return dir + " (" + e.checkpoint + ", epoch " + std::to_string(e.epoch) + ")";
        };
        std::printf("%s", trainlab::formatEvaluationDiff(diff, named(args.configPath, *evaluation), named(args.against, *other)).c_str());
    } catch (const std::invalid_argument &e) {
        std::fprintf(stderr, "trainlab-cli: evaluate: %s and %s cannot be held against each other: %s\n",
                     args.configPath.c_str(), args.against.c_str(), e.what());
        return 1;
    }
    std::fflush(stdout);
    return 0;
}

int classifyCommand(const trainlab::CliArgs &args)
{
    trainlab::ClassifyResult result;
    const trainlab::InvertMode invert = args.invert == "yes" ? trainlab::InvertMode::Yes
                                        : args.invert == "no" ? trainlab::InvertMode::No : trainlab::InvertMode::Auto;
    try {
        result = trainlab::classifyImages(args.configPath, args.checkpoint, args.images, invert);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "trainlab-cli: classify: %s\n", e.what());
        return 1;
    }
    std::printf("%s", args.json ? trainlab::classificationJson(result).c_str() : trainlab::formatClassification(result).c_str());
    std::fflush(stdout);
    bool allRead = true;
    for (const auto &image : result.images) {
        if (!image.error.empty()) {
            std::fprintf(stderr, "trainlab-cli: classify: %s\n", image.error.c_str());
            allRead = false;
        }
    }
    return allRead ? 0 : 1;
}

int exportCommand(const trainlab::CliArgs &args)
{
    try {
        const bool onnx = args.exportFormat == "onnx";
        const trainlab::ExportResult r = onnx ? trainlab::exportOnnx(args.configPath, args.checkpoint, args.outputPath)
                                              : trainlab::exportPyTorch(args.configPath, args.checkpoint, args.outputPath);
        if (onnx) {
            std::printf("%s: ONNX model, opset 13 (%.1f MB) from %s, epoch %d: input \"image\" float32 [batch, channels, "
                        "height, width] (pixels / 255; 1 x 28 x 28 for Fashion-MNIST), output \"logits\" [batch, classes]\n",
                        args.outputPath.c_str(), static_cast<double>(r.bytes) / 1e6, r.checkpoint.c_str(), r.epoch);
            std::printf("in Python: onnxruntime.InferenceSession(\"%s\").run(None, {\"image\": x})\n", args.outputPath.c_str());
        } else {
            std::printf("%s: %zu tensors (%.1f MB) from %s, epoch %d, as a PyTorch state_dict for d2l's resnet18(10, 1)\n",
                        args.outputPath.c_str(), r.tensors, static_cast<double>(r.bytes) / 1e6, r.checkpoint.c_str(), r.epoch);
            std::printf("in Python: net.load_state_dict(torch.load(\"%s\", weights_only=True))\n", args.outputPath.c_str());
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "trainlab-cli: export: %s\n", e.what());
        return 1;
    }
    return 0;
}

int lrFindCommand(const trainlab::CliArgs &args, const trainlab::ExperimentConfig &config, const std::string &origin)
{
    trainlab::LrFinderOptions options;
    options.minLr = args.minLr.value_or(options.minLr);
    options.maxLr = args.maxLr.value_or(options.maxLr);
    options.steps = args.steps.value_or(options.steps);
    if (const auto problems = trainlab::validateLrFinder(options); !problems.empty())
        return printProblems("lr-find", problems);
    std::string shares;
    if (const auto devices = static_cast<std::int64_t>(config.devices.size()); devices > 1) {
        const std::int64_t most = trainlab::batchShare(config.batchSize, devices, 0).count;
        const std::int64_t least = trainlab::batchShare(config.batchSize, devices, devices - 1).count;
        shares = " as " + std::to_string(devices) + " devices take it (" + std::to_string(least)
                 + (most != least ? "-" + std::to_string(most) : std::string()) + " each, one after another)";
    }
    std::printf("learning-rate range test on %s: batch %lld%s, %d steps from %s to %s (%s)\n", config.devices.front().c_str(),
                static_cast<long long>(config.batchSize), shares.c_str(), options.steps, trainlab::formatGeneral(options.minLr).c_str(),
                trainlab::formatGeneral(options.maxLr).c_str(), origin.c_str());
    std::fflush(stdout);
    const int every = std::max(1, options.steps / 20);
    const auto result = trainlab::findLearningRate(config, options, g_stop, [every](const trainlab::LrFinderPoint &p) {
        if (p.step % every == 0) {
            std::printf("step %4d  lr %-10s  loss %.4f  smoothed %.4f\n", p.step, trainlab::formatGeneral(p.learningRate, 3).c_str(),
                        p.loss, p.smoothed);
            std::fflush(stdout);
        }
    });
    if (!result.error.empty()) {
        std::fprintf(stderr, "trainlab-cli: lr-find: %s\n", result.error.c_str());
        return 1;
    }
    if (!args.outputPath.empty()) {
        try {
            trainlab::writeFileAtomic(args.outputPath, trainlab::lrFinderCsv(result));
        } catch (const std::exception &e) {
            std::fprintf(stderr, "trainlab-cli: lr-find: %s\n", e.what());
            return 1;
        }
        std::printf("curve: %s (%zu steps)\n", args.outputPath.c_str(), result.points.size());
    }
    std::printf("%s\n", trainlab::lrFinderSummary(result).c_str());
    return result.stopped ? 1 : 0;
}

} // namespace

int run(int argc, char **argv)
{
    const trainlab::CliArgs args = trainlab::parseCliArgs(std::vector<std::string>(argv + 1, argv + argc));
    if (!args.error.empty()) {
        std::fprintf(stderr, "trainlab-cli: %s\n\n%s", args.error.c_str(), trainlab::cliUsage());
        return 2;
    }
    if (args.command == "help") {
        std::printf("%s", trainlab::cliUsage());
        return 0;
    }
    if (args.command == "version") {
        std::printf("trainlab-cli %s (%s)\n", TRAINLAB_VERSION, trainlab::buildDescription().c_str());
        return 0;
    }
    if (args.command == "devices") {
        for (const auto &d : trainlab::listDevices())
            std::printf("%-8s %s, %.1f GiB\n", d.id.c_str(), d.name.c_str(), d.memoryBytes / 1073741824.0);
        return 0;
    }
    if (args.command == "presets") {
        if (const std::string problem = trainlab::resourcesProblem(); !problem.empty()) {
            std::fprintf(stderr, "trainlab-cli: %s\n", problem.c_str());
            return 1;
        }
        for (const auto &name : trainlab::presetNames())
            std::printf("%s\n", name.c_str());
        return 0;
    }
    if (args.command == "dataset")
        return datasetCommand(args);
    if (args.command == "runs")
        return runsCommand(args);
    if (args.command == "sweep")
        return sweepCommand(args);
    if (args.command == "evaluate")
        return evaluateCommand(args);
    if (args.command == "classify")
        return classifyCommand(args);
    if (args.command == "export")
        return exportCommand(args);
    if (args.command == "notes")
        return notesCommand(args);
    if (args.command == "compare")
        return compareCommand(args);
    if (args.command == "delete")
        return deleteCommand(args);
    trainlab::RunOptions options;
    if (args.command == "resume" || args.command == "run") {
        try {
            options = runOptions(args);
        } catch (const std::invalid_argument &e) {
            std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
            return 2;
        }
    }
    if (args.command == "resume") {
        ConsoleObserver observer;
        if (args.monitor)
            observer.enableMonitor();
        const trainlab::RunResult result
            = trainlab::resumeRun(args.configPath, observer, g_stop, options, args.epochs.value_or(0));
        // Refused before training (changed config, unreadable checkpoint, run in use): as a config error.
        if (result.status == trainlab::RunStatus::Failed && !observer.m_started)
            return 2;
        return result.status == trainlab::RunStatus::Completed ? 0 : 1;
    }
    trainlab::ExperimentConfig config;
    const std::string origin = args.preset.empty() ? args.configPath : "preset " + args.preset;
    try {
        config = args.preset.empty() ? trainlab::ExperimentConfig::load(args.configPath)
                                     : trainlab::loadPreset(args.preset);
        config = trainlab::withSettings(config, args.settings);
    } catch (const trainlab::ConfigError &e) {
        if (!e.problems().empty())
            return printProblems(origin, e.problems());
        std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
        return 2;
    }
    if (args.command == "validate") {
        const auto problems = config.validate();
        if (!problems.empty())
            return printProblems(origin, problems);
        std::printf("%s: valid\n", origin.c_str());
        return 0;
    }
    if (args.epochs)
        config.epochs = *args.epochs;
    if (args.trainLimit)
        config.dataset.trainLimit = *args.trainLimit;
    if (args.testLimit)
        config.dataset.testLimit = *args.testLimit;
    if (args.batchSize)
        config.batchSize = *args.batchSize;
    if (args.learningRate)
        config.learningRate = *args.learningRate;
    if (args.devices)
        config.devices = *args.devices;
    const auto problems = config.validate();
    if (!problems.empty())
        return printProblems(origin, problems);
    try {
        (void)trainlab::processDevices(config.devices, options.node);
    } catch (const std::invalid_argument &e) {
        return printProblems(origin, {e.what()});
    }

    if (args.command == "lr-find")
        return lrFindCommand(args, config, origin);
    ConsoleObserver observer;
    if (args.monitor)
        observer.enableMonitor();
    const trainlab::RunResult result = trainlab::runExperiment(config, observer, g_stop, options);
    return result.status == trainlab::RunStatus::Completed ? 0 : 1;
}

int main(int argc, char **argv)
{
    // A closed pipe or pager ends the output, not the run; a closed terminal stops the run as SIGTERM does.
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGHUP, onSignal);
    // Before any thread allocates: the allocator is process-wide.
    trainlab::useHugePagesForLargeTensors();
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "trainlab-cli: %s\n", e.what());
        return 1;
    }
}
