#pragma once

#include "core/config.h"
#include "core/sweeps/queue.h"
#include "ui/experimentfile.h"
#include "ui/historypanel.h"
#include "ui/metatypes.h"

#include <QMainWindow>
#include <QPointer>
#include <QString>

class QDockWidget;
class QLabel;
class QTableView;

namespace trainlab {

class AccuracyChart;
class CompareView;
class ExperimentFile;
class ExperimentForm;
class HistoryPanel;
class LaunchDialog;
class LrFinderDialog;
class QueuePanel;
class ResumeActions;
class RunHistoryModel;
class RunPanel;
class TimeView;
class EvaluationView;
class TrainingRunner;

// TrainLab's window: lays out and connects the experiment form and file, the live chart, the run panel
// (start, stop, progress, log), the run history and the queue; it owns the runner that trains.
class MainWindow : public QMainWindow
{
    Q_OBJECT

public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    // Each returns false and tells the user why when it cannot; the form is then left as it was.
    bool loadPreset(const QString &name) { return m_file->loadPreset(name); }
    bool openConfigFile(const QString &path) { return m_file->openConfigFile(path); }
    bool saveConfigTo(const QString &path) { return m_file->saveConfigTo(path); }
    bool exportChart(const QString &path);
    bool exportMetricsCsv(const QString &path) { return m_historyPanel->exportMetricsCsv(path); }
    // remember: also the folder of later sessions (File > Runs Folder…); not for --runs-dir.
    void setRunsDir(const QString &dir, bool remember = true);

    bool isModified() const { return m_file->isModified(); }
    // Run > Launch on a Cluster…: the current experiment's torchrun and Slurm command lines (deleted on close).
    LaunchDialog *openLaunchDialog();
    // Run > Find Learning Rate…: the range test on the form's experiment (deleted on close), or the one whose test trains;
    // null while a run trains or the queue goes (the test would share their devices) or while the form has problems.
    // While its test trains, no run starts: Start waits, and the queue starts its next run when the test ends.
    LrFinderDialog *openLrFinder();
    bool isRunning() const;
    bool isRangeTestRunning() const;
    QString currentFile() const { return m_file->currentFile(); }
    QString runsDir() const;
    QString lastError() const { return m_lastError; }
    ExperimentForm *form() const { return m_form; }
    AccuracyChart *chart() const { return m_chart; }
    QTableView *history() const { return m_historyPanel->table(); }
    RunHistoryModel *historyModel() const { return m_historyPanel->model(); }
    QueuePanel *queuePanel() const { return m_queuePanel; }
    // The Compare window, once a sweep has been shown in it.
    CompareView *compareView() const { return m_compare; }

public Q_SLOTS:
    void startRun();
    void stopRun();
    // Resumes (epochs 0) or continues (to epochs in total) the run in runDir, as History > Resume Run does.
    void resumeRun(const QString &runDir, int epochs = 0);
    // Queue > Add Sweep…: the dialog on the current experiment; its runs join the queue.
    void addSweepDialog();
    // Shows the sweep's runs in the Compare window; false (and why) when the runs folder has none.
    bool showCompare(const QString &sweepId);
    // The Compare window on any runs (History's Compare Selected Runs); false after an error box.
    bool showCompareRuns(const QStringList &runDirs);

Q_SIGNALS:
    // After a run's thread has ended and the history shows its final state.
    void runEnded(const trainlab::RunResult &result);

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void buildMenus();
    void buildLayout();
    void readSettings();
    void writeSettings();
    void updateTitle();
    void updateActions();
    void chooseRunsDir();
    void showError(const QString &title, const QString &text);
    // Why a range test may not train now (a run, the queue), or empty.
    QString devicesBusy() const;
    // True, and the status bar says why, while a range test trains on the devices a run would take.
    bool refusedForRangeTest();
    bool launchQueued(const QueueEntry &entry, bool resume);
    void addCurrentToQueue();
    void chooseSweepToCompare();
    void exportChartDialog();
    void useRunConfig(const ExperimentConfig &config);

    void prepareRunView(const QString &name, int epochs, const std::vector<std::string> &devices);
    void onRunStarted(const RunInfo &info);
    void onBatch(const BatchProgress &progress);
    void onEpoch(const EpochMetrics &metrics);
    void onFinished(const RunResult &result);
    void onIdle();

    ExperimentForm *m_form;
    ExperimentFile *m_file;
    AccuracyChart *m_chart;
    TrainingRunner *m_runner;
    RunPanel *m_runPanel;
    HistoryPanel *m_historyPanel;
    ResumeActions *m_resumeActions;
    QueuePanel *m_queuePanel;
    TimeView *m_timeView;
    EvaluationView *m_evaluationView;
    QDockWidget *m_queueDock = nullptr;
    CompareView *m_compare = nullptr;
    QPointer<LrFinderDialog> m_lrFinder;

    QString m_runsDir;
    QString m_savedRunsDir;         // what the settings keep: --runs-dir lasts one session
    QString m_lastDatasetDir;
    QString m_lastError;
    QString m_activeRunDir;
    RunResult m_lastResult;
    bool m_closeAfterStop = false;
    bool m_queuedRun = false;       // the queue started this run: its failure is the queue's row, not a dialog
};

} // namespace trainlab
