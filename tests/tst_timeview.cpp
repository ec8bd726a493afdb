#include "ui/timeview.h"

#include <QtTest>

// The "Time" tab: one stacked bar per epoch and rank, the parts as the engine measured them (issue 23).
class tst_TimeView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void barsPerEpochAndRank();
    void oldBarsScrollOut();
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

QTEST_MAIN(tst_TimeView)
#include "tst_timeview.moc"
