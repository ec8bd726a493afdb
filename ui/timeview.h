#pragma once

#include "core/train/observer.h"

#include <QChartView>
#include <QVector>

class QBarCategoryAxis;
class QBarSet;
class QStackedBarSeries;
class QValueAxis;

namespace trainlab {

// "Time": where each epoch's training time went, one stacked bar per epoch and rank (data, compute, all-reduce,
// optimizer, other), after a bar of its own for the warm-up before epoch 1 where one ran, for the run in progress
// or the last one. The chapter's lesson on communication: what a
// second device's all-reduce costs shows as the all-reduce part of every bar.
class TimeView : public QChartView
{
    Q_OBJECT

public:
    explicit TimeView(QWidget *parent = nullptr);

    void clear();
    void addEpoch(const EpochMetrics &metrics);
    // A run's record from its folder (timing.csv, devices.csv), for a run in the history; its devices over the
    // whole run above the bars.
    void showRun(const QString &runDir);
    // PNG, or SVG when the path ends in .svg; false with *error.
    bool save(const QString &path, QString *error);
    // The history's first selected run: shown when the user picks another one and no run trains, so a run that
    // just ended stays on view until then.
    void followSelection(const QString &runDir, bool runTraining);
    int barCount() const;
    // The last epoch's device figures (devices.csv's), shown above the bars; empty before one came.
    QString devicesText() const;
    // The seconds of one part (0 data, 1 compute, 2 all-reduce, 3 optimizer, 4 other, 5 warm-up) in bar i.
    double part(int set, int bar) const;

private:
    void append(const EpochMetrics &metrics);   // without a redraw, so a whole run draws once
    void appendWarmup(double seconds, int epoch);
    void rebuild();
    void saveDialog();

    QString m_selectedDir;
    struct Bar
    {
        TimeSplit split;       // an epoch's rank; empty in a warm-up bar
        double warmup = 0.0;   // a warm-up bar's seconds
        QString label;         // unique: the category axis drops repeated names
    };
    QVector<Bar> m_bars;
    QStackedBarSeries *m_series;
    QBarCategoryAxis *m_axisX;
    QValueAxis *m_axisY;
    QList<QBarSet *> m_sets;
};

} // namespace trainlab
