#include "ui/trainingworker.h"

#include <QThread>

#include <chrono>

namespace trainlab {

namespace {

// Turns the engine's callbacks (on a replica thread) into the worker's signals, throttling batches.
class SignalObserver : public TrainingObserver
{
public:
    SignalObserver(TrainingWorker &worker, QThread &thread)
        : m_worker(worker), m_thread(thread)
    {}

    void onRunStarted(const RunInfo &info) override { Q_EMIT m_worker.runStarted(info); }

    bool onBatch(const BatchProgress &progress) override
    {
        const auto now = std::chrono::steady_clock::now();
        // A fast GPU reports thousands of batches a second; the window needs about twenty.
        if (progress.batch == progress.batches || now - m_lastBatch >= std::chrono::milliseconds(50)) {
            m_lastBatch = now;
            Q_EMIT m_worker.batchDone(progress);
        }
        return !m_thread.isInterruptionRequested();
    }

    void onEpoch(const EpochMetrics &metrics) override { Q_EMIT m_worker.epochDone(metrics); }
    void onLog(const std::string &line) override { Q_EMIT m_worker.logLine(QString::fromStdString(line)); }
    void onFinished(const RunResult &result) override { Q_EMIT m_worker.finished(result); }

private:
    TrainingWorker &m_worker;
    QThread &m_thread;
    std::chrono::steady_clock::time_point m_lastBatch{};
};

} // namespace

TrainingWorker::TrainingWorker(ExperimentConfig config, RunOptions options, std::shared_ptr<const StopFlag> stop,
                               std::string resumeDir, int epochs)
    : m_config(std::move(config))
    , m_options(std::move(options))
    , m_stop(std::move(stop))
    , m_resumeDir(std::move(resumeDir))
    , m_epochs(epochs)
{}

void TrainingWorker::run()
{
    SignalObserver observer(*this, *thread());
    try {
        if (m_resumeDir.empty())
            runExperiment(m_config, observer, *m_stop, m_options);
        else
            resumeRun(m_resumeDir, observer, *m_stop, m_options, m_epochs);
    } catch (const std::exception &e) {
        // runExperiment reports its own failures; this is a thread or allocation that could not even start.
        RunResult result;
        result.error = e.what();
        Q_EMIT finished(result);
    }
    // Quit from here, not by a queued signal: the GUI thread may be blocked in wait() at exit.
    thread()->quit();
}

} // namespace trainlab
