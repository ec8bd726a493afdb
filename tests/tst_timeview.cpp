#include "core/runs/runrecord.h"
#include "ui/timeview.h"

#include <QBarCategoryAxis>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLegend>
#include <QLegendMarker>
#include <QTemporaryDir>
#include <QTest>

// The "Time" tab: one stacked bar per epoch and rank, the parts as the engine measured them (issue 23).
class tst_TimeView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void barsPerEpochAndRank();
    void oldBarsScrollOut();
    void showsARunFromItsFolder();
    void warmupBar();
};

namespace {

trainlab::EpochMetrics epoch(int n, int ranks)
{
    trainlab::EpochMetrics m;
    m.epoch = n;
    for (int r = 0; r < ranks; ++r)
        m.time.push_back({r, 0.01 * n, 1.0 + r, 0.5 * (r + 1), 0.02, 0.03});
    return m;
}

} // namespace

void tst_TimeView::barsPerEpochAndRank()
{
    trainlab::TimeView view;
    QCOMPARE(view.barCount(), 0);
    view.addEpoch(epoch(1, 2));
    view.addEpoch(epoch(2, 2));
    view.addEpoch(trainlab::EpochMetrics{});   // a GPU epoch: nothing measured, nothing drawn
    QCOMPARE(view.barCount(), 4);
    QCOMPARE(view.part(1, 1), 2.0);    // epoch 1, rank 1: compute
    QCOMPARE(view.part(2, 3), 1.0);    // epoch 2, rank 1: all-reduce
    QCOMPARE(view.part(0, 2), 0.02);   // epoch 2, rank 0: data
    QVERIFY(view.devicesText().isEmpty());
    trainlab::EpochMetrics withDevices = epoch(3, 1);
    trainlab::DeviceEpochStats cpu;
    cpu.id = "cpu";
    cpu.name = "2 cores";
    cpu.meanUtilization = 180.0;
    cpu.peakMemory = std::uint64_t(3) << 29;
    withDevices.devices.push_back(cpu);
    view.addEpoch(withDevices);
    QCOMPARE(view.devicesText(), QStringLiteral("Epoch 3 on this machine's devices: cpu: mean 180% of 2 cores, peak 1.5 GiB resident"));
    view.clear();
    QCOMPARE(view.barCount(), 0);
    QVERIFY(view.devicesText().isEmpty());
}

void tst_TimeView::oldBarsScrollOut()
{
    trainlab::TimeView view;
    for (int e = 1; e <= 30; ++e)
        view.addEpoch(epoch(e, 2));
    QCOMPARE(view.barCount(), 40);
    QCOMPARE(view.part(0, 39), 0.30);   // the newest bar is epoch 30's rank 1
}

// A run in the history: its timing.csv's bars and its devices.csv over the whole run; saved as PNG or SVG.
void tst_TimeView::showsARunFromItsFolder()
{
    QTemporaryDir tmp;
    trainlab::ExperimentConfig c;
    c.name = "old";
    c.epochs = 2;
    trainlab::RunRecord record(tmp.filePath(QStringLiteral("runs")).toStdString(), c, c.devices);
    trainlab::RunResult result;
    for (int e = 1; e <= 2; ++e) {
        result.epochs.push_back(epoch(e, 2));
        record.commitEpoch(result.epochs.back(), std::string());
    }
    result.status = trainlab::RunStatus::Completed;
    record.finish(result);
    const QString dir = QString::fromStdString(record.dir());
    QFile devices(dir + QStringLiteral("/devices.csv"));
    QVERIFY(devices.open(QIODevice::WriteOnly));
    devices.write(QByteArray(trainlab::RunRecord::devicesHeader()) + "\n1,cpu,,2 cores,1,100.0,512.0,,,,0\n2,cpu,,2 cores,3,60.0,1024.0,,,,0\n");
    devices.close();

    trainlab::TimeView view;
    view.addEpoch(epoch(7, 1));
    view.showRun(dir);
    QCOMPARE(view.barCount(), 4);
    QCOMPARE(view.part(2, 3), 1.0);   // epoch 2, rank 1: all-reduce
    QCOMPARE(view.part(1, 0), 1.0);   // epoch 1, rank 0: compute
    QCOMPARE(view.devicesText(), QFileInfo(dir).fileName() + QStringLiteral(", whole run: cpu: mean 70% of 2 cores, peak 1.0 GiB resident"));
    // The history's refresh after a run re-selects the same run: the bars of the run that just ended stay.
    view.followSelection(dir, true);
    view.clear();
    view.addEpoch(epoch(9, 1));
    view.followSelection(dir, false);
    QCOMPARE(view.barCount(), 1);
    view.followSelection(QString(), false);
    view.followSelection(dir, false);
    QCOMPARE(view.barCount(), 4);
    view.showRun(tmp.filePath(QStringLiteral("gone")));
    QCOMPARE(view.barCount(), 0);
    QVERIFY(view.devicesText().isEmpty());

    view.resize(400, 300);
    QString error;
    QVERIFY2(view.save(tmp.filePath(QStringLiteral("time.png")), &error), qPrintable(error));
    QCOMPARE(QImage(tmp.filePath(QStringLiteral("time.png"))).size(), QSize(800, 600));
    QVERIFY2(view.save(tmp.filePath(QStringLiteral("time.SVG")), &error), qPrintable(error));
    QFile svg(tmp.filePath(QStringLiteral("time.SVG")));
    QVERIFY(svg.open(QIODevice::ReadOnly) && svg.readAll().contains("<svg"));
    QVERIFY(!view.save(tmp.filePath(QStringLiteral("no/such/time.png")), &error));
    QVERIFY2(error.contains(QStringLiteral("no/such/time.png")), qPrintable(error));
}

// The warm-up before epoch 1 is a bar of its own, live and from a run's folder (summary.json's warmup_seconds).
void tst_TimeView::warmupBar()
{
    trainlab::TimeView view;
    trainlab::EpochMetrics first = epoch(1, 1);
    first.warmupSeconds = 2.5;
    view.addEpoch(first);
    view.addEpoch(epoch(2, 1));
    QCOMPARE(view.barCount(), 3);
    QCOMPARE(view.part(5, 0), 2.5);
    QCOMPARE(view.part(1, 0), 0.0);
    QCOMPARE(view.part(1, 1), 1.0);   // epoch 1: compute
    QCOMPARE(view.part(5, 1), 0.0);
    QCOMPARE(view.chart()->legend()->markers().back()->isVisible(), true);
    // A resumed session warms up again: its bar keeps a name of its own (the axis drops repeated ones).
    trainlab::EpochMetrics resumed = epoch(3, 1);
    resumed.warmupSeconds = 1.5;
    view.addEpoch(resumed);
    QCOMPARE(view.barCount(), 5);
    QCOMPARE(view.part(5, 3), 1.5);
    auto *axis = qobject_cast<QBarCategoryAxis *>(view.chart()->axes(Qt::Horizontal).value(0));
    QVERIFY(axis);
    QCOMPARE(axis->categories(), QStringList({"warm-up", "e1", "e2", "warm-up e3", "e3"}));
    view.clear();
    view.addEpoch(epoch(1, 1));
    QCOMPARE(view.chart()->legend()->markers().back()->isVisible(), false);

    QTemporaryDir tmp;
    trainlab::ExperimentConfig c;
    c.epochs = 1;
    QString dir;
    {
        trainlab::RunRecord record(tmp.filePath(QStringLiteral("runs")).toStdString(), c, c.devices);
        dir = QString::fromStdString(record.dir());
        first.warmupSeconds = 3.25;
        record.commitEpoch(first, std::string());
    }
    view.showRun(dir);
    QCOMPARE(view.barCount(), 2);
    QCOMPARE(view.part(5, 0), 3.25);
    QCOMPARE(view.part(1, 1), 1.0);
}

QTEST_MAIN(tst_TimeView)
#include "tst_timeview.moc"
