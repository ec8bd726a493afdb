#include "ui/schedulepreview.h"

#include "core/train/schedule.h"

#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>

namespace trainlab {

SchedulePreview::SchedulePreview(QWidget *parent)
    : QChartView(new QChart, parent)
    , m_line(new QLineSeries)
    , m_x(new QValueAxis)
    , m_y(new QValueAxis)
{
    setObjectName(QStringLiteral("schedulePreview"));
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(130);
    setMaximumHeight(170);
    QChart *c = chart();
    c->legend()->hide();
    c->setMargins(QMargins(0, 0, 0, 0));
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    c->setTitleFont(small);
    m_x->setLabelsFont(small);
    m_y->setLabelsFont(small);
    m_x->setLabelFormat(QStringLiteral("%g"));
    m_y->setLabelFormat(QStringLiteral("%.3g"));
    m_x->setTickCount(3);
    m_y->setTickCount(3);
    m_line->setColor(QColor(0x2ca02c));
    c->addSeries(m_line);
    c->addAxis(m_x, Qt::AlignBottom);
    c->addAxis(m_y, Qt::AlignLeft);
    m_line->attachAxis(m_x);
    m_line->attachAxis(m_y);
    setToolTip(tr("The learning rate at each step of the run (x: epochs), as the schedule above gives it"));
}

void SchedulePreview::setConfig(const ExperimentConfig &config)
{
    const int epochs = std::max(1, config.epochs);
    // Enough points for the shape of any schedule; the run's own step count only changes the sampling.
    const std::int64_t perEpoch = std::max<std::int64_t>(4, 400 / epochs);
    QList<QPointF> points;
    double peak = 0.0, peakAt = 0.0;
    for (std::int64_t step = 0; step <= epochs * perEpoch; ++step) {
        const double lr = learningRateAt(config, std::min(step, epochs * perEpoch - 1), perEpoch);
        const double x = static_cast<double>(step) / static_cast<double>(perEpoch);
        points << QPointF(x, lr);
        if (lr > peak) {
            peak = lr;
            peakAt = x;
        }
    }
    m_line->replace(points);
    m_x->setRange(0.0, epochs);
    m_y->setRange(0.0, peak > 0 ? peak * 1.1 : 1.0);
    chart()->setTitle(tr("Learning rate (%1): peak %2 at epoch %3, last %4")
                          .arg(QString::fromStdString(config.schedule.kind), QString::number(peak, 'g', 3),
                               QString::number(peakAt, 'g', 3), QString::number(points.last().y(), 'g', 3)));
}

QList<QPointF> SchedulePreview::points() const
{
    return m_line->points();
}

} // namespace trainlab
