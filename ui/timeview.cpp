#include "ui/timeview.h"

#include "core/monitor/devicesampler.h"
#include "core/runs/runrecord.h"
#include "ui/chartexport.h"
#include "ui/experimentfile.h"

#include <QBarCategoryAxis>
#include <QAction>
#include <QBarSet>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QChart>
#include <QLegend>
#include <QLegendMarker>
#include <QStackedBarSeries>
#include <QValueAxis>

#include <algorithm>

namespace trainlab {

namespace {

// Enough bars to read; older epochs scroll out.
constexpr int kMaxBars = 40;

} // namespace

TimeView::TimeView(QWidget *parent)
    : QChartView(parent)
    , m_series(new QStackedBarSeries)
    , m_axisX(new QBarCategoryAxis)
    , m_axisY(new QValueAxis)
{
    setObjectName(QStringLiteral("timeView"));
    setRenderHint(QPainter::Antialiasing);
    auto *chart = new QChart;
    // Compact, as it lives in a tab under the main chart: the legend at the side, the devices' line as title.
    chart->setMargins(QMargins(2, 2, 2, 2));
    setToolTip(tr("Where each epoch's training time went, per rank (seconds: the host's clock on the CPU, CUDA events on a GPU); "
                  "first the warm-up before epoch 1, where one ran (speed.warmup: in no epoch's time)"));
    const QStringList names = {tr("data"), tr("compute"), tr("all-reduce"), tr("optimizer"), tr("other"), tr("warm-up")};
    const QList<QColor> colors = {QColor(0x9e9e9e), QColor(0x1f77b4), QColor(0xd62728), QColor(0x2ca02c), QColor(0xbcbd22),
                                  QColor(0x9467bd)};
    for (int i = 0; i < names.size(); ++i) {
        auto *set = new QBarSet(names[i]);
        set->setColor(colors[i]);
        m_sets << set;
        m_series->append(set);
    }
    chart->addSeries(m_series);
    m_axisY->setLabelFormat(QStringLiteral("%.1f"));
    chart->addAxis(m_axisX, Qt::AlignBottom);
    chart->addAxis(m_axisY, Qt::AlignLeft);
    m_series->attachAxis(m_axisX);
    m_series->attachAxis(m_axisY);
    chart->legend()->setAlignment(Qt::AlignRight);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    chart->setTitleFont(small);
    setChart(chart);
    auto *saveImage = new QAction(tr("Save Image…"), this);
    connect(saveImage, &QAction::triggered, this, &TimeView::saveDialog);
    addAction(saveImage);
    setContextMenuPolicy(Qt::ActionsContextMenu);
    rebuild();
}

void TimeView::showRun(const QString &runDir)
{
    clear();
    std::vector<EpochMetrics> epochs;
    try {
        epochs = readMetrics(runDir.toStdString());
    } catch (const std::exception &) {
        return;   // History lists the run with its problem; the view stays empty
    }
    readTiming(runDir.toStdString(), epochs);
    try {
        appendWarmup(readRunSummary(runDir.toStdString()).warmupSeconds, 1);   // summed over the sessions
    } catch (const std::exception &) {
        // an unreadable summary: the epochs' bars still show
    }
    for (EpochMetrics &m : epochs) {
        m.devices.clear();
        append(m);
    }
    rebuild();
    QStringList parts;
    for (const DeviceEpochStats &d : summarizeDevices(readDeviceEpochs(runDir.toStdString())))
        parts << QString::fromStdString(formatEpochStats(d));
    if (!parts.isEmpty())
        chart()->setTitle(tr("%1, whole run: %2").arg(QFileInfo(runDir).fileName(), parts.join(QStringLiteral(" · "))));
}

void TimeView::followSelection(const QString &runDir, bool runTraining)
{
    if (runDir == m_selectedDir)
        return;
    m_selectedDir = runDir;
    if (!runDir.isEmpty() && !runTraining)
        showRun(runDir);
}

bool TimeView::save(const QString &path, QString *error)
{
    return saveChart(this, path, tr("TrainLab time split"), error);
}

void TimeView::saveDialog()
{
    const QString path = ExperimentFile::askSavePath(window(), tr("Save Time Split"), QDir::homePath() + QStringLiteral("/time.png"),
                                                     tr("PNG image (*.png);;SVG drawing (*.svg)"));
    QString error;
    if (!path.isEmpty() && !save(path, &error))
        QMessageBox::warning(window(), tr("Save Time Split"), error);
}

void TimeView::clear()
{
    m_bars.clear();
    chart()->setTitle(QString());
    rebuild();
}

QString TimeView::devicesText() const
{
    return chart()->title();
}

void TimeView::addEpoch(const EpochMetrics &metrics)
{
    append(metrics);
    rebuild();
}

void TimeView::append(const EpochMetrics &metrics)
{
    if (!metrics.devices.empty()) {
        QStringList parts;
        for (const DeviceEpochStats &d : metrics.devices)
            parts << QString::fromStdString(formatEpochStats(d));
        chart()->setTitle(tr("Epoch %1 on this machine's devices: %2").arg(metrics.epoch).arg(parts.join(QStringLiteral(" · "))));
    }
    appendWarmup(metrics.warmupSeconds, metrics.epoch);
    for (const TimeSplit &t : metrics.time)
        m_bars.append({t, 0.0, metrics.time.size() > 1 ? tr("e%1 r%2").arg(metrics.epoch).arg(t.rank) : tr("e%1").arg(metrics.epoch)});
    while (m_bars.size() > kMaxBars)
        m_bars.removeFirst();
}

void TimeView::appendWarmup(double seconds, int epoch)
{
    if (seconds <= 0)
        return;
    // A resumed run warms up again before its first epoch.
    m_bars.append({TimeSplit{}, seconds, epoch > 1 ? tr("warm-up e%1").arg(epoch) : tr("warm-up")});
}

int TimeView::barCount() const
{
    return m_bars.size();
}

double TimeView::part(int set, int bar) const
{
    return m_sets.value(set) ? m_sets[set]->at(bar) : 0.0;
}

void TimeView::rebuild()
{
    double top = 0;
    for (QBarSet *set : std::as_const(m_sets))
        set->remove(0, set->count());
    bool warmed = false;
    QStringList labels;
    for (const Bar &bar : std::as_const(m_bars)) {
        const TimeSplit &t = bar.split;
        m_sets[0]->append(t.data);
        m_sets[1]->append(t.compute);
        m_sets[2]->append(t.allreduce);
        m_sets[3]->append(t.optimizer);
        m_sets[4]->append(t.other);
        m_sets[5]->append(bar.warmup);
        top = std::max(top, t.total() + bar.warmup);
        warmed = warmed || bar.warmup > 0;
        labels << bar.label;
    }
    // The warm-up's legend entry only where a bar has one: on the CPU it is off by default.
    if (const QList<QLegendMarker *> markers = chart()->legend()->markers(m_series); markers.size() == m_sets.size())
        markers.back()->setVisible(warmed);
    m_axisX->clear();
    m_axisX->append(labels.isEmpty() ? QStringList{tr("no split yet")} : labels);
    m_axisY->setRange(0.0, top > 0 ? top * 1.1 : 1.0);
}

} // namespace trainlab
