#pragma once

#include "core/config.h"
#include "core/queue.h"
#include "ui/metatypes.h"

#include <QElapsedTimer>
#include <QMainWindow>
#include <QString>
#include <QStringList>

class QAction;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace trainlab {

class AccuracyChart;
class CompareView;
class RunsStorage;
class ExperimentForm;
class QueuePanel;
class ResumeActions;
class RunHistoryModel;
class TrainingRunner;

// TrainLab's window: the experiment form, the live chart, the log and the run history.
class MainWindow : public QMainWindow
{
    Q_OBJECT

public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    // Each returns false and tells the user why when it cannot; the form is then left as it was.
    bool loadPreset(const QString &name);
    bool openConfigFile(const QString &path);
    bool saveConfigTo(const QString &path);
    bool exportChart(const QString &path);
    bool exportMetricsCsv(const QString &path);
    // remember: also the folder of later sessions (File > Runs Folder…); not for --runs-dir.
    void setRunsDir(const QString &dir, bool remember = true);

    bool isModified() const;
    bool isRunning() const;
    QString currentFile() const { return m_filePath; }
    QString runsDir() const;
    QString lastError() const { return m_lastError; }
    ExperimentForm *form() const { return m_form; }
    AccuracyChart *chart() const { return m_chart; }
    QTableView *history() const { return m_history; }
    RunHistoryModel *historyModel() const { return m_historyModel; }
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
    void setCleanConfig(const ExperimentConfig &config, const QString &path);
    void updateTitle();
    void updateActions();
    bool maybeSave();
    bool save();
    bool saveAs();
    void newExperiment();
    void openDialog();
    void duplicate();
    void addRecentFile(const QString &path);
    void rebuildRecentMenu();
    void chooseRunsDir();
    void showError(const QString &title, const QString &text);
    QString askSavePath(const QString &title, const QString &suggested, const QString &filter);
    void appendLog(const QString &line);
    void about();
    bool launchQueued(const QueueEntry &entry, bool resume);
    void addCurrentToQueue();
    void chooseSweepToCompare();

    void prepareRunView(const QString &name, int epochs, const QString &devices);
    void onRunStarted(const RunInfo &info);
    void onBatch(const BatchProgress &progress);
    void onEpoch(const EpochMetrics &metrics);
    void onFinished(const RunResult &result);
    void onIdle();

    void onHistorySelection();
    void useSelectedConfig();
    void openSelectedFolder();
    void deleteSelectedRuns();
    void deleteSelectedCheckpoints();
    void exportChartDialog();
    void exportCsvDialog();
    QList<int> selectedRows() const;
    QStringList deletableSelectedDirs() const;
    void refreshHistory();

    ExperimentForm *m_form;
    AccuracyChart *m_chart;
    TrainingRunner *m_runner;
    RunHistoryModel *m_historyModel;
    ResumeActions *m_resumeActions;
    QueuePanel *m_queuePanel;
    CompareView *m_compare = nullptr;
    QTableView *m_history = nullptr;
    RunsStorage *m_storage = nullptr;
    QPlainTextEdit *m_log = nullptr;
    QPushButton *m_startButton = nullptr;
    QPushButton *m_stopButton = nullptr;
    QLabel *m_epochLabel = nullptr;
    QProgressBar *m_batchBar = nullptr;
    QLabel *m_speedLabel = nullptr;
    QLabel *m_timeLabel = nullptr;
    QLabel *m_statusDevices = nullptr;
    QMenu *m_recentMenu = nullptr;
    QAction *m_startAction = nullptr;
    QAction *m_stopAction = nullptr;
    QAction *m_useConfigAction = nullptr;
    QAction *m_openFolderAction = nullptr;
    QAction *m_deleteAction = nullptr;
    QAction *m_deleteCheckpointsAction = nullptr;
    QAction *m_exportCsvAction = nullptr;

    QString m_filePath;
    QString m_cleanJson;            // the form as last loaded or saved; modified = the form differs from it
    QString m_runsDir;
    QString m_savedRunsDir;         // what the settings keep: --runs-dir lasts one session
    QString m_lastDatasetDir;
    QStringList m_recentFiles;
    QString m_lastError;
    QString m_activeRunDir;
    QString m_runDevices;
    RunResult m_lastResult;
    int m_runEpochs = 0;
    int m_epochsBefore = 0;         // a resumed run: epochs done before it started, left out of the ETA
    QElapsedTimer m_runClock;
    bool m_closeAfterStop = false;
    bool m_queuedRun = false;       // the queue started this run: its failure is the queue's row, not a dialog
};

} // namespace trainlab
