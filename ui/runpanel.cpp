#include "ui/runpanel.h"

#include "core/runs/report.h"

#include <QAction>
#include <QFontDatabase>
#include <QMenu>
#include <QToolBar>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>

namespace trainlab {

namespace {

QString clock(qint64 ms)
{
    const qint64 s = ms / 1000;
    return s >= 3600 ? QStringLiteral("%1:%2:%3").arg(s / 3600).arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
                           .arg(s % 60, 2, 10, QLatin1Char('0'))
                     : QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

QString devicesText(const std::vector<std::string> &devices)
{
    QStringList list;
    for (const auto &d : devices)
        list << QString::fromStdString(d);
    return list.join(QStringLiteral(", "));
}

} // namespace

RunPanel::RunPanel(QObject *parent)
    : QObject(parent)
    , m_buttons(new QWidget)
    , m_progress(new QWidget)
    , m_log(new QPlainTextEdit)
    , m_startButton(new QPushButton(tr("Start")))
    , m_stopButton(new QPushButton(tr("Stop")))
    , m_epochLabel(new QLabel(tr("No run yet")))
    , m_batchBar(new QProgressBar)
    , m_speedLabel(new QLabel)
    , m_timeLabel(new QLabel)
    , m_devicesLabel(new QLabel)
{
    m_devicesLabel->setObjectName(QStringLiteral("statusDevices"));
    m_startButton->setObjectName(QStringLiteral("startButton"));
    m_startButton->setDefault(true);
    m_stopButton->setObjectName(QStringLiteral("stopButton"));
    connect(m_startButton, &QPushButton::clicked, this, &RunPanel::startClicked);
    connect(m_stopButton, &QPushButton::clicked, this, &RunPanel::stopClicked);
    auto *buttons = new QHBoxLayout(m_buttons);
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(m_startButton);
    buttons->addWidget(m_stopButton);

    m_epochLabel->setObjectName(QStringLiteral("epochLabel"));
    m_batchBar->setObjectName(QStringLiteral("batchProgress"));
    m_batchBar->setFormat(tr("batch %v of %m"));
    m_batchBar->setRange(0, 1);
    m_batchBar->setValue(0);
    m_speedLabel->setObjectName(QStringLiteral("speedLabel"));
    m_timeLabel->setObjectName(QStringLiteral("timeLabel"));
    // The labels keep their text whole; the bar takes what is left.
    for (QLabel *label : {m_epochLabel, m_speedLabel, m_timeLabel})
        label->setSizePolicy(QSizePolicy::Minimum, QSizePolicy::Preferred);
    auto *progress = new QHBoxLayout(m_progress);
    progress->setContentsMargins(0, 0, 0, 0);
    progress->addWidget(m_epochLabel);
    progress->addWidget(m_batchBar, 1);
    progress->addWidget(m_speedLabel);
    progress->addWidget(m_timeLabel);

    m_log->setObjectName(QStringLiteral("log"));
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(20000);
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
}

RunPanel::~RunPanel()
{
    // Widgets the window never took (a test's panel alone) go with the panel.
    for (QWidget *w : {m_buttons, m_progress, static_cast<QWidget *>(m_log), static_cast<QWidget *>(m_devicesLabel)}) {
        if (!w->parent())
            delete w;
    }
}

void RunPanel::addActions(QMenu *run, QToolBar *toolbar)
{
    m_startAction = run->addAction(tr("&Start"), QKeySequence(tr("Ctrl+R")), this, &RunPanel::startClicked);
    m_stopAction = run->addAction(tr("S&top"), QKeySequence(tr("Ctrl+.")), this, &RunPanel::stopClicked);
    toolbar->addAction(m_startAction);
    toolbar->addAction(m_stopAction);
}

void RunPanel::setEnabled(bool canStart, bool canStop)
{
    m_startButton->setEnabled(canStart);
    m_stopButton->setEnabled(canStop);
    if (m_startAction) {
        m_startAction->setEnabled(canStart);
        m_stopAction->setEnabled(canStop);
    }
}

void RunPanel::prepare(int epochs, const std::vector<std::string> &devices)
{
    m_devices = devicesText(devices);
    m_devicesLabel->setText(tr("Training on %1").arg(m_devices));
    m_log->clear();
    m_runEpochs = epochs;
    m_epochsBefore = 0;
    m_epochLabel->setText(tr("Loading data…"));
    m_batchBar->setRange(0, 1);
    m_batchBar->setValue(0);
    m_speedLabel->clear();
    m_timeLabel->clear();
    m_runClock.start();
}

void RunPanel::onRunStarted(const RunInfo &info)
{
    m_devices = devicesText(info.devices);
    m_devicesLabel->setText(tr("Training on %1").arg(m_devices));
    appendLog(QString::fromStdString(runStartedLine(info)));
    m_epochsBefore = info.epochsDone;
}

void RunPanel::onBatch(const BatchProgress &p)
{
    m_epochLabel->setText(tr("Epoch %1 of %2").arg(p.epoch).arg(p.epochs));
    m_batchBar->setRange(0, static_cast<int>(p.batches));
    m_batchBar->setValue(static_cast<int>(p.batch));
    m_speedLabel->setText(tr("%1 img/s").arg(p.imagesPerSecond, 0, 'f', 0));
    const qint64 elapsed = m_runClock.elapsed();
    // Only this session's work: a resumed run's earlier epochs took no time here.
    const double done = (static_cast<double>(p.epoch - 1 - m_epochsBefore) * static_cast<double>(p.batches) + static_cast<double>(p.batch))
                        / (static_cast<double>(std::max(1, p.epochs - m_epochsBefore)) * static_cast<double>(std::max<std::int64_t>(1, p.batches)));
    const QString eta = done > 0.0 ? clock(static_cast<qint64>(static_cast<double>(elapsed) * (1.0 - done) / done))
                                   : QStringLiteral("–");
    m_timeLabel->setText(tr("elapsed %1, ETA %2").arg(clock(elapsed), eta));
}

void RunPanel::onEpoch(const EpochMetrics &metrics)
{
    appendLog(QString::fromStdString(epochLine(metrics, m_runEpochs)));
    if (const std::string shares = timeSharesLine(metrics); !shares.empty())
        appendLog(QStringLiteral("  ") + QString::fromStdString(shares));
}

void RunPanel::onFinished(const RunResult &result)
{
    for (const std::string &line : finishedLines(result, deviceList({m_devices.toStdString()})))
        appendLog(QString::fromStdString(line));
    const QString status = QString::fromLatin1(toString(result.status));
    m_epochLabel->setText(tr("Run %1 after %2 of %3 epochs").arg(status).arg(result.epochs.size()).arg(m_runEpochs));
    m_timeLabel->setText(tr("took %1").arg(clock(m_runClock.elapsed())));
}

void RunPanel::onIdle()
{
    m_devicesLabel->setText(tr("Last run on %1").arg(m_devices));
}

void RunPanel::showStopping()
{
    m_epochLabel->setText(tr("Stopping…"));
}

void RunPanel::appendLog(const QString &line)
{
    m_log->appendPlainText(line);
}

} // namespace trainlab
