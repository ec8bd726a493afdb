#pragma once

#include "core/config.h"

#include <QChartView>
#include <QList>
#include <QPointF>

class QLineSeries;
class QValueAxis;

namespace trainlab {

// The learning rate over the run as the form's schedule gives it (core's learningRateAt, the function the
// engine follows), redrawn as the form changes: warm-up, steps, one-cycle's rise and fall before a run starts.
class SchedulePreview : public QChartView
{
    Q_OBJECT

public:
    explicit SchedulePreview(QWidget *parent = nullptr);

    void setConfig(const ExperimentConfig &config);
    // (epoch, learning rate): x from 0 to the run's epochs, a point every 1/stepsPerEpoch of an epoch.
    QList<QPointF> points() const;
    QString caption() const { return chart()->title(); }

private:
    QLineSeries *m_line;
    QValueAxis *m_x;
    QValueAxis *m_y;
};

} // namespace trainlab
