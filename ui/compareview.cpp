#include "ui/compareview.h"

#include "core/runs/runstorage.h"

#include "ui/accuracychart.h"
#include "ui/chartexport.h"
#include "ui/runhistorymodel.h"

#include <QAction>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChart>
#include <QInputDialog>
#include <QChartView>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMessageBox>
#include <QPainter>
#include <QPushButton>
#include <QScatterSeries>
#include <QSettings>
#include <QSignalBlocker>
#include <QStackedBarSeries>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace trainlab {

namespace {

const QColor kPalette[] = {QColor(0x1f77b4), QColor(0xff7f0e), QColor(0x2ca02c), QColor(0xd62728),
                           QColor(0x9467bd), QColor(0x8c564b), QColor(0xe377c2), QColor(0x7f7f7f),
                           QColor(0xbcbd22), QColor(0x17becf)};

QColor paletteColour(int i)
{
    const auto n = static_cast<int>(std::size(kPalette));
    if (i < n)
        return kPalette[i];
    // Past the palette: golden-ratio hues stay apart from each other.
    return QColor::fromHsvF(std::fmod(0.1 + 0.618034 * i, 1.0), 0.75, 0.8);
}

// t from 0 to 1 on viridis' ends and middle: dark for the lowest, bright for the highest.
QColor rampColour(double t)
{
    const QColor stops[] = {QColor(0x440154), QColor(0x21918c), QColor(0xfde725)};
    const double at = std::clamp(t, 0.0, 1.0) * 2.0;
    const int i = std::min(1, static_cast<int>(at));
    const double f = at - i;
    const QColor &a = stops[i], &b = stops[i + 1];
    return QColor::fromRgbF(a.redF() + f * (b.redF() - a.redF()), a.greenF() + f * (b.greenF() - a.greenF()),
                            a.blueF() + f * (b.blueF() - a.blueF()));
}

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

void clearChart(QChart *chart)
{
    chart->removeAllSeries();
    for (QAbstractAxis *axis : chart->axes()) {
        chart->removeAxis(axis);
        delete axis;
    }
}

QChartView *chartView(const QString &objectName)
{
    auto *view = new QChartView(new QChart);
    view->setObjectName(objectName);
    view->setRenderHint(QPainter::Antialiasing);
    view->chart()->legend()->setAlignment(Qt::AlignBottom);
    view->chart()->setMargins(QMargins(4, 4, 4, 4));
    return view;
}

void attach(QChart *chart, QAbstractSeries *series, QAbstractAxis *x, QAbstractAxis *y)
{
    chart->addSeries(series);
    series->attachAxis(x);
    series->attachAxis(y);
}

QString tagValue(const SweepTag &tag, const std::string &axis)
{
    for (const auto &[a, v] : tag.values) {
        if (a == axis)
            return QString::fromStdString(v);
    }
    return {};
}

double bestAccuracy(const QueueEntry &e)
{
    double best = e.bestTestAcc;
    for (const EpochMetrics &m : e.metrics)
        best = std::max(best, m.testAcc);
    return best;
}

bool hasResult(const QueueEntry &e)
{
    return !e.metrics.empty() || e.bestTestAcc > 0.0;
}

QString csvField(const QString &text)
{
    if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) && !text.contains(QLatin1Char('\n')))
        return text;
    QString quoted = text;
    quoted.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

QString fixed(double value, int decimals)
{
    return QString::number(value, 'f', decimals);
}

// The per-epoch chart's choices; where zero means "not recorded" (an older run), such epochs draw no point.
struct EpochColumn
{
    const char *name;
    double EpochMetrics::*field;
    bool fraction;       // 0 to 1: the axis fixed there
    bool zeroUnknown;
};

const EpochColumn kEpochColumns[] = {
    {QT_TRANSLATE_NOOP("CompareView", "test acc"), &EpochMetrics::testAcc, true, false},
    {QT_TRANSLATE_NOOP("CompareView", "train acc"), &EpochMetrics::trainAcc, true, false},
    {QT_TRANSLATE_NOOP("CompareView", "train loss"), &EpochMetrics::trainLoss, false, false},
    {QT_TRANSLATE_NOOP("CompareView", "grad norm"), &EpochMetrics::gradNorm, false, true},
    {QT_TRANSLATE_NOOP("CompareView", "learning rate"), &EpochMetrics::learningRate, false, true},
    {QT_TRANSLATE_NOOP("CompareView", "img/s"), &EpochMetrics::imagesPerSecond, false, false},
};


// The column with this untranslated name (as kept in the settings), or -1.
int columnIndex(const QString &name)
{
    for (int i = 0; i < static_cast<int>(std::size(kEpochColumns)); ++i) {
        if (name == QLatin1String(kEpochColumns[i].name))
            return i;
    }
    return -1;
}

QString devicesText(int n)
{
    return n == 1 ? QStringLiteral("1 device") : QStringLiteral("%1 devices").arg(n);
}

} // namespace

CompareView::CompareView(QWidget *parent)
    : QWidget(parent)
    , m_title(new QLabel)
    , m_colourBox(new QComboBox)
    , m_metricBox(new QComboBox)
    , m_pngButton(new QPushButton(tr("Export PNG…")))
    , m_svgButton(new QPushButton(tr("Export SVG…")))
    , m_csvButton(new QPushButton(tr("Export CSV…")))
    , m_tabs(new QTabWidget)
    , m_epochsView(chartView(QStringLiteral("epochsChart")))
    , m_learningRateView(chartView(QStringLiteral("learningRateChart")))
    , m_parallelView(chartView(QStringLiteral("parallelChart")))
    , m_scalingView(chartView(QStringLiteral("scalingChart")))
    , m_scalingTimeView(chartView(QStringLiteral("scalingTimeChart")))
    , m_scalingSummary(new QLabel)
    , m_noScaling(new QLabel(tr("This sweep has no devices axis")))
    , m_tableWidget(new QTableWidget)
    , m_findings(new QLabel)
{
    setObjectName(QStringLiteral("compareView"));
    m_title->setObjectName(QStringLiteral("sweepTitle"));
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_colourBox->setObjectName(QStringLiteral("colourAxis"));
    m_metricBox->setObjectName(QStringLiteral("epochMetric"));
    m_metricBox->setToolTip(tr("What the per-epoch chart draws for each run"));
    for (const EpochColumn &c : kEpochColumns)
        m_metricBox->addItem(tr(c.name));
    m_scalingSummary->setObjectName(QStringLiteral("scalingSummary"));
    m_scalingSummary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_noScaling->setObjectName(QStringLiteral("noScaling"));
    m_noScaling->setAlignment(Qt::AlignCenter);
    m_tableWidget->setObjectName(QStringLiteral("sweepTable"));
    m_tableWidget->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_tableWidget->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_tableWidget->verticalHeader()->setVisible(false);
    m_tableWidget->setWordWrap(false);   // one line per run; a cut cell ends in "…"
    auto *useConfig = new QAction(tr("&Use This Run's Configuration"), m_tableWidget);
    useConfig->setObjectName(QStringLiteral("compareUseConfig"));
    connect(useConfig, &QAction::triggered, this, &CompareView::useCurrentRunConfig);
    m_tableWidget->addAction(useConfig);
    m_tableWidget->setContextMenuPolicy(Qt::ActionsContextMenu);
    m_tableWidget->setToolTip(tr("Double-click a run to load its configuration into the form"));
    connect(m_tableWidget, &QTableWidget::cellDoubleClicked, this, &CompareView::useCurrentRunConfig);
    m_findings->setObjectName(QStringLiteral("sweepFindings"));
    m_findings->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_findings->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));

    auto *header = new QHBoxLayout;
    header->addWidget(m_title, 1);
    auto *metricLabel = new QLabel(tr("Show"));
    metricLabel->setBuddy(m_metricBox);
    header->addWidget(metricLabel);
    header->addWidget(m_metricBox);
    auto *colourLabel = new QLabel(tr("Colour by"));
    colourLabel->setBuddy(m_colourBox);
    header->addWidget(colourLabel);
    header->addWidget(m_colourBox);
    header->addWidget(m_pngButton);
    header->addWidget(m_svgButton);
    header->addWidget(m_csvButton);

    auto *scaling = new QWidget;
    auto *scalingLayout = new QVBoxLayout(scaling);
    scalingLayout->setContentsMargins(0, 0, 0, 0);
    scalingLayout->addWidget(m_scalingView, 3);
    scalingLayout->addWidget(m_scalingTimeView, 2);
    scalingLayout->addWidget(m_scalingSummary);
    scalingLayout->addWidget(m_noScaling, 1);

    m_tabs->addTab(m_epochsView, tr("Per epoch"));
    m_tabs->addTab(m_learningRateView, tr("Accuracy vs learning rate"));
    m_tabs->addTab(scaling, tr("Scaling"));
    auto *tablePage = new QWidget;
    auto *tableLayout = new QVBoxLayout(tablePage);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->addWidget(m_tableWidget, 1);
    tableLayout->addWidget(m_findings);
    m_tabs->addTab(tablePage, tr("Table"));
    m_tabs->addTab(m_parallelView, tr("Parallel coordinates"));

    auto *layout = new QVBoxLayout(this);
    layout->addLayout(header);
    layout->addWidget(m_tabs, 1);

    connect(m_colourBox, &QComboBox::currentTextChanged, this, &CompareView::setColourAxis);
    // The metric chosen last time, by its untranslated name.
    m_epochMetric = std::max(0, columnIndex(QSettings().value(QStringLiteral("compare/epochMetric")).toString()));
    m_metricBox->setCurrentIndex(m_epochMetric);
    connect(m_metricBox, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index >= 0 && index != m_epochMetric) {
            m_epochMetric = index;
            QSettings().setValue(QStringLiteral("compare/epochMetric"), QLatin1String(kEpochColumns[index].name));
            rebuildEpochs();
        }
    });
    connect(m_tabs, &QTabWidget::currentChanged, this, &CompareView::updateButtons);
    connect(m_pngButton, &QPushButton::clicked, this, [this] { exportChart(false); });
    connect(m_svgButton, &QPushButton::clicked, this, [this] { exportChart(true); });
    connect(m_csvButton, &QPushButton::clicked, this, &CompareView::exportCsv);

    setEntries({}, {});
}

bool CompareView::loadSweep(const QString &runsDir, const QString &sweepId, QString *error)
{
    std::vector<QueueEntry> entries;
    try {
        entries = loadSweepEntries(runsDir.toStdString(), sweepId.toStdString());
    } catch (const std::exception &e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
    if (entries.empty()) {
        if (error)
            *error = tr("%1: no runs of sweep \"%2\" found").arg(runsDir, sweepId);
        return false;
    }
    setEntries(sweepId, entries);
    return true;
}

void CompareView::setEntries(const QString &sweepId, const std::vector<QueueEntry> &entries)
{
    m_sweepId = sweepId;
    m_entries = entries;
    m_table = sweepTable(m_entries);
    const int count = static_cast<int>(m_entries.size());
    m_title->setText(m_sweepId.isEmpty()                                ? tr("No sweep")
                     : m_sweepId == QLatin1String(kSelectedRuns) ? tr("%1 selected runs, by what differs between them").arg(count)
                                                                 : count == 1 ? tr("Sweep %1: 1 run").arg(m_sweepId)
                                                                 : tr("Sweep %1: %2 runs").arg(m_sweepId).arg(count));
    const QStringList names = axes();
    if (!names.contains(m_colourAxis))
        m_colourAxis = names.isEmpty() ? QString() : names.first();
    {
        const QSignalBlocker blocker(m_colourBox);
        m_colourBox->clear();
        m_colourBox->addItems(names);
        m_colourBox->setCurrentText(m_colourAxis);
    }
    m_colourBox->setEnabled(!names.isEmpty());
    rebuildEpochs();
    rebuildLearningRate();
    rebuildScaling();
    rebuildTable();
    rebuildParallel();
    updateButtons();
}

QStringList CompareView::axes() const
{
    QStringList names;
    for (const std::string &a : m_table.axes)
        names << QString::fromStdString(a);
    return names;
}

void CompareView::setColourAxis(const QString &axis)
{
    if (axis == m_colourAxis || !axes().contains(axis))
        return;
    m_colourAxis = axis;
    {
        const QSignalBlocker blocker(m_colourBox);
        m_colourBox->setCurrentText(axis);
    }
    rebuildEpochs();
}

QStringList CompareView::epochMetrics()
{
    QStringList names;
    for (const EpochColumn &c : kEpochColumns)
        names << tr(c.name);
    return names;
}

void CompareView::setEpochMetric(const QString &metric)
{
    if (const int index = static_cast<int>(epochMetrics().indexOf(metric)); index >= 0)
        m_metricBox->setCurrentIndex(index);
}

QString CompareView::epochMetric() const
{
    return epochMetrics().value(m_epochMetric);
}

void CompareView::setCurrentTab(Tab tab)
{
    m_tabs->setCurrentIndex(tab);
}

int CompareView::epochSeriesCount() const
{
    return static_cast<int>(m_epochsView->chart()->series().size());
}

QStringList CompareView::learningRateSeriesNames() const
{
    QStringList names;
    for (const QAbstractSeries *s : m_learningRateView->chart()->series())
        names << s->name();
    return names;
}

void CompareView::rebuildEpochs()
{
    QChart *chart = m_epochsView->chart();
    clearChart(chart);
    const EpochColumn &column = kEpochColumns[m_epochMetric];
    chart->setTitle(tr("%1 per epoch").arg(tr(column.name)));
    auto *x = new QValueAxis;
    x->setTitleText(tr("epoch"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto *y = new QValueAxis;
    y->setTitleText(tr(column.name));
    y->setRange(0.0, 1.0);
    y->setTickCount(6);
    double top = 0.0;
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    const std::string axis = m_colourAxis.toStdString();
    std::map<QString, int> colourOf;   // value -> palette index, in order of first appearance
    int epochs = 2;
    for (std::size_t i = 0; i < m_entries.size(); ++i) {
        const QueueEntry &e = m_entries[i];
        if (e.metrics.empty())
            continue;
        const QString value = m_colourAxis.isEmpty() ? QString::number(m_table.rows[i].index) : tagValue(e.tag, axis);
        const bool first = colourOf.count(value) == 0;
        if (first)
            colourOf.emplace(value, static_cast<int>(colourOf.size()));
        const QString name = m_colourAxis.isEmpty() ? tr("run %1").arg(value) : m_colourAxis + QLatin1Char('=') + value;
        QLineSeries *series = lineSeries(name, paletteColour(colourOf.at(value)));
        for (const EpochMetrics &m : e.metrics) {
            const double point = m.*column.field;
            if (column.zeroUnknown && point <= 0)
                continue;
            series->append(m.epoch, point);
            top = std::max(top, point);
            epochs = std::max(epochs, m.epoch);
        }
        attach(chart, series, x, y);
        // One legend entry per value: the runs after the first of a value share its entry.
        if (!first) {
            for (QLegendMarker *marker : chart->legend()->markers(series))
                marker->setVisible(false);
        }
    }
    setEpochAxis(x, epochs);
    if (!column.fraction && top > 0) {
        y->setRange(0.0, top * 1.05);
        y->applyNiceNumbers();
        y->setLabelFormat(QStringLiteral("%.3g"));
    }
}

void CompareView::rebuildParallel()
{
    QChart *chart = m_parallelView->chart();
    clearChart(chart);
    chart->setTitle(tr("Each run from its settings (the lowest or first value at the bottom) to its best test accuracy<br>"
                       "colour: best acc among the completed runs, purple to yellow; grey dashed: pruned, stopped or failed"));
    chart->legend()->hide();
    const ParallelPlot plot = parallelCoordinates(m_table);
    const int n = static_cast<int>(plot.axes.size());
    auto *x = new QCategoryAxis;
    // A category of width 1 around each axis, its label centred under it.
    x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionCenter);
    x->setRange(-0.5, n - 0.5);
    x->setStartValue(-0.5);
    x->setGridLineVisible(false);
    for (int a = 0; a < n; ++a) {
        const ParallelAxis &axis = plot.axes[static_cast<std::size_t>(a)];
        QStringList values;
        for (const std::string &v : axis.values)
            values << QString::fromStdString(v);
        const QString range = axis.numeric ? values.join(QStringLiteral(" – ")) + (axis.log ? tr(" (log)") : QString())
                                           : values.join(QStringLiteral(" · "));
        x->append(QStringLiteral("%1<br>%2").arg(QString::fromStdString(axis.name).toHtmlEscaped(), range.toHtmlEscaped()), a + 0.5);
    }
    auto *y = new QValueAxis;
    y->setRange(-0.03, 1.03);
    y->setLabelsVisible(false);
    y->setGridLineVisible(false);
    y->setLineVisible(false);
    y->setTickCount(2);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (int a = 0; a < n; ++a) {
        auto *rule = new QLineSeries;
        rule->setPen(QPen(QColor(0xb0b0b0), 1.0));
        rule->append(a, 0.0);
        rule->append(a, 1.0);
        attach(chart, rule, x, y);
    }
    double low = 1.0;
    double high = 0.0;
    for (const SweepRow &row : m_table.rows) {
        if (row.status == "completed" && row.secondsPerEpoch > 0) {
            low = std::min(low, row.bestTestAcc);
            high = std::max(high, row.bestTestAcc);
        }
    }
    for (std::size_t r = 0; r < plot.lines.size(); ++r) {
        const std::vector<double> &line = plot.lines[r];
        if (line.empty())
            continue;
        const SweepRow &row = m_table.rows[r];
        const bool done = row.status == "completed";
        const double t = high > low ? (row.bestTestAcc - low) / (high - low) : 1.0;
        QLineSeries *series = lineSeries(tr("run %1").arg(row.index), done ? rampColour(t) : QColor(0x9a9a9a),
                                         done ? Qt::SolidLine : Qt::DashLine);
        for (std::size_t a = 0; a < line.size(); ++a)
            series->append(static_cast<double>(a), line[a]);
        attach(chart, series, x, y);
    }
}

void CompareView::rebuildLearningRate()
{
    QChart *chart = m_learningRateView->chart();
    clearChart(chart);
    // batch size -> learning rate -> (sum of best accuracies, runs): runs differing only elsewhere are averaged.
    std::map<std::int64_t, std::map<double, std::pair<double, int>>> points;
    double low = 0.0;
    double high = 0.0;
    int pruned = 0;
    for (const QueueEntry &e : m_entries) {
        const double lr = e.config.learningRate;
        // A pruned run's best is of the epochs it was given, not of its learning rate.
        pruned += e.state == EntryState::Pruned;
        if (!hasResult(e) || !(lr > 0.0) || e.state == EntryState::Pruned)
            continue;
        auto &point = points[e.config.batchSize][lr];
        point.first += bestAccuracy(e);
        ++point.second;
        low = low > 0.0 ? std::min(low, lr) : lr;
        high = std::max(high, lr);
    }
    const QString title = tr("Best test accuracy against learning rate");
    chart->setTitle(pruned == 0   ? title
                    : pruned == 1 ? tr("%1 (1 pruned run left out)").arg(title)
                                  : tr("%1 (%2 pruned runs left out)").arg(title).arg(pruned));
    auto *x = new QLogValueAxis;
    x->setBase(10.0);
    x->setTitleText(tr("learning rate"));
    x->setLabelFormat(QStringLiteral("%g"));
    x->setMinorTickCount(8);
    auto *y = new QValueAxis;
    y->setTitleText(tr("best test acc"));
    y->setRange(0.0, 1.0);
    y->setTickCount(6);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    if (low > 0.0) {
        double from = std::pow(10.0, std::floor(std::log10(low)));
        double to = std::pow(10.0, std::ceil(std::log10(high)));
        if (to <= from)
            to = from * 10.0;
        // A hair below the power of ten: Qt rounds log(0.01) / log(10) up to -1 and loses the first label.
        x->setRange(from * (1.0 - 1e-9), to);
    } else {
        x->setRange(0.001, 1.0);
    }
    // Each point one run, the runs differing in more than these two settings (a random search, runs picked by
    // hand): points alone, as a line through them would read as a curve of the learning rate.
    bool single = true;
    for (const auto &[batch, byRate] : points) {
        for (const auto &[lr, sum] : byRate)
            single = single && sum.second == 1;
    }
    const bool others = std::any_of(m_table.axes.begin(), m_table.axes.end(), [](const std::string &a) {
        return a != "learning_rate" && a != "batch_size";
    });
    int colour = 0;
    for (const auto &[batch, byRate] : points) {
        const QColor c = paletteColour(colour++);
        QXYSeries *series = nullptr;
        if (single && others) {
            auto *scatter = new QScatterSeries;
            scatter->setName(tr("batch %1").arg(batch));
            scatter->setColor(c);
            scatter->setBorderColor(c);
            scatter->setMarkerSize(9.0);
            series = scatter;
        } else {
            series = lineSeries(tr("batch %1").arg(batch), c);
        }
        for (const auto &[lr, sum] : byRate)
            series->append(lr, sum.first / sum.second);
        attach(chart, series, x, y);
    }
}

void CompareView::rebuildScaling()
{
    QChart *chart = m_scalingView->chart();
    clearChart(chart);
    m_scalingPoints = 0;
    m_scalingView->setVisible(m_table.hasScaling);
    m_scalingTimeView->setVisible(m_table.hasScaling);
    m_scalingSummary->setVisible(m_table.hasScaling);
    m_noScaling->setVisible(!m_table.hasScaling);
    m_scalingSummary->clear();
    if (!m_table.hasScaling)
        return;
    chart->setTitle(tr("Throughput against devices"));
    struct Mean
    {
        double imagesPerSecond = 0.0;
        double secondsPerEpoch = 0.0;
        int runs = 0;
    };
    std::map<int, Mean> byDevices;
    for (const QueueEntry &e : m_entries) {
        const int n = static_cast<int>(e.config.devices.size());
        if (n < 1 || !(e.imagesPerSecond > 0.0))
            continue;
        Mean &mean = byDevices[n];
        mean.imagesPerSecond += e.imagesPerSecond;
        mean.secondsPerEpoch += e.meanEpochSeconds;
        ++mean.runs;
    }
    for (auto &[n, mean] : byDevices) {
        mean.imagesPerSecond /= mean.runs;
        mean.secondsPerEpoch /= mean.runs;
    }
    auto *x = new QValueAxis;
    x->setTitleText(tr("devices"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto *throughput = new QValueAxis;
    throughput->setTitleText(tr("img/s"));
    throughput->setLabelFormat(QStringLiteral("%.0f"));
    auto *seconds = new QValueAxis;
    seconds->setTitleText(tr("sec/epoch"));
    seconds->setLabelFormat(QStringLiteral("%.1f"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(throughput, Qt::AlignLeft);
    chart->addAxis(seconds, Qt::AlignRight);
    QLineSeries *measured = lineSeries(tr("img/s measured"), paletteColour(0));
    QLineSeries *ideal = lineSeries(tr("img/s ideal"), paletteColour(0).lighter(150), Qt::DashLine);
    QLineSeries *epochSeconds = lineSeries(tr("sec/epoch"), paletteColour(1), Qt::DotLine);
    QStringList summary;
    double top = 0.0;
    double slowest = 0.0;
    if (!byDevices.empty()) {
        const int n0 = byDevices.begin()->first;
        const double reference = byDevices.begin()->second.imagesPerSecond;
        summary << tr("%1: %2 img/s (reference)").arg(devicesText(n0), fixed(reference, 1));
        for (const auto &[n, mean] : byDevices) {
            const double idealRate = reference * n / n0;
            measured->append(n, mean.imagesPerSecond);
            ideal->append(n, idealRate);
            epochSeconds->append(n, mean.secondsPerEpoch);
            top = std::max({top, mean.imagesPerSecond, idealRate});
            slowest = std::max(slowest, mean.secondsPerEpoch);
            if (n == n0)
                continue;
            const double speedup = mean.imagesPerSecond / reference;
            const double idealSpeedup = static_cast<double>(n) / n0;
            summary << tr("%1: %2x, ideal %3x, efficiency %4%")
                           .arg(devicesText(n), fixed(speedup, 2), QString::number(idealSpeedup, 'g', 3),
                                fixed(100.0 * speedup / idealSpeedup, 0));
        }
        const int last = byDevices.rbegin()->first;
        x->setRange(n0 == last ? n0 - 1 : n0, n0 == last ? n0 + 1 : last);
        x->setTickType(QValueAxis::TicksDynamic);
        x->setTickAnchor(0);
        x->setTickInterval(1.0);
    }
    throughput->setRange(0.0, top > 0.0 ? top * 1.1 : 1.0);
    seconds->setRange(0.0, slowest > 0.0 ? slowest * 1.1 : 1.0);
    attach(chart, measured, x, throughput);
    attach(chart, ideal, x, throughput);
    attach(chart, epochSeconds, x, seconds);
    m_scalingPoints = static_cast<int>(measured->count());
    summary << rebuildScalingTime();
    m_scalingSummary->setText(summary.join(QLatin1Char('\n')));
}

QStringList CompareView::rebuildScalingTime()
{
    QChart *chart = m_scalingTimeView->chart();
    clearChart(chart);
    m_scalingTimeBars = 0;
    const std::map<int, TimeSplit> byDevices = timeByDeviceCount(m_entries);
    if (byDevices.empty()) {
        chart->setTitle(tr("Where the epoch's time went: no run of this sweep measured it"));
        return {};
    }
    chart->setTitle(tr("Where the epoch's time went (seconds per epoch, mean over ranks)"));
    const QStringList names = {tr("data"), tr("compute"), tr("all-reduce"), tr("optimizer"), tr("other")};
    const QList<QColor> colours = {QColor(0x9e9e9e), QColor(0x1f77b4), QColor(0xd62728), QColor(0x2ca02c), QColor(0xbcbd22)};
    auto *series = new QStackedBarSeries;
    QList<QBarSet *> sets;
    for (int i = 0; i < names.size(); ++i) {
        auto *set = new QBarSet(names[i]);
        set->setColor(colours[i]);
        sets << set;
    }
    QStringList categories;
    QStringList shares;
    double top = 0.0;
    for (const auto &[n, t] : byDevices) {
        categories << devicesText(n);
        const double parts[] = {t.data, t.compute, t.allreduce, t.optimizer, t.other};
        for (int i = 0; i < names.size(); ++i)
            *sets[i] << parts[i];
        top = std::max(top, t.total());
        if (t.total() > 0.0)
            shares << tr("%1: compute %2%, all-reduce %3%, optimizer %4%, data and other %5%")
                          .arg(devicesText(n), fixed(100.0 * t.compute / t.total(), 0), fixed(100.0 * t.allreduce / t.total(), 0),
                               fixed(100.0 * t.optimizer / t.total(), 0), fixed(100.0 * (t.data + t.other) / t.total(), 0));
        ++m_scalingTimeBars;
    }
    series->append(sets);
    auto *x = new QBarCategoryAxis;
    x->append(categories);
    auto *y = new QValueAxis;
    y->setTitleText(tr("sec/epoch"));
    y->setLabelFormat(QStringLiteral("%.2f"));
    y->setRange(0.0, top > 0.0 ? top * 1.1 : 1.0);
    y->applyNiceNumbers();
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    attach(chart, series, x, y);
    chart->legend()->setAlignment(Qt::AlignRight);
    return shares;
}

void CompareView::rebuildTable()
{
    // Runs picked by hand are named: their numbers say nothing of which run is which.
    const bool named = m_sweepId == QLatin1String(kSelectedRuns);
    QStringList headers = {tr("#")};
    if (named)
        headers << tr("run");
    headers << axes();
    const int firstNumber = static_cast<int>(headers.size()) + 1;
    headers << tr("status") << tr("best test acc") << tr("sec/epoch") << tr("img/s")
            << tr("to %1").arg(fixed(kDefaultTargetAccuracy, 2));
    if (m_table.hasScaling)
        headers << tr("speed-up") << tr("ideal") << tr("efficiency %");
    const bool noted = std::any_of(m_table.rows.begin(), m_table.rows.end(), [](const SweepRow &row) { return !row.notes.empty(); });
    if (noted)
        headers << tr("notes");
    m_tableWidget->clear();
    m_tableWidget->setColumnCount(static_cast<int>(headers.size()));
    m_tableWidget->setRowCount(static_cast<int>(m_table.rows.size()));
    m_tableWidget->setHorizontalHeaderLabels(headers);
    for (int r = 0; r < static_cast<int>(m_table.rows.size()); ++r) {
        const SweepRow &row = m_table.rows[static_cast<std::size_t>(r)];
        const bool ran = row.status != "not started" && row.secondsPerEpoch > 0;
        QStringList cells = {QString::number(row.index)};
        if (named)
            cells << QFileInfo(QString::fromStdString(row.runDir)).fileName();
        for (const std::string &v : row.values)
            cells << QString::fromStdString(v);
        cells << QString::fromStdString(row.status);
        cells << (ran ? fixed(row.bestTestAcc, 3) : QStringLiteral("-"));
        cells << (ran ? fixed(row.secondsPerEpoch, 1) : QStringLiteral("-"));
        cells << (ran && row.imagesPerSecond > 0 ? fixed(row.imagesPerSecond, 1) : QStringLiteral("-"));
        // DAWNBench's measure: a recipe that reaches the target in fewer seconds wins at the same img/s.
        cells << (row.toTarget ? tr("%1 s (%2)").arg(fixed(row.toTarget->seconds, 1)).arg(row.toTarget->epoch) : QStringLiteral("-"));
        if (m_table.hasScaling) {
            cells << (row.speedup > 0 ? fixed(row.speedup, 2) + QLatin1Char('x') : QStringLiteral("-"));
            cells << (row.ideal > 0 ? fixed(row.ideal, 2) + QLatin1Char('x') : QStringLiteral("-"));
            cells << (row.efficiency > 0 ? fixed(row.efficiency, 0) : QStringLiteral("-"));
        }
        if (noted)
            cells << QString::fromStdString(notesHeadline(row.notes, RunHistoryModel::kNotesShown));
        // The error, then the whole notes, on every cell of the row.
        QStringList tip;
        for (const std::string &text : {row.error, row.notes}) {
            if (!text.empty())
                tip << QString::fromStdString(text);
        }
        for (int c = 0; c < static_cast<int>(cells.size()); ++c) {
            auto *item = new QTableWidgetItem(cells[c]);
            item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
            if (c == 0 || (c >= firstNumber && !(noted && c == cells.size() - 1)))
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (!tip.isEmpty())
                item->setToolTip(tip.join(QStringLiteral("\n\n")));
            m_tableWidget->setItem(r, c, item);
        }
    }
    m_tableWidget->resizeColumnsToContents();
    // As in the history: the first line, at most 320 pixels of it; the tooltip has the whole notes.
    if (noted && m_tableWidget->columnWidth(m_tableWidget->columnCount() - 1) > 320)
        m_tableWidget->setColumnWidth(m_tableWidget->columnCount() - 1, 320);
    const std::string findings = formatSweepFindings(m_table);
    m_findings->setText(QString::fromStdString(findings).trimmed());
    m_findings->setVisible(!findings.empty());
}

bool CompareView::useCurrentRunConfig()
{
    const int row = m_tableWidget->currentRow();
    if (row < 0 || row >= static_cast<int>(m_entries.size()))
        return false;
    Q_EMIT useConfigRequested(m_entries[static_cast<std::size_t>(row)].config);
    return true;
}

void CompareView::updateButtons()
{
    QString ignored;
    const bool chart = currentChartView(&ignored) != nullptr;
    m_pngButton->setEnabled(chart);
    m_svgButton->setEnabled(chart);
    // What to draw and how to colour it are the per-epoch chart's choices.
    m_metricBox->setEnabled(m_tabs->currentIndex() == EpochsTab);
    m_csvButton->setEnabled(!m_entries.empty());
}

QChartView *CompareView::currentChartView(QString *error) const
{
    switch (m_tabs->currentIndex()) {
    case EpochsTab:
        return m_epochsView;
    case LearningRateTab:
        return m_learningRateView;
    case ParallelTab:
        return m_parallelView;
    case ScalingTab:
        if (m_table.hasScaling)
            return m_scalingView;
        if (error)
            *error = tr("This sweep has no devices axis: there is no scaling chart to export");
        return nullptr;
    default:
        if (error)
            *error = tr("The table has no chart: export it as CSV");
        return nullptr;
    }
}

bool CompareView::saveCurrentChartPng(const QString &path, QString *error)
{
    QChartView *view = currentChartView(error);
    return view && saveChartPng(view, path, error);
}

bool CompareView::saveCurrentChartSvg(const QString &path, QString *error)
{
    QChartView *view = currentChartView(error);
    return view && saveChartSvg(view, path, tr("TrainLab sweep %1: %2").arg(m_sweepId, view->chart()->title()), error);
}

bool CompareView::saveTableCsv(const QString &path, QString *error)
{
    return saveTextFile(path, QByteArray::fromStdString(sweepTableCsv(m_table)), error);
}

bool CompareView::saveEpochsCsv(const QString &path, QString *error)
{
    QStringList header = {QStringLiteral("index")};
    header << axes();
    header << QStringLiteral("epoch") << QStringLiteral("train_loss") << QStringLiteral("train_acc")
           << QStringLiteral("test_acc") << QStringLiteral("seconds") << QStringLiteral("images_per_second")
           << QStringLiteral("learning_rate") << QStringLiteral("grad_norm");
    QString text = header.join(QLatin1Char(',')) + QLatin1Char('\n');
    for (std::size_t i = 0; i < m_entries.size(); ++i) {
        const SweepRow &row = m_table.rows[i];
        QString prefix = QString::number(row.index);
        for (const std::string &v : row.values)
            prefix += QLatin1Char(',') + csvField(QString::fromStdString(v));
        for (const EpochMetrics &m : m_entries[i].metrics) {
            text += prefix + QLatin1Char(',') + QString::number(m.epoch) + QLatin1Char(',') + fixed(m.trainLoss, 6)
                    + QLatin1Char(',') + fixed(m.trainAcc, 6) + QLatin1Char(',') + fixed(m.testAcc, 6)
                    + QLatin1Char(',') + fixed(m.seconds, 3) + QLatin1Char(',') + fixed(m.imagesPerSecond, 1)
                    + QLatin1Char(',') + (m.learningRate > 0 ? QString::number(m.learningRate, 'g', 8) : QString())
                    + QLatin1Char(',') + (m.gradNorm > 0 ? QString::number(m.gradNorm, 'g', 6) : QString())
                    + QLatin1Char('\n');
        }
    }
    return saveTextFile(path, text.toUtf8(), error);
}

void CompareView::exportChart(bool svg)
{
    static const char *const slugs[] = {"epochs", "learning-rate", "scaling", "table"};
    const int tab = std::clamp(m_tabs->currentIndex(), 0, 3);
    const QString suggested = QStringLiteral("%1-%2.%3")
                                  .arg(m_sweepId.isEmpty() ? QStringLiteral("sweep") : m_sweepId,
                                       QLatin1String(slugs[tab]), svg ? QStringLiteral("svg") : QStringLiteral("png"));
    const QString path = QFileDialog::getSaveFileName(this, svg ? tr("Export chart as SVG") : tr("Export chart as PNG"),
                                                      suggested,
                                                      svg ? tr("SVG images (*.svg)") : tr("PNG images (*.png)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!(svg ? saveCurrentChartSvg(path, &error) : saveCurrentChartPng(path, &error)))
        QMessageBox::warning(this, tr("Export failed"), error);
}

void CompareView::exportCsv()
{
    const bool epochs = m_tabs->currentIndex() == EpochsTab;
    const QString suggested = QStringLiteral("%1-%2.csv")
                                  .arg(m_sweepId.isEmpty() ? QStringLiteral("sweep") : m_sweepId,
                                       epochs ? QStringLiteral("epochs") : QStringLiteral("table"));
    const QString path = QFileDialog::getSaveFileName(this, epochs ? tr("Export epochs as CSV") : tr("Export table as CSV"),
                                                      suggested, tr("CSV files (*.csv)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!(epochs ? saveEpochsCsv(path, &error) : saveTableCsv(path, &error)))
        QMessageBox::warning(this, tr("Export failed"), error);
}

namespace {

CompareView *compareWindow(QWidget *parent, CompareView *&view)
{
    if (!view) {
        view = new CompareView(parent);
        view->setWindowFlag(Qt::Window);
        view->setObjectName(QStringLiteral("compareView"));
        view->resize(960, 640);
    }
    return view;
}

} // namespace

bool CompareView::showSweep(QWidget *parent, CompareView *&view, const QString &runsDir, const QString &sweepId,
                            QString *error)
{
    if (!compareWindow(parent, view)->loadSweep(runsDir, sweepId, error))
        return false;
    view->setWindowTitle(tr("Compare %1 — TrainLab").arg(sweepId));
    view->show();
    view->raise();
    return true;
}

bool CompareView::loadRuns(const QStringList &runDirs, QString *error)
{
    std::vector<std::string> dirs;
    for (const QString &dir : runDirs)
        dirs.push_back(dir.toStdString());
    try {
        setEntries(QString::fromLatin1(kSelectedRuns), loadRunEntries(dirs));
    } catch (const std::exception &e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

bool CompareView::showRuns(QWidget *parent, CompareView *&view, const QStringList &runDirs, QString *error)
{
    if (!compareWindow(parent, view)->loadRuns(runDirs, error))
        return false;
    view->setWindowTitle(tr("Compare %1 Runs — TrainLab").arg(runDirs.size()));
    view->show();
    view->raise();
    return true;
}

QString CompareView::chooseSweep(QWidget *parent, const QString &runsDir, QString *error)
{
    QStringList ids;
    for (const std::string &id : listSweepIds(runsDir.toStdString()))
        ids << QString::fromStdString(id);
    if (ids.isEmpty()) {
        *error = tr("%1 holds no sweep runs yet: add a sweep to the queue and start it.").arg(runsDir);
        return {};
    }
    bool ok = false;
    const QString id = QInputDialog::getItem(parent, tr("Compare Sweep"), tr("Sweep:"), ids, 0, false, &ok);
    return ok ? id : QString();
}

} // namespace trainlab
