#pragma once

#include "core/sweeps/queue.h"
#include "core/sweeps/sweepreport.h"

#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QPushButton;
class QTabWidget;
class QTableWidget;

namespace trainlab {

// One sweep's runs (or any runs chosen in the history) side by side: a metric per epoch, accuracy against
// learning rate, scaling, and the table.
class CompareView : public QWidget
{
    Q_OBJECT

public:
    enum Tab { EpochsTab, LearningRateTab, ScalingTab, TableTab, ParallelTab };

    explicit CompareView(QWidget *parent = nullptr);

    // Reads the sweep's runs from runsDir; false with *error when none is found.
    bool loadSweep(const QString &runsDir, const QString &sweepId, QString *error = nullptr);
    // The Compare window on a sweep of runsDir: made on first use as a window of parent's, then reused.
    static bool showSweep(QWidget *parent, CompareView *&view, const QString &runsDir, const QString &sweepId,
                          QString *error);
    // Any runs side by side, their columns the sweep settings that differ between them; false with *error when
    // a run cannot be read.
    bool loadRuns(const QStringList &runDirs, QString *error = nullptr);
    static bool showRuns(QWidget *parent, CompareView *&view, const QStringList &runDirs, QString *error);
    // Asks which sweep of runsDir to compare; "" when the user cancels or there is none (error set).
    static QString chooseSweep(QWidget *parent, const QString &runsDir, QString *error);
    void setEntries(const QString &sweepId, const std::vector<QueueEntry> &entries);
    QString sweepId() const { return m_sweepId; }
    QStringList axes() const;
    // Runs with the same value of this axis share a colour on the epochs chart; an unknown axis is ignored.
    void setColourAxis(const QString &axis);
    QString colourAxis() const { return m_colourAxis; }
    // What the per-epoch chart draws: "test acc" (the default), "train acc", "train loss", "grad norm",
    // "learning rate" or "img/s"; an unknown name is ignored. The choice is kept for the next session.
    static QStringList epochMetrics();
    void setEpochMetric(const QString &metric);
    QString epochMetric() const;
    void setCurrentTab(Tab tab);

    int epochSeriesCount() const;
    QStringList learningRateSeriesNames() const;
    int scalingPointCount() const { return m_scalingPoints; }
    // Stacked bars of where the time went, one per device count that measured it.
    int scalingTimeBarCount() const { return m_scalingTimeBars; }
    bool hasScaling() const { return m_table.hasScaling; }
    QTableWidget *table() const { return m_tableWidget; }

    // Each written atomically; false with *error set on failure.
    bool saveCurrentChartPng(const QString &path, QString *error);
    bool saveCurrentChartSvg(const QString &path, QString *error);
    bool saveTableCsv(const QString &path, QString *error);
    // One line per run and epoch: index,<axes...>,epoch,train_loss,train_acc,test_acc,seconds,images_per_second,
    // learning_rate,grad_norm (the last two empty where unknown)
    bool saveEpochsCsv(const QString &path, QString *error);
    // The configuration of the run in the table's current row, to train it further in the form; false when none.
    bool useCurrentRunConfig();

Q_SIGNALS:
    // A double click on a run's row (or its context menu): the window loads this into its form.
    void useConfigRequested(const trainlab::ExperimentConfig &config);

private:
    QChartView *currentChartView(QString *error) const;
    void rebuildEpochs();
    void rebuildParallel();
    void rebuildLearningRate();
    void rebuildScaling();
    QStringList rebuildScalingTime();   // the time chart; returns a line of shares per device count
    void rebuildTable();
    void updateButtons();
    void exportChart(bool svg);
    void exportCsv();

    QString m_sweepId;
    QString m_colourAxis;
    int m_epochMetric = 0;
    std::vector<QueueEntry> m_entries;
    SweepTable m_table;
    int m_scalingPoints = 0;
    int m_scalingTimeBars = 0;

    QLabel *m_title;
    QComboBox *m_colourBox;
    QComboBox *m_metricBox;
    QPushButton *m_pngButton;
    QPushButton *m_svgButton;
    QPushButton *m_csvButton;
    QTabWidget *m_tabs;
    QChartView *m_epochsView;
    QChartView *m_learningRateView;
    QChartView *m_parallelView;
    QChartView *m_scalingView;
    QChartView *m_scalingTimeView;
    QLabel *m_scalingSummary;
    QLabel *m_noScaling;
    QTableWidget *m_tableWidget;
    QLabel *m_findings;
};

} // namespace trainlab
