#pragma once

#include "core/config.h"
#include "core/runs/report.h"
#include "core/runs/runrecord.h"

#include <QAbstractTableModel>
#include <QString>
#include <QVector>

#include <filesystem>
#include <optional>
#include <utility>

namespace trainlab {

// The runs in a runs folder, newest first, as the history table shows them.
class RunHistoryModel : public QAbstractTableModel
{
    Q_OBJECT

public:
    enum Column { Name, Date, Devices, Batch, LearningRate, Recipe, Epochs, BestAcc, FinalAcc, SecPerEpoch, ToTarget, Status, Notes, ColumnCount };
    static constexpr int DirRole = Qt::UserRole;
    // What a column sorts by: numbers as numbers (10.2 s after 9.5 s), the UTC start time for the date, none when empty.
    static constexpr int SortRole = Qt::UserRole + 1;
    // The run's notes in full (the Notes column shows their first line).
    static constexpr int NotesRole = Qt::UserRole + 2;
    static constexpr int kNotesShown = 80;
    // A column's name in the settings ("best_acc"), and back (-1 for a name this version does not know).
    static QString columnKey(int column);
    static int columnOfKey(const QString &key);

    explicit RunHistoryModel(QObject *parent = nullptr);

    void setRunsDir(const QString &dir);
    QString runsDir() const { return m_runsDir; }
    // The run this window is training, shown as running; any other "running" summary is a run that died.
    void setActiveRunDir(const QString &dir);
    void refresh();
    // The test accuracy of the "to 0.90" column: training seconds until the first epoch at or above it.
    void setTarget(double target);
    double target() const { return m_target; }

    const RunSummary &summary(int row) const { return m_rows[row].summary; }
    // The run's config.json; false when it is missing or unreadable.
    bool config(int row, ExperimentConfig *out) const;
    int rowOfDir(const QString &dir) const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row
    {
        RunSummary summary;
        bool hasConfig = false;
        ExperimentConfig config;
        std::vector<EpochMetrics> epochs;   // metrics.csv, for the time to the target
        std::optional<TargetReached> reached;   // of epochs at m_target: kept, as sorting asks for it per comparison
        // config.json's and metrics.csv's modification time and size when read: a refresh reads them again
        // only when they changed, so a large runs folder refreshes at the cost of its summaries.
        std::pair<std::filesystem::file_time_type, std::uintmax_t> configStamp, metricsStamp;
    };
    QString statusText(const Row &row) const;
    QVariant sortValue(const QModelIndex &index) const;

    QString m_runsDir;
    QString m_activeRunDir;
    QVector<Row> m_rows;
    double m_target = kDefaultTargetAccuracy;
};

} // namespace trainlab
