#pragma once

#include "core/train/observer.h"

#include <QChartView>
#include <QList>
#include <QPointF>
#include <QTimer>
#include <QVector>

class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace trainlab {

// d2l's Animator made live: test accuracy per epoch, appended as epochs arrive, with earlier runs overlaid.
class AccuracyChart : public QChartView
{
    Q_OBJECT

public:
    struct Overlay
    {
        QString name;
        QVector<QPointF> testAcc;   // (epoch, accuracy)
    };

    explicit AccuracyChart(QWidget *parent = nullptr);
    // The chart with its "Show: train acc, train loss" row, and `below` under both (the run's progress).
    static QWidget *withOptions(AccuracyChart *chart, QWidget *below);

    // Clears the live curves; the x axis spans 1..epochs.
    void beginRun(const QString &name, int epochs);
    // Queued and drawn together by a single-shot timer, so a burst of epochs costs one redraw.
    void addEpoch(const EpochMetrics &metrics);
    // The running train loss within an epoch, at epoch - 1 + batch / batches as d2l's Animator draws it,
    // so a long epoch is not a still picture.
    void addBatch(const BatchProgress &progress);
    int lossPointCount() const;
    // Draws what is queued now (a run has ended: its last epoch must not wait for the timer).
    void flush();
    void setOverlays(const QVector<Overlay> &overlays);
    void setTrainAccVisible(bool visible);
    void setLossVisible(bool visible);
    // The learning rate at each epoch's first step (metrics.csv's learning_rate) on its own axis. Until the user
    // chooses here, it shows itself when a run's rate changes between epochs (a schedule) and hides for the next run.
    void setLearningRateVisible(bool visible);
    bool isLearningRateVisible() const;
    int learningRatePointCount() const;
    // The epoch's mean gradient norm (metrics.csv's grad_norm) on its own axis, hidden until the user asks.
    void setGradNormVisible(bool visible);
    int gradNormPointCount() const;

Q_SIGNALS:
    void learningRateVisibleChanged(bool visible);

public:

    int livePointCount() const;
    int overlayCount() const { return m_overlays.size(); }
    int overlayPointCount(int index) const;
    QPointF bestPoint() const { return m_best; }
    QStringList seriesNames() const;

    // SVG for a path ending .svg, else PNG; written atomically; false with *error set on failure.
    bool save(const QString &path, QString *error);
    // Both written atomically; false with *error set on failure.
    bool savePng(const QString &path, QString *error);
    bool saveSvg(const QString &path, QString *error);

private:
    void updateRanges();
    void showLearningRate(bool visible);
    void attach(QAbstractSeries *series, QValueAxis *y);
    void showTip(const QString &series, const QPointF &point, bool state, char format);

    QValueAxis *m_axisX;
    QValueAxis *m_axisAcc;
    QValueAxis *m_axisLoss;
    QValueAxis *m_axisLr;
    QValueAxis *m_axisNorm;
    QLineSeries *m_testAcc;
    QLineSeries *m_trainAcc;
    QLineSeries *m_loss;
    QLineSeries *m_lr;
    QLineSeries *m_norm;
    QScatterSeries *m_bestMarker;
    QList<QLineSeries *> m_overlays;
    QList<EpochMetrics> m_pending;
    QList<QPointF> m_pendingLoss;   // batch and epoch losses in the order they came: x rises
    QTimer m_flushTimer;
    QPointF m_best;
    int m_epochs = 1;
    double m_maxLoss = 0.0;
    double m_maxLr = 0.0;
    double m_maxNorm = 0.0;
    bool m_learningRateChosen = false;   // the user set the learning rate's visibility: no more automatic showing
};

// An epoch axis from 1 to last with about ten ticks on whole epochs. Qt Charts makes one tick item per
// interval of the range, so the interval is set while fixed ticks are on: never one item per epoch.
void setEpochAxis(QValueAxis *axis, int last, int first = 1);

} // namespace trainlab
