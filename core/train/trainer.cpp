#include "core/train/trainer.h"

#include "core/runs/runrecord.h"
#include "core/runs/runstorage.h"
#include "core/train/checkpoint.h"
#include "core/train/devices.h"
#include "core/train/engine.h"
#include "core/train/model.h"
#include "core/util/atomicfile.h"
#include "core/util/paths.h"

#include <algorithm>
#include <filesystem>
#include <memory>

namespace trainlab {

const char *toString(RunStatus status)
{
    switch (status) {
    case RunStatus::Completed:
        return "completed";
    case RunStatus::Stopped:
        return "stopped";
    case RunStatus::Failed:
        break;
    }
    return "failed";
}

void RunResult::summarize()
{
    bestTestAcc = 0.0;
    bestEpoch = 0;
    meanEpochSeconds = 0.0;
    for (const EpochMetrics &m : epochs) {
        if (m.testAcc > bestTestAcc || bestEpoch == 0) {
            bestTestAcc = m.testAcc;
            bestEpoch = m.epoch;
        }
        meanEpochSeconds += m.seconds / static_cast<double>(epochs.size());
    }
}

namespace {

void checkTrainable(const ExperimentConfig &config, const DataBundle &data)
{
    if (data.train.images.size(1) < 8 || data.train.images.size(2) < 8)
        throw std::runtime_error(data.source + ": images are smaller than 8x8");
    if (config.model.inChannels != 1)
        throw std::runtime_error("model.in_channels: must be 1 for fashion-mnist (grayscale), got "
                                 + std::to_string(config.model.inChannels));
}

// The epochs a run folder claims: summary.json's count, or metrics.csv's rows when it says more.
int recordedEpochs(const std::string &runDir, const RunSummary &summary)
{
    int rows = 0;
    try {
        rows = static_cast<int>(readMetrics(runDir).size());
    } catch (const std::exception &) {
    }
    return std::max(summary.epochsDone, rows);
}

// The part of a run shared by a new and a resumed one, from loaded data and an open record on.
RunResult train(EngineSetup setup, std::unique_ptr<RunRecord> record, TrainingObserver &observer, const StopFlag &stop)
{
    if (record) {
        record->startDeviceSampling(cudaBusIds());
        observer.onLog("run folder: " + record->dir());
        try {
            // A resumed run keeps the notes it has (a resumed sweep passes its notes on to every run).
            if (!setup.options.notes.empty() && readRunNotes(record->dir()).empty())
                writeRunNotes(record->dir(), setup.options.notes);
        } catch (const std::exception &e) {
            observer.onLog(std::string("notes not kept (the run goes on): ") + e.what());
        }
        if (const std::string warning = record->takeWarning(); !warning.empty())
            observer.onLog(warning);
    }
    if (!setup.options.node.launcher.empty())
        observer.onLog("launcher: " + setup.options.node.launcher);
    observer.onLog("data: " + std::to_string(setup.data.train.size()) + " train / "
                   + std::to_string(setup.data.test.size()) + " test images from " + setup.data.source);
    const ModelConfig modelConfig = setup.config.model;
    setup.makeModel = [modelConfig] {
        auto model = makeResNet18(modelConfig.inChannels, modelConfig.numClasses);
        initWeights(*model, modelConfig.init);
        return model;
    };
    setup.record = record.get();
    EngineResult engine = runEngine(std::move(setup), observer, stop);
    if (!engine.weightsDigest.empty())
        observer.onLog("final weights digest: " + engine.weightsDigest);
    RunResult r = engine.result;
    if (record && record->folderGone()) {
        observer.onLog(record->goneMessage());
    } else if (record) {
        r.runDir = record->dir();
        try {
            record->finish(r);
        } catch (const std::exception &e) {
            observer.onLog(std::string("cannot write the run summary: ") + e.what());
        }
    }
    observer.onFinished(r);
    return r;
}

RunResult failed(const std::string &error, const std::string &runDir, TrainingObserver &observer)
{
    RunResult r;
    r.error = error;
    r.runDir = runDir;
    observer.onFinished(r);
    return r;
}

} // namespace

RunResult runExperiment(const ExperimentConfig &config, TrainingObserver &observer, const StopFlag &stop,
                        const RunOptions &options)
{
    const auto problems = config.validate();
    if (!problems.empty())
        return failed(ExperimentConfig::problemsText(problems), "", observer);
    EngineSetup setup;
    setup.config = config;
    setup.options = options;
    std::unique_ptr<RunRecord> record;
    try {
        setup.data = loadData(config.dataset, config.model.numClasses);
        checkTrainable(config, setup.data);
        if (options.keepRecord && options.node.nodeRank == 0)
            record = std::make_unique<RunRecord>(options.runsDir.empty() ? defaultRunsDir() : options.runsDir, config,
                                                 config.devices, options.tag);
    } catch (const std::exception &e) {
        return failed(errorText(e), "", observer);
    }
    return train(std::move(setup), std::move(record), observer, stop);
}

RunResult resumeRun(const std::string &runDir, TrainingObserver &observer, const StopFlag &stop,
                    const RunOptions &options, int epochs)
{
    namespace fs = std::filesystem;
    EngineSetup setup;
    setup.options = options;
    std::unique_ptr<RunRecord> record;
    try {
        std::error_code ec;
        if (!fs::is_directory(runDir, ec))
            throw std::runtime_error(runDir + ": not a run folder (no such directory)");
        const RunSummary summary = readRunSummary(runDir);
        if (summary.status == "running")
            throw std::runtime_error(runDir + ": the run is in use by another TrainLab process (pid "
                                     + std::to_string(summary.pid) + " on " + summary.host + ")");
        ExperimentConfig config = ExperimentConfig::load(runDir + "/config.json");
        if (epochs > 0)
            config.epochs = epochs;
        const auto problems = config.validate();
        if (!problems.empty())
            throw std::runtime_error(runDir + "/config.json: " + ExperimentConfig::problemsText(problems));
        const std::string checkpoint = runDir + "/checkpoint.pt";
        CheckpointInfo info;
        if (fs::exists(checkpoint, ec)) {
            auto bytes = std::make_shared<const std::string>(readFile(checkpoint, kMaxCheckpointBytes));
            info = readCheckpointInfo(*bytes, checkpoint);
            const std::string bound = checkpointConfigJson(config.toJson());
            if (const std::string saved = currentBoundConfig(info.config); saved != bound) {
                std::string keys;
                for (const auto &k : configDifferences(saved, bound))
                    keys += (keys.empty() ? "" : ", ") + k;
                throw std::runtime_error(runDir + "/config.json: differs from the configuration the run was trained with in: "
                                         + keys + " (only epochs may change when resuming)");
            }
            setup.resumeCheckpoint = bytes;
            setup.resumeOrigin = checkpoint;
        } else if (const int recorded = recordedEpochs(runDir, summary); recorded > 0) {
            const bool keepsLast = config.checkpoints == "last" || config.checkpoints == "last+best";
            throw std::runtime_error(checkpoint + ": missing, so the " + std::to_string(recorded)
                                     + " epochs recorded cannot be resumed and are kept ("
                                     + (keepsLast ? "its checkpoints were deleted"
                                                  : "checkpoints: \"" + config.checkpoints + "\" keeps no last checkpoint")
                                     + ")");
        }
        if (config.epochs < info.epoch)
            throw std::runtime_error("epochs: must be at least the " + std::to_string(info.epoch)
                                     + " epochs already done, got " + std::to_string(config.epochs));
        if (config.epochs == info.epoch && summary.status == "completed")
            throw std::runtime_error(runDir + ": all " + std::to_string(info.epoch)
                                     + " epochs are done; give more epochs to continue it (trainlab-cli resume DIR --epochs N)");
        if (config.epochs == info.epoch) {
            // Killed after its last checkpoint: nothing left to train, only the record to complete.
            record = RunRecord::reopen(runDir, config, info.metrics, info.epoch);
            RunResult r;
            r.status = RunStatus::Completed;
            r.runDir = runDir;
            r.epochs = info.metrics;
            r.summarize();
            record->finish(r);
            observer.onLog("all " + std::to_string(info.epoch) + " epochs were already trained; the run is completed");
            observer.onFinished(r);
            return r;
        }
        setup.config = config;
        setup.data = loadData(config.dataset, config.model.numClasses);
        checkTrainable(config, setup.data);
        if (options.node.nodeRank == 0)
            record = RunRecord::reopen(runDir, config, info.metrics, info.epoch);
        observer.onLog("resuming after epoch " + std::to_string(info.epoch) + " of " + std::to_string(config.epochs));
    } catch (const std::exception &e) {
        return failed(errorText(e), runDir, observer);
    }
    return train(std::move(setup), std::move(record), observer, stop);
}

} // namespace trainlab
