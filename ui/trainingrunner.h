#pragma once

#include "core/config.h"
#include "core/sweeps/sweep.h"
#include "ui/metatypes.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

class QThread;

namespace trainlab {

// Owns the training thread of the window: one run at a time, never waited on by the GUI thread.
class TrainingRunner : public QObject
{
    Q_OBJECT

public:
    explicit TrainingRunner(QObject *parent = nullptr);
    // Stops a run still going and waits for its thread: only reached at exit.
    ~TrainingRunner() override;

    bool isRunning() const { return m_thread != nullptr; }
    bool isStopping() const { return m_stopping; }
    // tag: the sweep the run belongs to (its folder's summary.json keeps it); empty for a single run.
    // notes: the person's notes on the new run (its notes.txt)
    void start(const ExperimentConfig &config, const QString &runsDir, const SweepTag &tag = {},
               const std::string &notes = {});
    // Goes on with the run in runDir from its checkpoint; epochs > 0 continues a completed run to that many.
    void resume(const QString &runDir, int epochs = 0);
    // The run ends within one batch; finished() follows.
    void stop();

Q_SIGNALS:
    void runStarted(const trainlab::RunInfo &info);
    void batchDone(const trainlab::BatchProgress &progress);
    void epochDone(const trainlab::EpochMetrics &metrics);
    void logLine(const QString &line);
    void finished(const trainlab::RunResult &result);
    // The thread has ended: isRunning() is false from here on.
    void idle();

private:
    void launch(class TrainingWorker *worker);

    QThread *m_thread = nullptr;
    std::shared_ptr<std::atomic<bool>> m_stop;   // the engine reads it every step, before the all-reduce
    bool m_stopping = false;
};

} // namespace trainlab
