#pragma once

#include "core/config.h"
#include "core/runs/runrecord.h"

#include <QList>
#include <QVector>
#include <QWidget>

class QAction;
class QDoubleSpinBox;
class QFileSystemWatcher;
class QLabel;
class QLineEdit;
class QMenu;
class QTableView;
class QTimer;

namespace trainlab {

class AccuracyChart;
class RunHistoryFilter;
class RunHistoryModel;
class RunsStorage;

// The run history: the table of the runs folder (sorted by a header click, narrowed by the filter line above it),
// the storage line under it, the selected runs overlaid on the chart, and the History menu's actions (use
// configuration, open folder, delete, delete checkpoints, export).
class HistoryPanel : public QWidget
{
    Q_OBJECT

public:
    explicit HistoryPanel(AccuracyChart *chart, QWidget *parent = nullptr);

    // The History menu and the table's context menu; `leading` (resume, continue) come first in the latter.
    void addActions(QMenu *history, const QList<QAction *> &leading);
    QAction *exportCsvAction() const { return m_exportCsv; }

    void setRunsDir(const QString &dir);
    QString runsDir() const { return m_runsDir; }
    // The run in progress: it cannot be deleted, and the model shows it as running here.
    void setActiveRunDir(const QString &dir);
    // Re-reads the runs folder; the selected runs stay selected and overlaid.
    void refresh();
    void updateActions();

    QTableView *table() const { return m_table; }
    QLineEdit *filterEdit() const { return m_filterEdit; }
    // The column the table is sorted by (-1: the model's order, newest first), kept in the settings.
    int sortColumn() const;
    Qt::SortOrder sortOrder() const;
    void sortBy(int column, Qt::SortOrder order);
    // The columns as arranged by a header drag or the Columns menu: keys in their shown order, a hidden one as
    // "-key" (RunHistoryModel::columnKey), kept in the settings. Keys this version does not know are skipped.
    QStringList columnLayout() const;
    void setColumnLayout(const QStringList &layout);
    // History > Columns and the header's context menu: show or hide each column (Name stays), or reset them all.
    QMenu *columnsMenu() const { return m_columnsMenu; }
    QLabel *shownLabel() const { return m_shown; }
    QDoubleSpinBox *targetBox() const { return m_target; }
    RunHistoryModel *model() const { return m_model; }
    // The selected runs as RunHistoryModel rows, in the model's order (newest first), whatever the table's sort.
    QList<int> selectedRows() const;
    QVector<RunSummary> selectedRuns() const;
    // Replaces a run's notes (notes.txt) and shows them; false after error() naming the problem.
    bool setRunNotes(const QString &dir, const QString &notes);
    // The selected runs' metrics (with the time split) or devices.csv rows in one CSV; false after error().
    bool exportMetricsCsv(const QString &path);
    bool exportDevicesCsv(const QString &path);

Q_SIGNALS:
    void selectionChanged();
    void useConfigRequested(const trainlab::ExperimentConfig &config);
    // Compare Selected Runs: the selected runs' folders, the newest first.
    void compareRequested(const QStringList &runDirs);
    void error(const QString &title, const QString &text);
    void status(const QString &text, int timeoutMs);

private:
    void onSelection();
    void updateShown();
    void fitColumns();
    void watchFolders();
    void updateColumnsMenu();
    void useSelectedConfig();
    void openSelectedFolder();
    void editSelectedNotes();
    QStringList deletableSelectedDirs() const;
    void deleteSelectedRuns();
    void deleteSelectedCheckpoints();
    void exportDialog(bool devices);
    bool exportTable(const QString &path, const QString &title, std::string (*table)(const std::vector<RunSummary> &));

    AccuracyChart *m_chart;
    RunHistoryModel *m_model;
    RunHistoryFilter *m_filter;
    QTableView *m_table;
    QLineEdit *m_filterEdit;
    QLabel *m_shown;
    RunsStorage *m_storage;
    QDoubleSpinBox *m_target;
    QString m_runsDir;
    QString m_activeRunDir;
    QAction *m_useConfig = nullptr;
    QAction *m_openFolder = nullptr;
    QAction *m_editNotes = nullptr;
    QAction *m_compare = nullptr;
    QAction *m_delete = nullptr;
    QAction *m_deleteCheckpoints = nullptr;
    QAction *m_exportCsv = nullptr;
    QAction *m_exportDevices = nullptr;
    QAction *m_refresh = nullptr;
    QMenu *m_columnsMenu = nullptr;
    // Runs other processes start, train and end show up without Refresh: the runs folder and the folders of their
    // running runs are watched, and a change refreshes the table at most once a second.
    QFileSystemWatcher *m_watcher;
    QTimer *m_refreshSoon;
    QList<QAction *> m_columnActions;   // one per RunHistoryModel column
};

} // namespace trainlab
