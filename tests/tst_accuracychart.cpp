#include "ui/accuracychart.h"

#include <QCheckBox>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLegend>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QValueAxis>
#include <QWidget>

#include <memory>

using trainlab::AccuracyChart;
using trainlab::EpochMetrics;

namespace {

EpochMetrics epoch(int n, double testAcc)
{
    EpochMetrics m;
    m.epoch = n;
    m.testAcc = testAcc;
    m.trainAcc = testAcc + 0.05;
    m.trainLoss = 2.0 / n;
    return m;
}

} // namespace

class tst_AccuracyChart : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void epochsArriveBatched();
    void beginRunClears();
    void lossDrawnWithinEpoch();
    void epochAxisBoundedInTicks_data();
    void epochAxisBoundedInTicks();
    void overlaysAreNamedSeries();
    void trainCurvesCanBeHidden();
    void learningRateOnItsOwnAxis();
    void learningRateShowsForASchedule();
    void gradNormOnItsOwnAxis();
    void exportWritesAFile_data();
    void exportWritesAFile();
    void exportToAMissingFolderFails();

private:
    QTemporaryDir m_dir;
};

void tst_AccuracyChart::initTestCase()
{
    qputenv("XDG_CONFIG_HOME", m_dir.filePath(QStringLiteral("config")).toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("TrainLabTest"));
    QCoreApplication::setApplicationName(QStringLiteral("AccuracyChartTest"));
}

void tst_AccuracyChart::epochsArriveBatched()
{
    AccuracyChart chart;
    chart.beginRun(QStringLiteral("demo"), 5);
    chart.addEpoch(epoch(1, 0.40));
    chart.addEpoch(epoch(2, 0.71));
    chart.addEpoch(epoch(3, 0.65));
    // Nothing is drawn until the single-shot timer fires: three epochs, one redraw.
    QCOMPARE(chart.livePointCount(), 0);
    QTRY_COMPARE(chart.livePointCount(), 3);
    QCOMPARE(chart.bestPoint(), QPointF(2, 0.71));
    chart.addEpoch(epoch(4, 0.80));
    QTRY_COMPARE(chart.livePointCount(), 4);
    QCOMPARE(chart.bestPoint(), QPointF(4, 0.80));
    QVERIFY(chart.seriesNames().contains(QStringLiteral("demo test acc")));
}

void tst_AccuracyChart::beginRunClears()
{
    AccuracyChart chart;
    chart.beginRun(QStringLiteral("a"), 2);
    chart.addEpoch(epoch(1, 0.5));
    QTRY_COMPARE(chart.livePointCount(), 1);
    chart.addEpoch(epoch(2, 0.6));
    chart.beginRun(QStringLiteral("b"), 2);   // the pending epoch belonged to run a
    QTest::qWait(100);
    QCOMPARE(chart.livePointCount(), 0);
    QVERIFY(chart.bestPoint().isNull());
}

// d2l's Animator adds the train loss several times an epoch: a long epoch is not a still picture (issue 21).
void tst_AccuracyChart::lossDrawnWithinEpoch()
{
    AccuracyChart chart;
    chart.beginRun(QStringLiteral("slow"), 2);
    for (int b = 1; b <= 4; ++b) {
        trainlab::BatchProgress p;
        p.epoch = 1;
        p.epochs = 2;
        p.batch = b * 25;
        p.batches = 100;
        p.loss = 2.0 - 0.1 * b;
        chart.addBatch(p);
    }
    QTRY_COMPARE(chart.lossPointCount(), 4);
    QCOMPARE(chart.livePointCount(), 0);
    auto *x = qobject_cast<QValueAxis *>(chart.chart()->axes(Qt::Horizontal).first());
    QCOMPARE(x->min(), 0.0);   // the first epoch's points lie between 0 and 1
    chart.addEpoch(epoch(1, 0.5));
    QTRY_COMPARE(chart.livePointCount(), 1);
    QCOMPARE(chart.lossPointCount(), 5);
    chart.beginRun(QStringLiteral("next"), 2);
    QCOMPARE(chart.lossPointCount(), 0);
}

void tst_AccuracyChart::epochAxisBoundedInTicks_data()
{
    QTest::addColumn<int>("lastEpoch");
    QTest::addColumn<int>("points");
    QTest::newRow("10,000 epochs") << 10000 << 10000;
    QTest::newRow("epoch 2147483647") << 2147483647 << 2;
}

// Qt Charts makes a tick item per interval: a huge epoch count must not make millions of them (issue 27).
void tst_AccuracyChart::epochAxisBoundedInTicks()
{
    QFETCH(int, lastEpoch);
    QFETCH(int, points);
    AccuracyChart chart;
    chart.resize(800, 500);
    chart.show();
    QList<QPointF> curve;
    for (int i = 0; i < points; ++i)
        curve << QPointF(i + 1 == points ? lastEpoch : i + 1, 0.5);
    QElapsedTimer timer;
    timer.start();
    chart.setOverlays({{QStringLiteral("long"), curve}});
    chart.grab();
    chart.beginRun(QStringLiteral("short"), 2);
    chart.grab();
    QVERIFY2(timer.elapsed() < 10000, std::to_string(timer.elapsed()).c_str());
    auto *x = qobject_cast<QValueAxis *>(chart.chart()->axes(Qt::Horizontal).first());
    QVERIFY(x);
    QCOMPARE(x->max(), double(lastEpoch));
    QVERIFY2((x->max() - x->min()) / x->tickInterval() <= 11.0, std::to_string(x->tickInterval()).c_str());
}

void tst_AccuracyChart::overlaysAreNamedSeries()
{
    AccuracyChart chart;
    chart.setOverlays({{QStringLiteral("run one"), {QPointF(1, 0.3), QPointF(2, 0.5)}},
                       {QStringLiteral("run two"), {QPointF(1, 0.4)}}});
    QCOMPARE(chart.overlayCount(), 2);
    QVERIFY(chart.seriesNames().contains(QStringLiteral("run one")));
    QVERIFY(chart.seriesNames().contains(QStringLiteral("run two")));
    // Overlaid runs move the legend to the side, where each name has a line of its own; without them it goes back under.
    QCOMPARE(chart.chart()->legend()->alignment(), Qt::AlignRight);
    chart.setOverlays({{QStringLiteral("run three"), {}}});
    QCOMPARE(chart.overlayCount(), 1);
    QVERIFY(!chart.seriesNames().contains(QStringLiteral("run one")));
    chart.setOverlays({});
    QCOMPARE(chart.chart()->legend()->alignment(), Qt::AlignBottom);
}

void tst_AccuracyChart::trainCurvesCanBeHidden()
{
    AccuracyChart chart;
    QVERIFY(chart.seriesNames().contains(QStringLiteral("train acc")));
    QVERIFY(chart.seriesNames().contains(QStringLiteral("train loss")));
    chart.setTrainAccVisible(false);
    chart.setLossVisible(false);
    QVERIFY(!chart.seriesNames().contains(QStringLiteral("train acc")));
    QVERIFY(!chart.seriesNames().contains(QStringLiteral("train loss")));
}

void tst_AccuracyChart::learningRateOnItsOwnAxis()
{
    AccuracyChart chart;
    QVERIFY(!chart.seriesNames().contains(QStringLiteral("learning rate")));
    chart.setLearningRateVisible(true);
    QVERIFY(chart.seriesNames().contains(QStringLiteral("learning rate")));
    chart.beginRun(QStringLiteral("demo"), 3);
    EpochMetrics first = epoch(1, 0.4), second = epoch(2, 0.6), unknown = epoch(3, 0.7);
    first.learningRate = 0.4;
    second.learningRate = 0.05;
    chart.addEpoch(first);
    chart.addEpoch(second);
    chart.addEpoch(unknown);
    chart.flush();
    // An epoch whose rate is unknown (0, an older record) draws no point.
    QCOMPARE(chart.learningRatePointCount(), 2);
    QValueAxis *lrAxis = nullptr;
    for (QAbstractAxis *axis : chart.chart()->axes(Qt::Vertical)) {
        if (axis->titleText() == QStringLiteral("learning rate"))
            lrAxis = qobject_cast<QValueAxis *>(axis);
    }
    QVERIFY(lrAxis);
    QVERIFY(lrAxis->max() >= 0.4 && lrAxis->max() < 0.5);
    chart.beginRun(QStringLiteral("next"), 3);
    QCOMPARE(chart.learningRatePointCount(), 0);
    QVERIFY(chart.isLearningRateVisible());   // chosen by the user: kept
}

void tst_AccuracyChart::gradNormOnItsOwnAxis()
{
    auto *chart = new AccuracyChart;
    std::unique_ptr<QWidget> area(AccuracyChart::withOptions(chart, new QWidget));
    auto *show = area->findChild<QCheckBox *>(QStringLiteral("showGradNorm"));
    QVERIFY(show);
    QVERIFY(!show->isChecked());
    QVERIFY(!chart->seriesNames().contains(QStringLiteral("grad norm")));
    chart->beginRun(QStringLiteral("demo"), 3);
    EpochMetrics first = epoch(1, 0.4), second = epoch(2, 0.6), unknown = epoch(3, 0.7);
    first.gradNorm = 6.5;
    second.gradNorm = 3.25;
    chart->addEpoch(first);
    chart->addEpoch(second);
    chart->addEpoch(unknown);
    chart->flush();
    // An epoch whose norm is unknown (0, a run recorded before metrics.csv kept it) draws no point.
    QCOMPARE(chart->gradNormPointCount(), 2);
    show->setChecked(true);
    QVERIFY(chart->seriesNames().contains(QStringLiteral("grad norm")));
    QValueAxis *normAxis = nullptr;
    for (QAbstractAxis *axis : chart->chart()->axes(Qt::Vertical)) {
        if (axis->titleText() == QStringLiteral("grad norm"))
            normAxis = qobject_cast<QValueAxis *>(axis);
    }
    QVERIFY(normAxis && normAxis->isVisible());
    QVERIFY2(normAxis->max() >= 6.5 && normAxis->max() <= 10.0, qPrintable(QString::number(normAxis->max())));
    chart->beginRun(QStringLiteral("next"), 3);
    QCOMPARE(chart->gradNormPointCount(), 0);
    // The next session's chart shows what the user chose: the norm on, train acc off.
    area->findChild<QCheckBox *>(QStringLiteral("showTrainAcc"))->setChecked(false);
    auto *again = new AccuracyChart;
    std::unique_ptr<QWidget> next(AccuracyChart::withOptions(again, new QWidget));
    QVERIFY(next->findChild<QCheckBox *>(QStringLiteral("showGradNorm"))->isChecked());
    QVERIFY(!next->findChild<QCheckBox *>(QStringLiteral("showTrainAcc"))->isChecked());
    QVERIFY(again->seriesNames().contains(QStringLiteral("grad norm")));
    QVERIFY(!again->seriesNames().contains(QStringLiteral("train acc")));
    show->setChecked(false);
    QVERIFY(!chart->seriesNames().contains(QStringLiteral("grad norm")));
    QVERIFY(!normAxis->isVisible());
    area->findChild<QCheckBox *>(QStringLiteral("showTrainAcc"))->setChecked(true);
}

void tst_AccuracyChart::learningRateShowsForASchedule()
{
    AccuracyChart chart;
    QSignalSpy shown(&chart, &AccuracyChart::learningRateVisibleChanged);
    chart.beginRun(QStringLiteral("constant"), 2);
    EpochMetrics m = epoch(1, 0.4);
    m.learningRate = 0.1;
    chart.addEpoch(m);
    m.epoch = 2;
    chart.addEpoch(m);
    chart.flush();
    QVERIFY(!chart.isLearningRateVisible());   // a constant rate is not worth an axis
    chart.beginRun(QStringLiteral("cosine"), 2);
    chart.addEpoch(m);
    m.epoch = 3;
    m.learningRate = 0.05;
    chart.addEpoch(m);
    chart.flush();
    QVERIFY(chart.isLearningRateVisible());
    QCOMPARE(shown.count(), 1);
    QCOMPARE(shown.last().first().toBool(), true);
    chart.beginRun(QStringLiteral("constant again"), 2);
    QVERIFY(!chart.isLearningRateVisible());
    // Once the user hides it, a schedule no longer brings it back.
    chart.setLearningRateVisible(false);
    chart.addEpoch(m);
    m.epoch = 4;
    m.learningRate = 0.01;
    chart.addEpoch(m);
    chart.flush();
    QVERIFY(!chart.isLearningRateVisible());
}

void tst_AccuracyChart::exportWritesAFile_data()
{
    QTest::addColumn<QString>("file");
    QTest::newRow("png") << "chart.png";
    QTest::newRow("svg") << "chart.svg";
}

void tst_AccuracyChart::exportWritesAFile()
{
    QFETCH(QString, file);
    AccuracyChart chart;
    chart.resize(640, 400);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.beginRun(QStringLiteral("demo"), 3);
    chart.addEpoch(epoch(1, 0.4));
    QTRY_COMPARE(chart.livePointCount(), 1);
    const QString path = m_dir.filePath(file);
    QString error;
    const bool png = file.endsWith(QLatin1String(".png"));
    QVERIFY2(png ? chart.savePng(path, &error) : chart.saveSvg(path, &error), qPrintable(error));
    if (png) {
        const QImage image(path);
        QCOMPARE(image.size(), QSize(1280, 800));
        // Not a blank picture: axes, labels and the curve's blue are drawn.
        QSet<QRgb> colours;
        bool blue = false;
        for (int y = 0; y < image.height(); y += 2) {
            for (int x = 0; x < image.width(); x += 2) {
                const QRgb p = image.pixel(x, y);
                colours.insert(p);
                blue |= qBlue(p) > 150 && qRed(p) < 80 && qGreen(p) < 160;
            }
        }
        QVERIFY2(colours.size() > 20, qPrintable(QString::number(colours.size())));
        QVERIFY(blue);
        image.save(QDir::temp().filePath(QStringLiteral("tst_accuracychart.png")));
    } else {
        QFile svg(path);
        QVERIFY(svg.open(QIODevice::ReadOnly));
        const QByteArray text = svg.readAll();
        QVERIFY(text.contains("<svg"));
        QVERIFY(text.contains("test acc"));
    }
}

void tst_AccuracyChart::exportToAMissingFolderFails()
{
    AccuracyChart chart;
    const QString path = m_dir.filePath(QStringLiteral("no/such/folder/chart.png"));
    QString error;
    QVERIFY(!chart.savePng(path, &error));
    QVERIFY2(error.startsWith(path + QStringLiteral(": cannot write")), qPrintable(error));
    QVERIFY(!QFile::exists(path));
}

QTEST_MAIN(tst_AccuracyChart)
#include "tst_accuracychart.moc"
