#pragma once

#include "core/sweeps/queue.h"
#include "ui/metatypes.h"

#include <QString>
#include <QWidget>

#include <functional>
#include <memory>

class QLabel;
class QPushButton;
class QTableWidget;

namespace trainlab {

// The experiment queue: entries run one after another through the window's runner, never two at once.
// Kept in <runsDir>/queue.json, rewritten on every change, so a closed or killed window's queue goes on.
class QueuePanel : public QWidget
{
    Q_OBJECT

public:
    // Starts the entry (resume: from its run folder); false when the window cannot start a run now.
    using Launcher = std::function<bool(const QueueEntry &entry, bool resume)>;

    enum Column { IndexColumn, NameColumn, ValuesColumn, StateColumn, BestColumn, SecondsColumn, SpeedColumn, ColumnCount };

    explicit QueuePanel(QWidget *parent = nullptr);
    ~QueuePanel() override;

    void setLauncher(Launcher launcher) { m_launcher = std::move(launcher); }
    // Shows the queue kept in runsDir (ignored while the queue runs); a damaged file is set aside, not lost.
    void setRunsDir(const QString &runsDir);
    QString runsDir() const { return m_runsDir; }
    QString stateFile() const;

    void addExperiment(const ExperimentConfig &config);
    // Writes <runs>/sweeps/<id>/sweep.json and queues the sweep's runs; the id, or empty with *error set.
    // notes: given to each of its runs, and kept in the sweep folder for `trainlab-cli sweep --resume`
    QString addSweep(const SweepConfig &sweep, QString *error = nullptr, const std::string &notes = {});
    // Add Sweep…: the sweep dialog on base; true when its runs joined the queue, false when cancelled or
    // refused (then *error says why).
    bool addSweepDialog(const ExperimentConfig &base, QString *error);

    const Queue &queue() const { return *m_queue; }
    bool isActive() const { return m_active; }
    QTableWidget *table() const { return m_table; }
    QString message() const;
    int selectedRow() const;
    void selectRow(int row);

public Q_SLOTS:
    void startQueue();
    // Stops the current run (it ends `stopped`, to be resumed by the next start); the rest stay waiting.
    void stopQueue();
    void moveSelected(int delta);
    void removeSelected();
    void retrySelected();
    void clearFinished();

    // The window's runner reports here; events of a run the queue did not start are ignored.
    void onRunStarted(const trainlab::RunInfo &info);
    void onRunFinished(const trainlab::RunResult &result);
    // The running entry's sweep may prune it here: the panel then asks for a stop and goes on with the queue.
    void onEpochDone(const trainlab::EpochMetrics &metrics);
    void onRunnerIdle();

Q_SIGNALS:
    void addCurrentRequested();
    void addSweepRequested();
    void compareRequested(const QString &sweepId);
    void stopRequested();
    // The queue ran out of work, was stopped, or stopped on a failure.
    void queueEnded();

private:
    void launchNext();
    void refresh();
    void updateButtons();
    void setMessage(const QString &text);

    std::unique_ptr<Queue> m_queue;
    Launcher m_launcher;
    QString m_runsDir;
    int m_current = -1;         // the entry whose run is going, -1 between runs
    bool m_active = false;
    bool m_stopping = false;
    std::string m_pruneReason;  // why the running entry is being stopped by its sweep; "" otherwise
    QTableWidget *m_table;
    QLabel *m_message;
    QLabel *m_estimate;   // while the queue runs: what is left and about how long it takes
    QPushButton *m_addCurrent;
    QPushButton *m_addSweep;
    QPushButton *m_up;
    QPushButton *m_down;
    QPushButton *m_remove;
    QPushButton *m_retry;
    QPushButton *m_clear;
    QPushButton *m_start;
    QPushButton *m_stop;
    QPushButton *m_compare;
};

} // namespace trainlab
