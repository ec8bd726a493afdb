#include "ui/compareview.h"

#include "core/runs/runrecord.h"

#include <QAction>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QValueAxis>

#include <string>
#include <vector>

using trainlab::CompareView;
using trainlab::EntryState;
using trainlab::EpochMetrics;
using trainlab::QueueEntry;
using trainlab::TimeSplit;

namespace {

const QString kSweep = QStringLiteral("20250101T000000Z-test");

// A finished run with two epochs; its results follow from acc and imagesPerSecond.
QueueEntry run(int index, int count, std::vector<std::pair<std::string, std::string>> values, double acc,
               double imagesPerSecond)
{
    QueueEntry e;
    e.tag.id = kSweep.toStdString();
    e.tag.index = index;
    e.tag.count = count;
    e.tag.values = std::move(values);
    e.state = EntryState::Completed;
    for (int n = 1; n <= 2; ++n) {
        EpochMetrics m;
        m.epoch = n;
        m.trainLoss = 1.0 / n;
        m.trainAcc = acc * n / 2.0 + 0.01;
        m.testAcc = acc * n / 2.0;
        m.seconds = 6000.0 / imagesPerSecond;
        m.imagesPerSecond = imagesPerSecond;
        e.metrics.push_back(m);
    }
    e.epochsDone = 2;
    e.bestTestAcc = acc;
    e.meanEpochSeconds = 6000.0 / imagesPerSecond;
    e.imagesPerSecond = imagesPerSecond;
    return e;
}

// learning_rate {0.1, 0.3} x batch_size {32, 64}, the last axis fastest as planSweep orders a grid.
std::vector<QueueEntry> grid()
{
    std::vector<QueueEntry> entries;
    const double rates[] = {0.1, 0.3};
    const std::int64_t batches[] = {32, 64};
    const char *rateText[] = {"0.1", "0.3"};
    int i = 0;
    for (int r = 0; r < 2; ++r) {
        for (int b = 0; b < 2; ++b) {
            QueueEntry e = run(i, 4, {{"learning_rate", rateText[r]}, {"batch_size", std::to_string(batches[b])}},
                               0.5 + 0.1 * i, 100.0);
            e.config.learningRate = rates[r];
            e.config.batchSize = batches[b];
            entries.push_back(std::move(e));
            ++i;
        }
    }
    return entries;
}

std::vector<QueueEntry> scaling()
{
    QueueEntry one = run(0, 2, {{"devices", "cpu"}}, 0.7, 100.0);
    one.config.devices = {"cpu"};
    QueueEntry two = run(1, 2, {{"devices", "cpu,cpu"}}, 0.7, 180.0);
    two.config.devices = {"cpu", "cpu"};
    return {one, two};
}

QList<QLineSeries *> seriesOf(const CompareView &view, const char *chart)
{
    QList<QLineSeries *> list;
    auto *chartView = view.findChild<QChartView *>(QString::fromLatin1(chart));
    if (!chartView)
        return list;
    for (QAbstractSeries *s : chartView->chart()->series())
        list << qobject_cast<QLineSeries *>(s);
    return list;
}

int visibleLegendMarkers(const CompareView &view)
{
    int visible = 0;
    for (QLegendMarker *m : view.findChild<QChartView *>(QStringLiteral("epochsChart"))->chart()->legend()->markers())
        visible += m->isVisible() ? 1 : 0;
    return visible;
}

int column(QTableWidget *table, const QString &header)
{
    for (int c = 0; c < table->columnCount(); ++c) {
        if (table->horizontalHeaderItem(c) && table->horizontalHeaderItem(c)->text() == header)
            return c;
    }
    return -1;
}

QStringList fileLines(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

} // namespace

class tst_CompareView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void gridShowsEveryRun();
    void learningRateWithoutAxisUsesTheConfig();
    void scalingSweep();
    void scalingShowsWhereTheTimeWent();
    void colourAxisRecolours();
    void epochMetricChosen();
    void tableIsReadOnly();
    void tableRunGoesToTheForm();
    void randomRunsArePointsAgainstTheRate();
    void exportWritesAFile_data();
    void exportWritesAFile();
    void exportToAMissingFolderFails_data();
    void exportToAMissingFolderFails();
    void tableTabHasNoChartToExport();
    void loadSweepOnAnEmptyFolderFails();
    void loadSweepReadsMetricsFromRunFolders();

private:
    QTemporaryDir m_dir;
};

void tst_CompareView::initTestCase()
{
    qputenv("XDG_CONFIG_HOME", m_dir.filePath(QStringLiteral("config")).toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("TrainLabTest"));
    QCoreApplication::setApplicationName(QStringLiteral("CompareViewTest"));
}

void tst_CompareView::gridShowsEveryRun()
{
    CompareView view;
    view.setEntries(kSweep, grid());
    QCOMPARE(view.sweepId(), kSweep);
    QCOMPARE(view.axes(), QStringList({QStringLiteral("learning_rate"), QStringLiteral("batch_size")}));
    QCOMPARE(view.epochSeriesCount(), 4);
    for (QLineSeries *s : seriesOf(view, "epochsChart")) {
        QVERIFY(s);
        QCOMPARE(s->count(), 2);
    }
    QCOMPARE(view.learningRateSeriesNames(), QStringList({QStringLiteral("batch 32"), QStringLiteral("batch 64")}));
    // batch 32 ran at lr 0.1 (run 0, acc 0.5) and lr 0.3 (run 2, acc 0.7), sorted by lr.
    const QList<QLineSeries *> rates = seriesOf(view, "learningRateChart");
    QCOMPARE(rates.size(), 2);
    QCOMPARE(rates[0]->points(), QList<QPointF>({QPointF(0.1, 0.5), QPointF(0.3, 0.7)}));
    QCOMPARE(rates[1]->points(), QList<QPointF>({QPointF(0.1, 0.6), QPointF(0.3, 0.8)}));
    QVERIFY(!view.hasScaling());
    QCOMPARE(view.scalingPointCount(), 0);
    // A pruned run's best is of the epochs it got: it stays in the table, not on the learning-rate chart.
    std::vector<QueueEntry> withPruned = grid();
    withPruned[2].state = EntryState::Pruned;
    CompareView prunedView;
    prunedView.setEntries(kSweep, withPruned);
    QCOMPARE(seriesOf(prunedView, "learningRateChart")[0]->points(), QList<QPointF>({QPointF(0.1, 0.5)}));
    QVERIFY(prunedView.findChild<QChartView *>(QStringLiteral("learningRateChart"))->chart()->title().endsWith("(1 pruned run left out)"));
    QCOMPARE(prunedView.table()->rowCount(), 4);
    // Hidden rather than invisible: the scaling tab is not the current one.
    QVERIFY(!view.findChild<QLabel *>(QStringLiteral("noScaling"))->isHidden());
    QVERIFY(view.findChild<QChartView *>(QStringLiteral("scalingChart"))->isHidden());
    QCOMPARE(view.table()->rowCount(), 4);
    QCOMPARE(column(view.table(), QStringLiteral("speed-up")), -1);
    // Parallel coordinates: a rule per axis (lr, batch, best acc), then a line per run through them.
    const auto parallel = view.findChild<QChartView *>(QStringLiteral("parallelChart"))->chart()->series();
    QCOMPARE(parallel.size(), 3 + 4);
    QCOMPARE(qobject_cast<QLineSeries *>(parallel.back())->points(),
             QList<QPointF>({QPointF(0, 1.0), QPointF(1, 1.0), QPointF(2, 1.0)}));
    // Below the table, what the runs say: the best, and how each axis went with best accuracy.
    const QString findings = view.findChild<QLabel *>(QStringLiteral("sweepFindings"))->text();
    QVERIFY2(findings.startsWith("best: run 4 (learning_rate=0.3 batch_size=64), test acc 0.800\n"), qPrintable(findings));
    QVERIFY2(findings.contains("\n  learning_rate  +0.89    0.1 0.550, 0.3 0.750"), qPrintable(findings));
    view.setEntries(kSweep, {grid().front()});
    QVERIFY(view.findChild<QLabel *>(QStringLiteral("sweepFindings"))->isHidden());
}

void tst_CompareView::learningRateWithoutAxisUsesTheConfig()
{
    std::vector<QueueEntry> entries = scaling();
    entries[0].config.learningRate = 0.05;
    entries[1].config.learningRate = 0.05;
    entries[0].config.batchSize = 128;
    entries[1].config.batchSize = 128;
    CompareView view;
    view.setEntries(kSweep, entries);
    QCOMPARE(view.learningRateSeriesNames(), QStringList({QStringLiteral("batch 128")}));
    // Two runs at the same rate and batch make one point, their mean.
    QCOMPARE(seriesOf(view, "learningRateChart").at(0)->points(), QList<QPointF>({QPointF(0.05, 0.7)}));
}

void tst_CompareView::scalingSweep()
{
    CompareView view;
    view.setEntries(kSweep, scaling());
    QVERIFY(view.hasScaling());
    QCOMPARE(view.scalingPointCount(), 2);
    const QList<QLineSeries *> series = seriesOf(view, "scalingChart");
    QCOMPARE(series.size(), 3);
    QCOMPARE(series[0]->points(), QList<QPointF>({QPointF(1, 100.0), QPointF(2, 180.0)}));
    QCOMPARE(series[1]->points(), QList<QPointF>({QPointF(1, 100.0), QPointF(2, 200.0)}));
    QCOMPARE(series[1]->pen().style(), Qt::DashLine);
    QCOMPARE(series[2]->points(), QList<QPointF>({QPointF(1, 60.0), QPointF(2, 6000.0 / 180.0)}));
    const QString summary = view.findChild<QLabel *>(QStringLiteral("scalingSummary"))->text();
    QVERIFY2(summary.contains(QStringLiteral("2 devices: 1.80x, ideal 2x, efficiency 90%")), qPrintable(summary));
    QVERIFY(view.findChild<QLabel *>(QStringLiteral("noScaling"))->isHidden());
    QVERIFY(!view.findChild<QChartView *>(QStringLiteral("scalingChart"))->isHidden());

    QTableWidget *table = view.table();
    QCOMPARE(table->rowCount(), 2);
    const int speedup = column(table, QStringLiteral("speed-up"));
    QVERIFY(speedup > 0);
    QCOMPARE(table->item(0, speedup)->text(), QStringLiteral("1.00x"));
    QCOMPARE(table->item(1, speedup)->text(), QStringLiteral("1.80x"));
    QCOMPARE(table->item(1, column(table, QStringLiteral("ideal")))->text(), QStringLiteral("2.00x"));
    QCOMPARE(table->item(1, column(table, QStringLiteral("efficiency %")))->text(), QStringLiteral("90"));
    QCOMPARE(table->item(1, column(table, QStringLiteral("img/s")))->text(), QStringLiteral("180.0"));
    QCOMPARE(table->item(1, column(table, QStringLiteral("devices")))->text(), QStringLiteral("cpu,cpu"));
}

// Epoch 1 (warm-up) is left out; the two ranks of the 2-device run are averaged.
void tst_CompareView::scalingShowsWhereTheTimeWent()
{
    std::vector<QueueEntry> entries = scaling();
    auto split = [](int rank, double compute, double allreduce) {
        TimeSplit t;
        t.rank = rank;
        t.data = 0.05;
        t.compute = compute;
        t.allreduce = allreduce;
        t.optimizer = 0.1;
        t.other = 0.05;
        return t;
    };
    entries[0].metrics[0].time = {split(0, 9.0, 0.0)};
    entries[0].metrics[1].time = {split(0, 1.8, 0.0)};
    entries[1].metrics[0].time = {split(0, 9.0, 9.0), split(1, 9.0, 9.0)};
    entries[1].metrics[1].time = {split(0, 0.9, 0.3), split(1, 0.7, 0.5)};
    CompareView view;
    view.setEntries(kSweep, entries);
    QCOMPARE(view.scalingTimeBarCount(), 2);
    auto *chartView = view.findChild<QChartView *>(QStringLiteral("scalingTimeChart"));
    QVERIFY(chartView);
    auto *series = qobject_cast<QStackedBarSeries *>(chartView->chart()->series().value(0));
    QVERIFY(series);
    const QList<QBarSet *> sets = series->barSets();
    QCOMPARE(sets.size(), 5);
    QCOMPARE(sets[1]->label(), QStringLiteral("compute"));
    QCOMPARE(sets[1]->at(0), 1.8);
    QCOMPARE(sets[1]->at(1), 0.8);
    QCOMPARE(sets[2]->label(), QStringLiteral("all-reduce"));
    QCOMPARE(sets[2]->at(0), 0.0);
    QCOMPARE(sets[2]->at(1), 0.4);
    const QString summary = view.findChild<QLabel *>(QStringLiteral("scalingSummary"))->text();
    QVERIFY2(summary.contains(QStringLiteral("2 devices: compute 57%, all-reduce 29%, optimizer 7%, data and other 7%")),
             qPrintable(summary));

    // A sweep whose runs measured nothing (CUDA runs, old runs): no bars, and the chart says why.
    view.setEntries(kSweep, scaling());
    QCOMPARE(view.scalingTimeBarCount(), 0);
    QVERIFY(chartView->chart()->title().contains(QStringLiteral("no run of this sweep measured it")));
}

void tst_CompareView::colourAxisRecolours()
{
    CompareView view;
    view.resize(900, 600);
    view.setEntries(kSweep, grid());
    // The legend lays its markers out once shown: only then does a marker tell whether it is drawn.
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.colourAxis(), QStringLiteral("learning_rate"));
    QList<QLineSeries *> s = seriesOf(view, "epochsChart");
    QCOMPARE(s.size(), 4);
    QCOMPARE(s[0]->color(), s[1]->color());
    QCOMPARE(s[2]->color(), s[3]->color());
    QVERIFY(s[0]->color() != s[2]->color());
    QCOMPARE(s[0]->name(), QStringLiteral("learning_rate=0.1"));
    QCOMPARE(s[2]->name(), QStringLiteral("learning_rate=0.3"));
    QTRY_COMPARE(visibleLegendMarkers(view), 2);

    view.setColourAxis(QStringLiteral("batch_size"));
    QCOMPARE(view.colourAxis(), QStringLiteral("batch_size"));
    QCOMPARE(view.findChild<QComboBox *>(QStringLiteral("colourAxis"))->currentText(), QStringLiteral("batch_size"));
    s = seriesOf(view, "epochsChart");
    QCOMPARE(s.size(), 4);
    QCOMPARE(s[0]->color(), s[2]->color());
    QCOMPARE(s[1]->color(), s[3]->color());
    QVERIFY(s[0]->color() != s[1]->color());
    QCOMPARE(s[1]->name(), QStringLiteral("batch_size=64"));
    QTRY_COMPARE(visibleLegendMarkers(view), 2);

    // The combo box drives the same change; an axis the sweep lacks changes nothing.
    view.findChild<QComboBox *>(QStringLiteral("colourAxis"))->setCurrentText(QStringLiteral("learning_rate"));
    QCOMPARE(view.colourAxis(), QStringLiteral("learning_rate"));
    view.setColourAxis(QStringLiteral("seed"));
    QCOMPARE(view.colourAxis(), QStringLiteral("learning_rate"));
    s = seriesOf(view, "epochsChart");
    QCOMPARE(s[0]->color(), s[1]->color());
    QVERIFY(s[0]->color() != s[2]->color());
}

// The per-epoch chart draws the chosen column of each run's epochs; an unrecorded norm (0) draws no point.
void tst_CompareView::epochMetricChosen()
{
    std::vector<QueueEntry> entries = grid();
    for (QueueEntry &e : entries) {
        for (EpochMetrics &m : e.metrics)
            m.gradNorm = m.epoch == 1 ? 0.0 : 2.0 + e.tag.index;
    }
    CompareView view;
    view.setEntries(kSweep, entries);
    QCOMPARE(view.epochMetric(), QStringLiteral("test acc"));
    auto *chart = view.findChild<QChartView *>(QStringLiteral("epochsChart"))->chart();
    auto *box = view.findChild<QComboBox *>(QStringLiteral("epochMetric"));
    QCOMPARE(box->count(), int(CompareView::epochMetrics().size()));
    box->setCurrentText(QStringLiteral("train loss"));
    QCOMPARE(view.epochMetric(), QStringLiteral("train loss"));
    QList<QLineSeries *> s = seriesOf(view, "epochsChart");
    QCOMPARE(s.size(), 4);
    QCOMPARE(s[0]->points(), QList<QPointF>({QPointF(1, 1.0), QPointF(2, 0.5)}));
    QCOMPARE(chart->title(), QStringLiteral("train loss per epoch"));
    auto *y = qobject_cast<QValueAxis *>(chart->axes(Qt::Vertical).value(0));
    QVERIFY(y);
    QCOMPARE(y->titleText(), QStringLiteral("train loss"));
    QVERIFY2(y->max() >= 1.0 && y->max() <= 2.0, qPrintable(QString::number(y->max())));

    view.setEpochMetric(QStringLiteral("grad norm"));
    QCOMPARE(box->currentText(), QStringLiteral("grad norm"));
    s = seriesOf(view, "epochsChart");
    QCOMPARE(s[3]->points(), QList<QPointF>({QPointF(2, 5.0)}));
    // The colours still follow the colour axis, and an unknown metric changes nothing.
    QCOMPARE(s[0]->color(), s[1]->color());
    view.setEpochMetric(QStringLiteral("perplexity"));
    QCOMPARE(view.epochMetric(), QStringLiteral("grad norm"));
    // A new sweep keeps the choice, and so does the next session's window.
    view.setEntries(kSweep, entries);
    QCOMPARE(seriesOf(view, "epochsChart")[1]->points(), QList<QPointF>({QPointF(2, 3.0)}));
    CompareView next;
    QCOMPARE(next.epochMetric(), QStringLiteral("grad norm"));
    view.setEpochMetric(QStringLiteral("test acc"));
    QCOMPARE(seriesOf(view, "epochsChart")[0]->points(), QList<QPointF>({QPointF(1, 0.25), QPointF(2, 0.5)}));
}

void tst_CompareView::tableIsReadOnly()
{
    CompareView view;
    view.setEntries(kSweep, grid());
    QTableWidget *table = view.table();
    QCOMPARE(table->editTriggers(), QAbstractItemView::NoEditTriggers);
    for (int r = 0; r < table->rowCount(); ++r) {
        for (int c = 0; c < table->columnCount(); ++c)
            QVERIFY(!(table->item(r, c)->flags() & Qt::ItemIsEditable));
    }
    QCOMPARE(table->item(2, column(table, QStringLiteral("learning_rate")))->text(), QStringLiteral("0.3"));
    QCOMPARE(table->item(2, column(table, QStringLiteral("best test acc")))->text(), QStringLiteral("0.700"));
    QCOMPARE(table->item(2, column(table, QStringLiteral("status")))->text(), QStringLiteral("completed"));
}

void tst_CompareView::tableRunGoesToTheForm()
{
    CompareView view;
    view.setEntries(kSweep, grid());
    std::vector<trainlab::ExperimentConfig> asked;
    connect(&view, &CompareView::useConfigRequested, &view, [&asked](const trainlab::ExperimentConfig &c) { asked.push_back(c); });
    QVERIFY(!view.useCurrentRunConfig());   // no row yet
    view.table()->setCurrentCell(3, 1);
    Q_EMIT view.table()->cellDoubleClicked(3, 1);
    view.table()->setCurrentCell(1, 0);
    view.findChild<QAction *>(QStringLiteral("compareUseConfig"))->trigger();
    QCOMPARE(asked.size(), std::size_t(2));
    QCOMPARE(asked[0].learningRate, 0.3);
    QCOMPARE(asked[0].batchSize, 64);
    QCOMPARE(asked[1].learningRate, 0.1);
    QCOMPARE(asked[1].batchSize, 64);
}

void tst_CompareView::randomRunsArePointsAgainstTheRate()
{
    // Drawn at random: each run its own learning rate and momentum.
    std::vector<QueueEntry> entries;
    const double rates[] = {0.004, 0.02, 0.07};
    const char *rateText[] = {"0.004", "0.02", "0.07"};
    const char *momentum[] = {"0.81", "0.55", "0.62"};
    for (int i = 0; i < 3; ++i) {
        QueueEntry e = run(i, 3, {{"learning_rate", rateText[i]}, {"momentum", momentum[i]}}, 0.4 + 0.1 * i, 100.0);
        e.config.learningRate = rates[i];
        entries.push_back(std::move(e));
    }
    CompareView view;
    view.setEntries(kSweep, entries);
    const auto series = view.findChild<QChartView *>(QStringLiteral("learningRateChart"))->chart()->series();
    QCOMPARE(series.size(), 1);
    auto *points = qobject_cast<QScatterSeries *>(series.front());
    QVERIFY(points);
    QCOMPARE(points->points(), QList<QPointF>({QPointF(0.004, 0.4), QPointF(0.02, 0.5), QPointF(0.07, 0.6)}));
    // A grid averages each rate over the other settings: a line stays a line.
    view.setEntries(kSweep, grid());
    QVERIFY(qobject_cast<QLineSeries *>(view.findChild<QChartView *>(QStringLiteral("learningRateChart"))->chart()->series().front()));
}

void tst_CompareView::exportWritesAFile_data()
{
    QTest::addColumn<QString>("kind");
    QTest::newRow("png") << QStringLiteral("png");
    QTest::newRow("svg") << QStringLiteral("svg");
    QTest::newRow("table csv") << QStringLiteral("table");
    QTest::newRow("epochs csv") << QStringLiteral("epochs");
}

void tst_CompareView::exportWritesAFile()
{
    QFETCH(QString, kind);
    QVERIFY(m_dir.isValid());
    CompareView view;
    view.resize(900, 600);
    view.setEntries(kSweep, scaling());
    view.setCurrentTab(CompareView::ScalingTab);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QString path = m_dir.filePath(QStringLiteral("export-%1").arg(kind));
    QString error;
    if (kind == QLatin1String("png")) {
        QVERIFY2(view.saveCurrentChartPng(path, &error), qPrintable(error));
        QVERIFY(QFileInfo(path).size() > 0);
        QImage image(path, "PNG");
        QVERIFY(image.width() > 0);
    } else if (kind == QLatin1String("svg")) {
        QVERIFY2(view.saveCurrentChartSvg(path, &error), qPrintable(error));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray svg = file.readAll();
        QVERIFY(svg.contains("<svg"));
        QVERIFY(svg.contains(kSweep.toUtf8()));
    } else if (kind == QLatin1String("table")) {
        QVERIFY2(view.saveTableCsv(path, &error), qPrintable(error));
        const QStringList lines = fileLines(path);
        QCOMPARE(lines.size(), 1 + 2);
        QVERIFY(lines[0].startsWith(QStringLiteral("index,devices,status,")));
        QVERIFY(lines[0].contains(QStringLiteral("speedup")));
        QVERIFY2(lines[2].startsWith(QStringLiteral("2,\"cpu,cpu\",completed,")), qPrintable(lines[2]));
        QVERIFY2(lines[2].contains(QStringLiteral(",1.8000,2.0000,90.00,")), qPrintable(lines[2]));
    } else {
        QVERIFY2(view.saveEpochsCsv(path, &error), qPrintable(error));
        const QStringList lines = fileLines(path);
        QCOMPARE(lines.size(), 1 + 2 * 2);
        QCOMPARE(lines[0], QStringLiteral("index,devices,epoch,train_loss,train_acc,test_acc,seconds,images_per_second,"
                                          "learning_rate,grad_norm"));
        QCOMPARE(lines[1], QStringLiteral("1,cpu,1,1.000000,0.360000,0.350000,60.000,100.0,,"));
        QCOMPARE(lines[4], QStringLiteral("2,\"cpu,cpu\",2,0.500000,0.710000,0.700000,33.333,180.0,,"));
    }
}

void tst_CompareView::exportToAMissingFolderFails_data()
{
    exportWritesAFile_data();
}

void tst_CompareView::exportToAMissingFolderFails()
{
    QFETCH(QString, kind);
    CompareView view;
    view.setEntries(kSweep, grid());
    view.setCurrentTab(CompareView::LearningRateTab);
    const QString path = m_dir.filePath(QStringLiteral("no/such/folder/export.") + kind);
    QString error;
    bool saved = true;
    if (kind == QLatin1String("png"))
        saved = view.saveCurrentChartPng(path, &error);
    else if (kind == QLatin1String("svg"))
        saved = view.saveCurrentChartSvg(path, &error);
    else if (kind == QLatin1String("table"))
        saved = view.saveTableCsv(path, &error);
    else
        saved = view.saveEpochsCsv(path, &error);
    QVERIFY(!saved);
    QVERIFY2(error.startsWith(path + QStringLiteral(": cannot write")), qPrintable(error));
    QVERIFY(!QFile::exists(path));
}

void tst_CompareView::tableTabHasNoChartToExport()
{
    CompareView view;
    view.setEntries(kSweep, grid());
    const QString path = m_dir.filePath(QStringLiteral("nochart.png"));
    QString error;
    view.setCurrentTab(CompareView::TableTab);
    QVERIFY(!view.findChild<QComboBox *>(QStringLiteral("epochMetric"))->isEnabled());   // the per-epoch chart's choice
    QVERIFY(!view.saveCurrentChartPng(path, &error));
    QVERIFY(!error.isEmpty());
    error.clear();
    view.setCurrentTab(CompareView::ScalingTab);   // the grid has no devices axis: no scaling chart
    QVERIFY(!view.saveCurrentChartSvg(path, &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(!QFile::exists(path));
    view.setCurrentTab(CompareView::EpochsTab);
    QVERIFY(view.findChild<QComboBox *>(QStringLiteral("epochMetric"))->isEnabled());
}

void tst_CompareView::loadSweepOnAnEmptyFolderFails()
{
    QTemporaryDir runs;
    QVERIFY(runs.isValid());
    CompareView view;
    view.setEntries(kSweep, grid());
    QString error;
    QVERIFY(!view.loadSweep(runs.path(), QStringLiteral("missing-sweep"), &error));
    QVERIFY(!error.isEmpty());
    QVERIFY2(error.contains(QStringLiteral("missing-sweep")), qPrintable(error));
    // A failed load leaves the shown sweep as it was.
    QCOMPARE(view.sweepId(), kSweep);
    QCOMPARE(view.epochSeriesCount(), 4);
}

void tst_CompareView::loadSweepReadsMetricsFromRunFolders()
{
    QTemporaryDir runs;
    QVERIFY(runs.isValid());
    const std::string runsDir = runs.path().toStdString();
    const std::string id = kSweep.toStdString();
    QVERIFY(QDir().mkpath(QString::fromStdString(trainlab::sweepDir(runsDir, id))));
    const std::vector<QueueEntry> entries = grid();
    // Run 0's folder has its metrics.csv; run 1's folder is gone: listed all the same, without a curve.
    const std::string runDir = runsDir + "/run-0";
    QVERIFY(QDir().mkpath(QString::fromStdString(runDir)));
    std::string csv = std::string(trainlab::RunRecord::metricsHeader()) + "\n";
    for (const EpochMetrics &m : entries[0].metrics)
        csv += trainlab::RunRecord::metricsRow(m);
    QFile file(QString::fromStdString(runDir + "/metrics.csv"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray::fromStdString(csv));
    file.close();
    {
        trainlab::Queue queue(trainlab::sweepDir(runsDir, id) + "/queue.json");
        queue.setSweepId(id);
        for (int i = 0; i < 2; ++i) {
            QueueEntry e = entries[static_cast<std::size_t>(i)];
            e.runDir = i == 0 ? runDir : runsDir + "/run-1";
            queue.add(e);
        }
        queue.save();
    }
    CompareView view;
    QString error;
    QVERIFY2(view.loadSweep(runs.path(), kSweep, &error), qPrintable(error));
    QCOMPARE(view.sweepId(), kSweep);
    QCOMPARE(view.table()->rowCount(), 2);
    QCOMPARE(view.epochSeriesCount(), 1);
    QCOMPARE(seriesOf(view, "epochsChart").at(0)->points(), QList<QPointF>({QPointF(1, 0.25), QPointF(2, 0.5)}));
    // Neither run reached test accuracy 0.90 (run 0 ended at 0.5, run 1 has no metrics).
    const int toTarget = column(view.table(), QStringLiteral("to 0.90"));
    QVERIFY(toTarget >= 0);
    QCOMPARE(view.table()->item(0, toTarget)->text(), QStringLiteral("-"));
    QCOMPARE(column(view.table(), QStringLiteral("notes")), -1);   // no run has notes: no column for them
    // Notes written later: the table shows their first line, the tooltip and the CSV all of them.
    QFile notesFile(QString::fromStdString(runDir + "/notes.txt"));
    QVERIFY(notesFile.open(QIODevice::WriteOnly));
    notesFile.write("lr too high?\nloss jumped in epoch 2\n");
    notesFile.close();
    QVERIFY(view.loadSweep(runs.path(), kSweep, &error));
    const int notes = column(view.table(), QStringLiteral("notes"));
    QVERIFY(notes >= 0);
    QCOMPARE(view.table()->item(0, notes)->text(), QStringLiteral("lr too high?…"));
    QVERIFY(view.table()->item(0, 0)->toolTip().contains(QStringLiteral("loss jumped in epoch 2")));
    QCOMPARE(view.table()->item(1, notes)->text(), QString());
    const QString path = runs.filePath(QStringLiteral("table.csv"));
    QVERIFY2(view.saveTableCsv(path, &error), qPrintable(error));
    QFile saved(path);
    QVERIFY(saved.open(QIODevice::ReadOnly));
    const QString table = QString::fromUtf8(saved.readAll());
    QVERIFY2(table.contains(QStringLiteral(",\"lr too high?\nloss jumped in epoch 2\"\n")), qPrintable(table));
}

QTEST_MAIN(tst_CompareView)
#include "tst_compareview.moc"
