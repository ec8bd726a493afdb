#include "ui/accuracychart.h"

#include "ui/chartexport.h"

#include <QCheckBox>
#include <QCursor>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QPainter>
#include <QScatterSeries>
#include <QSettings>
#include <QSignalBlocker>
#include <QToolTip>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace trainlab {

namespace {

// Distinct colours for the overlaid runs (Tableau 10 without the live curves' blue, purple and green).
const QColor kOverlayColours[] = {QColor(0xff7f0e), QColor(0xd62728), QColor(0x8c564b), QColor(0xe377c2),
                                  QColor(0x7f7f7f), QColor(0xbcbd22), QColor(0x17becf), QColor(Qt::black)};

QLineSeries *lineSeries(const QString &name, const QColor &colour, Qt::PenStyle style = Qt::SolidLine)
{
    auto *series = new QLineSeries;
    series->setName(name);
    QPen pen(colour);
    pen.setWidthF(2.0);
    pen.setStyle(style);
    series->setPen(pen);
    series->setPointsVisible(true);
    return series;
}

// The side legend's width in pixels: the plot keeps most of the chart; a longer name is cut, whole on hover.
constexpr qreal kSideLegendWidth = 200;

} // namespace

AccuracyChart::AccuracyChart(QWidget *parent)
    : QChartView(new QChart, parent)
    , m_axisX(new QValueAxis)
    , m_axisAcc(new QValueAxis)
    , m_axisLoss(new QValueAxis)
    , m_axisLr(new QValueAxis)
    , m_axisNorm(new QValueAxis)
    , m_testAcc(lineSeries(tr("test acc"), QColor(0x1f77b4)))
    , m_trainAcc(lineSeries(tr("train acc"), QColor(0x9467bd), Qt::DashLine))
    , m_loss(lineSeries(tr("train loss"), QColor(0x2ca02c), Qt::DotLine))
    , m_lr(lineSeries(tr("learning rate"), QColor(0xd62728), Qt::DashDotLine))
    , m_norm(lineSeries(tr("grad norm"), QColor(0xff7f0e), Qt::DashDotDotLine))
    , m_bestMarker(new QScatterSeries)
{
    setObjectName(QStringLiteral("accuracyChart"));
    setRenderHint(QPainter::Antialiasing);
    QChart *c = chart();
    c->legend()->setAlignment(Qt::AlignBottom);
    c->legend()->setShowToolTips(true);   // a name still cut short shows whole on hover
    c->setMargins(QMargins(4, 4, 4, 4));
    m_axisX->setTitleText(tr("epoch"));
    m_axisX->setLabelFormat(QStringLiteral("%d"));
    m_axisAcc->setTitleText(tr("test acc"));
    m_axisAcc->setRange(0.0, 1.0);
    m_axisAcc->setTickCount(6);
    m_axisLoss->setTitleText(tr("train loss"));
    m_axisLoss->setLabelFormat(QStringLiteral("%.2f"));
    m_axisLoss->setRange(0.0, 1.0);
    c->addAxis(m_axisX, Qt::AlignBottom);
    c->addAxis(m_axisAcc, Qt::AlignLeft);
    c->addAxis(m_axisLoss, Qt::AlignRight);
    m_axisLr->setTitleText(tr("learning rate"));
    m_axisLr->setLabelFormat(QStringLiteral("%.3g"));
    m_axisLr->setRange(0.0, 1.0);
    c->addAxis(m_axisLr, Qt::AlignRight);
    m_axisNorm->setTitleText(tr("grad norm"));
    m_axisNorm->setLabelFormat(QStringLiteral("%.3g"));
    m_axisNorm->setRange(0.0, 1.0);
    c->addAxis(m_axisNorm, Qt::AlignRight);
    m_bestMarker->setName(tr("best"));
    m_bestMarker->setMarkerSize(14.0);
    m_bestMarker->setColor(QColor(0xffd700));
    m_bestMarker->setBorderColor(QColor(0x1f77b4));
    attach(m_testAcc, m_axisAcc);
    attach(m_trainAcc, m_axisAcc);
    attach(m_loss, m_axisLoss);
    attach(m_lr, m_axisLr);
    m_lr->setVisible(false);
    m_axisLr->setVisible(false);
    attach(m_norm, m_axisNorm);
    m_norm->setVisible(false);
    m_axisNorm->setVisible(false);
    attach(m_bestMarker, m_axisAcc);
    m_flushTimer.setSingleShot(true);
    m_flushTimer.setInterval(40);
    connect(&m_flushTimer, &QTimer::timeout, this, &AccuracyChart::flush);
    updateRanges();
}

void AccuracyChart::attach(QAbstractSeries *series, QValueAxis *y)
{
    chart()->addSeries(series);
    series->attachAxis(m_axisX);
    series->attachAxis(y);
    if (auto *xy = qobject_cast<QXYSeries *>(series)) {
        connect(xy, &QXYSeries::hovered, this, [this, xy](const QPointF &point, bool state) {
            showTip(xy->name(), point, state, xy == m_lr || xy == m_norm ? 'g' : 'f');
        });
    }
}

void AccuracyChart::showTip(const QString &series, const QPointF &point, bool state, char format)
{
    if (state)
        QToolTip::showText(QCursor::pos(), tr("%1\nepoch %2: %3").arg(series).arg(std::lround(point.x()))
                                                .arg(point.y(), 0, format, 4), this);
    else
        QToolTip::hideText();
}

void AccuracyChart::beginRun(const QString &name, int epochs)
{
    m_flushTimer.stop();
    m_pending.clear();
    m_pendingLoss.clear();
    m_testAcc->clear();
    m_trainAcc->clear();
    m_loss->clear();
    m_lr->clear();
    m_norm->clear();
    m_bestMarker->clear();
    m_best = QPointF();
    m_maxLoss = 0.0;
    m_maxLr = 0.0;
    m_maxNorm = 0.0;
    if (!m_learningRateChosen)
        showLearningRate(false);
    m_epochs = std::max(1, epochs);
    m_testAcc->setName(name.isEmpty() ? tr("test acc") : tr("%1 test acc").arg(name));
    updateRanges();
}

void AccuracyChart::addEpoch(const EpochMetrics &metrics)
{
    m_pending.append(metrics);
    m_pendingLoss.append(QPointF(metrics.epoch, metrics.trainLoss));
    if (!m_flushTimer.isActive())
        m_flushTimer.start();
}

void AccuracyChart::addBatch(const BatchProgress &p)
{
    if (p.batches <= 0 || !std::isfinite(p.loss))
        return;
    m_pendingLoss.append(QPointF(p.epoch - 1 + static_cast<double>(p.batch) / static_cast<double>(p.batches), p.loss));
    if (!m_flushTimer.isActive())
        m_flushTimer.start();
}

int AccuracyChart::lossPointCount() const
{
    return m_loss->count();
}

void AccuracyChart::flush()
{
    m_flushTimer.stop();
    if (m_pending.isEmpty() && m_pendingLoss.isEmpty())
        return;
    for (const QPointF &point : std::as_const(m_pendingLoss)) {
        m_loss->append(point);
        if (std::isfinite(point.y()))
            m_maxLoss = std::max(m_maxLoss, point.y());
    }
    m_pendingLoss.clear();
    for (const EpochMetrics &m : std::as_const(m_pending)) {
        m_testAcc->append(m.epoch, m.testAcc);
        m_trainAcc->append(m.epoch, m.trainAcc);
        // Zero: not known (a run recorded before metrics.csv kept it).
        if (m.learningRate > 0) {
            m_lr->append(m.epoch, m.learningRate);
            m_maxLr = std::max(m_maxLr, m.learningRate);
        }
        if (m.gradNorm > 0) {
            m_norm->append(m.epoch, m.gradNorm);
            m_maxNorm = std::max(m_maxNorm, m.gradNorm);
        }
        if (m_best.isNull() || m.testAcc > m_best.y())
            m_best = QPointF(m.epoch, m.testAcc);
        m_epochs = std::max(m_epochs, m.epoch);
    }
    m_pending.clear();
    if (!m_learningRateChosen && m_lr->count() > 1 && m_lr->at(0).y() != m_lr->at(m_lr->count() - 1).y())
        showLearningRate(true);
    if (!m_best.isNull())
        m_bestMarker->replace(QList<QPointF>{m_best});
    updateRanges();
}

void AccuracyChart::updateRanges()
{
    int epochs = m_epochs;
    for (const QLineSeries *s : std::as_const(m_overlays)) {
        if (s->count() > 0)
            epochs = std::max(epochs, static_cast<int>(s->at(s->count() - 1).x()));
    }
    // From 0 while the live run draws its first epoch's losses; from 1 for runs shown by their epochs alone.
    setEpochAxis(m_axisX, std::max(2, epochs), m_loss->count() > 0 && m_loss->at(0).x() < 1.0 ? 0 : 1);
    m_axisLoss->setRange(0.0, m_maxLoss > 0 ? std::ceil(m_maxLoss * 1.1 * 10.0) / 10.0 : 1.0);
    m_axisLr->setRange(0.0, m_maxLr > 0 ? m_maxLr * 1.1 : 1.0);
    m_axisNorm->setRange(0.0, m_maxNorm > 0 ? m_maxNorm * 1.1 : 1.0);
    m_axisNorm->applyNiceNumbers();   // ticks at 2, 4, 6 rather than 1.6, 3.19, 4.79
}

void AccuracyChart::setOverlays(const QVector<Overlay> &overlays)
{
    for (QLineSeries *s : std::as_const(m_overlays)) {
        chart()->removeSeries(s);
        delete s;
    }
    m_overlays.clear();
    for (int i = 0; i < overlays.size(); ++i) {
        const QColor colour = kOverlayColours[static_cast<std::size_t>(i) % std::size(kOverlayColours)];
        QLineSeries *s = lineSeries(overlays[i].name, colour);
        s->append(QList<QPointF>(overlays[i].testAcc.cbegin(), overlays[i].testAcc.cend()));
        attach(s, m_axisAcc);
        m_overlays.append(s);
    }
    // One row under the chart cuts the overlays' names to "war…"; a column at the side keeps them readable.
    chart()->legend()->setAlignment(m_overlays.isEmpty() ? Qt::AlignBottom : Qt::AlignRight);
    chart()->legend()->setMaximumWidth(m_overlays.isEmpty() ? -1 : kSideLegendWidth);   // -1: no limit
    updateRanges();
}

void AccuracyChart::setTrainAccVisible(bool visible)
{
    m_trainAcc->setVisible(visible);
}

void AccuracyChart::setLossVisible(bool visible)
{
    m_loss->setVisible(visible);
    m_axisLoss->setVisible(visible);
}

void AccuracyChart::setLearningRateVisible(bool visible)
{
    m_learningRateChosen = true;
    showLearningRate(visible);
}

void AccuracyChart::showLearningRate(bool visible)
{
    if (m_lr->isVisible() == visible)
        return;
    m_lr->setVisible(visible);
    m_axisLr->setVisible(visible);
    Q_EMIT learningRateVisibleChanged(visible);
}

bool AccuracyChart::isLearningRateVisible() const
{
    return m_lr->isVisible();
}

int AccuracyChart::learningRatePointCount() const
{
    return m_lr->count();
}

void AccuracyChart::setGradNormVisible(bool visible)
{
    m_norm->setVisible(visible);
    m_axisNorm->setVisible(visible);
}

int AccuracyChart::gradNormPointCount() const
{
    return m_norm->count();
}

int AccuracyChart::overlayPointCount(int index) const
{
    return index >= 0 && index < m_overlays.size() ? m_overlays[index]->count() : 0;
}

int AccuracyChart::livePointCount() const
{
    return m_testAcc->count();
}

QStringList AccuracyChart::seriesNames() const
{
    QStringList names;
    for (const QAbstractSeries *s : chart()->series()) {
        if (s->isVisible())
            names << s->name();
    }
    return names;
}

bool AccuracyChart::savePng(const QString &path, QString *error)
{
    return saveChartPng(this, path, error);
}

bool AccuracyChart::saveSvg(const QString &path, QString *error)
{
    return saveChartSvg(this, path, tr("TrainLab accuracy chart"), error);
}

void setEpochAxis(QValueAxis *axis, int last, int first)
{
    axis->setTickType(QValueAxis::TicksFixed);
    axis->setTickAnchor(first);
    axis->setTickInterval(std::max(1.0, std::ceil((std::max(first + 1, last) - first) / 10.0)));
    axis->setRange(first, std::max(first + 1, last));
    axis->setTickType(QValueAxis::TicksDynamic);
}

QWidget *AccuracyChart::withOptions(AccuracyChart *chart, QWidget *below)
{
    // A curve the user hid or asked for stays so in the next session.
    const auto remembered = [chart](const QString &text, const char *name, bool byDefault,
                                    void (AccuracyChart::*show)(bool)) {
        auto *box = new QCheckBox(text);
        box->setObjectName(QLatin1String(name));
        const QString key = QStringLiteral("chart/") + QLatin1String(name);
        const bool on = QSettings().value(key, byDefault).toBool();
        box->setChecked(on);
        (chart->*show)(on);
        connect(box, &QCheckBox::toggled, chart, show);
        connect(box, &QCheckBox::toggled, box, [key](bool checked) { QSettings().setValue(key, checked); });
        return box;
    };
    QCheckBox *showTrainAcc = remembered(tr("train acc"), "showTrainAcc", true, &AccuracyChart::setTrainAccVisible);
    QCheckBox *showLoss = remembered(tr("train loss"), "showLoss", true, &AccuracyChart::setLossVisible);
    QCheckBox *showNorm = remembered(tr("grad norm"), "showGradNorm", false, &AccuracyChart::setGradNormVisible);
    showNorm->setToolTip(tr("The mean gradient norm of each epoch's steps, before any clipping"));
    auto *showLr = new QCheckBox(tr("learning rate"));
    showLr->setObjectName(QStringLiteral("showLearningRate"));
    connect(showLr, &QCheckBox::toggled, chart, &AccuracyChart::setLearningRateVisible);
    connect(chart, &AccuracyChart::learningRateVisibleChanged, showLr, [showLr](bool visible) {
        const QSignalBlocker block(showLr);
        showLr->setChecked(visible);
    });
    auto *options = new QHBoxLayout;
    options->addWidget(new QLabel(tr("Show:")));
    options->addWidget(showTrainAcc);
    options->addWidget(showLoss);
    options->addWidget(showLr);
    options->addWidget(showNorm);
    options->addStretch(1);
    auto *area = new QWidget;
    auto *layout = new QVBoxLayout(area);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(chart, 1);
    layout->addLayout(options);
    layout->addWidget(below);
    return area;
}

bool AccuracyChart::save(const QString &path, QString *error)
{
    return saveChart(this, path, tr("TrainLab accuracy chart"), error);
}

} // namespace trainlab
