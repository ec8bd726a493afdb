#pragma once

#include "core/train/observer.h"

#include <QElapsedTimer>
#include <QObject>
#include <QString>

class QAction;
class QLabel;
class QMenu;
class QToolBar;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QWidget;

namespace trainlab {

// A run as the window shows it: Start and Stop, the progress row (epoch, batch, img/s, elapsed and ETA) and
// the log. Its widgets are laid out by the window (the buttons under the form, progress under the chart).
class RunPanel : public QObject
{
    Q_OBJECT

public:
    explicit RunPanel(QObject *parent = nullptr);
    ~RunPanel() override;

    // Run > Start and Stop (with their shortcuts), and the same on the toolbar.
    void addActions(QMenu *run, QToolBar *toolbar);
    QWidget *buttons() const { return m_buttons; }
    QWidget *progress() const { return m_progress; }
    QPlainTextEdit *log() const { return m_log; }
    // "Training on cpu, cpu" / "Last run on …", for the status bar.
    QLabel *devicesLabel() const { return m_devicesLabel; }

    void setEnabled(bool canStart, bool canStop);
    // A run is about to start (or resume) on these devices with this many epochs in total.
    void prepare(int epochs, const std::vector<std::string> &devices);
    void onRunStarted(const RunInfo &info);
    void onBatch(const BatchProgress &progress);
    void onEpoch(const EpochMetrics &metrics);
    void onFinished(const RunResult &result);
    void onIdle();
    void showStopping();
    void appendLog(const QString &line);

Q_SIGNALS:
    void startClicked();
    void stopClicked();

private:
    QWidget *m_buttons;
    QWidget *m_progress;
    QPlainTextEdit *m_log;
    QAction *m_startAction = nullptr;
    QAction *m_stopAction = nullptr;
    QPushButton *m_startButton;
    QPushButton *m_stopButton;
    QLabel *m_epochLabel;
    QProgressBar *m_batchBar;
    QLabel *m_speedLabel;
    QLabel *m_timeLabel;
    QLabel *m_devicesLabel;
    QString m_devices;
    QElapsedTimer m_runClock;
    int m_runEpochs = 0;
    int m_epochsBefore = 0;         // a resumed run: epochs done before it started, left out of the ETA
};

} // namespace trainlab
