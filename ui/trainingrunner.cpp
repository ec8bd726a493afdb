#include "ui/trainingrunner.h"

#include "ui/trainingworker.h"

#include <QThread>

namespace trainlab {

TrainingRunner::TrainingRunner(QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<RunInfo>();
    qRegisterMetaType<BatchProgress>();
    qRegisterMetaType<EpochMetrics>();
    qRegisterMetaType<RunResult>();
}

TrainingRunner::~TrainingRunner()
{
    if (m_thread) {
        m_stop->store(true);
        m_thread->requestInterruption();
        m_thread->wait();
    }
}

void TrainingRunner::start(const ExperimentConfig &config, const QString &runsDir, const SweepTag &tag,
                           const std::string &notes)
{
    if (m_thread)
        return;
    RunOptions options;
    options.runsDir = runsDir.toStdString();
    options.tag = tag;
    options.notes = notes;
    m_stop = std::make_shared<std::atomic<bool>>(false);
    launch(new TrainingWorker(config, options, m_stop));
}

void TrainingRunner::resume(const QString &runDir, int epochs)
{
    if (m_thread)
        return;
    m_stop = std::make_shared<std::atomic<bool>>(false);
    launch(new TrainingWorker(ExperimentConfig{}, RunOptions{}, m_stop, runDir.toStdString(), epochs));
}

void TrainingRunner::launch(TrainingWorker *worker)
{
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("training"));
    m_stopping = false;
    worker->moveToThread(m_thread);
    connect(m_thread, &QThread::started, worker, &TrainingWorker::run);
    connect(worker, &TrainingWorker::runStarted, this, &TrainingRunner::runStarted);
    connect(worker, &TrainingWorker::batchDone, this, &TrainingRunner::batchDone);
    connect(worker, &TrainingWorker::epochDone, this, &TrainingRunner::epochDone);
    connect(worker, &TrainingWorker::logLine, this, &TrainingRunner::logLine);
    connect(worker, &TrainingWorker::finished, this, &TrainingRunner::finished);
    connect(m_thread, &QThread::finished, worker, &QObject::deleteLater);
    QThread *thread = m_thread;
    connect(m_thread, &QThread::finished, this, [this, thread] {
        thread->deleteLater();
        if (m_thread == thread) {
            m_thread = nullptr;
            m_stopping = false;
            Q_EMIT idle();
        }
    });
    m_thread->start();
}

void TrainingRunner::stop()
{
    if (!m_thread)
        return;
    m_stopping = true;
    m_stop->store(true);
    m_thread->requestInterruption();
}

} // namespace trainlab
