#include "core/trainer.h"

#include "core/engine.h"
#include "core/model.h"
#include "core/paths.h"
#include "core/runrecord.h"

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

RunResult runExperiment(const ExperimentConfig &config, TrainingObserver &observer, const StopFlag &stop,
                        const RunOptions &options)
{
    RunResult result;
    std::unique_ptr<RunRecord> record;
    auto finish = [&](RunResult r) {
        if (record) {
            r.runDir = record->dir();
            try {
                record->finish(r);
            } catch (const std::exception &e) {
                observer.onLog(std::string("cannot write the run summary: ") + e.what());
            }
        }
        observer.onFinished(r);
        return r;
    };
    const auto problems = config.validate();
    if (!problems.empty()) {
        result.error = "invalid configuration:";
        for (const auto &p : problems)
            result.error += "\n  " + p;
        return finish(result);
    }
    EngineSetup setup;
    setup.config = config;
    setup.options = options;
    try {
        setup.data = loadData(config.dataset, config.model.numClasses);
        if (setup.data.train.images.size(1) < 8 || setup.data.train.images.size(2) < 8)
            throw std::runtime_error(setup.data.source + ": images are smaller than 8x8");
        if (config.model.inChannels != 1)
            throw std::runtime_error("model.in_channels: must be 1 for fashion-mnist (grayscale), got "
                                     + std::to_string(config.model.inChannels));
        if (options.keepRecord && options.node.nodeRank == 0) {
            record = std::make_unique<RunRecord>(options.runsDir.empty() ? defaultRunsDir() : options.runsDir, config,
                                                 config.devices);
            observer.onLog("run folder: " + record->dir());
        }
    } catch (const std::exception &e) {
        result.error = errorText(e);
        return finish(result);
    }
    observer.onLog("data: " + std::to_string(setup.data.train.size()) + " train / "
                   + std::to_string(setup.data.test.size()) + " test images from " + setup.data.source);
    const int inChannels = config.model.inChannels, classes = config.model.numClasses;
    setup.makeModel = [inChannels, classes] {
        auto model = makeResNet18(inChannels, classes);
        initD2lWeights(*model);
        return model;
    };
    setup.record = record.get();
    EngineResult engine = runEngine(std::move(setup), observer, stop);
    if (!engine.weightsDigest.empty())
        observer.onLog("final weights digest: " + engine.weightsDigest);
    return finish(engine.result);
}

} // namespace trainlab
