#pragma once

#include "core/config.h"
#include "core/train/trainer.h"
#include "ui/metatypes.h"

#include <QObject>
#include <QString>

#include <memory>

namespace trainlab {

// Runs one experiment when its thread starts; stopped with QThread::requestInterruption().
class TrainingWorker : public QObject
{
    Q_OBJECT

public:
    // stop is shared with the runner, which sets it from the GUI thread. A non-empty resumeDir resumes
    // (or, with epochs > 0, continues) that run instead of starting config.
    TrainingWorker(ExperimentConfig config, RunOptions options, std::shared_ptr<const StopFlag> stop,
                   std::string resumeDir = {}, int epochs = 0);

    void run();

Q_SIGNALS:
    void runStarted(const trainlab::RunInfo &info);
    void batchDone(const trainlab::BatchProgress &progress);
    void epochDone(const trainlab::EpochMetrics &metrics);
    void logLine(const QString &line);
    void finished(const trainlab::RunResult &result);

private:
    ExperimentConfig m_config;
    RunOptions m_options;
    std::shared_ptr<const StopFlag> m_stop;
    std::string m_resumeDir;
    int m_epochs = 0;
};

} // namespace trainlab
