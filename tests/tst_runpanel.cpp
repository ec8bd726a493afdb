#include "ui/runpanel.h"

#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>

using trainlab::RunPanel;

class tst_RunPanel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void progressAndEta();
    void resumedRunLeavesEarlierEpochsOutOfEta();
    void finishedRunSaysHowItEnded();
    void buttonsFollowState();
};

namespace {

template<typename T>
T *part(QWidget *root, const char *name)
{
    auto *w = root->findChild<T *>(QLatin1String(name));
    if (!w)
        qFatal("no %s", name);
    return w;
}

trainlab::BatchProgress batch(int epoch, int epochs, long long b, long long batches)
{
    trainlab::BatchProgress p;
    p.epoch = epoch;
    p.epochs = epochs;
    p.batch = b;
    p.batches = batches;
    p.loss = 0.5;
    p.imagesPerSecond = 123.4;
    return p;
}

} // namespace

void tst_RunPanel::progressAndEta()
{
    RunPanel panel;
    panel.prepare(4, {"cpu"});
    QCOMPARE(part<QLabel>(panel.progress(), "epochLabel")->text(), QStringLiteral("Loading data…"));
    QTest::qWait(200);
    panel.onBatch(batch(2, 4, 5, 10));
    QCOMPARE(part<QLabel>(panel.progress(), "epochLabel")->text(), QStringLiteral("Epoch 2 of 4"));
    QCOMPARE(part<QProgressBar>(panel.progress(), "batchProgress")->value(), 5);
    QCOMPARE(part<QProgressBar>(panel.progress(), "batchProgress")->maximum(), 10);
    QCOMPARE(part<QLabel>(panel.progress(), "speedLabel")->text(), QStringLiteral("123 img/s"));
    // 15 of 40 batches done: the rest takes 25/15 of the time so far.
    QVERIFY2(part<QLabel>(panel.progress(), "timeLabel")->text().startsWith(QStringLiteral("elapsed 0:00, ETA 0:0")),
             qPrintable(part<QLabel>(panel.progress(), "timeLabel")->text()));
}

void tst_RunPanel::resumedRunLeavesEarlierEpochsOutOfEta()
{
    RunPanel panel;
    panel.prepare(10, {"cpu"});
    trainlab::RunInfo info;
    info.epochsDone = 8;
    info.epochs = 10;
    panel.onRunStarted(info);
    QVERIFY(!panel.log()->toPlainText().isEmpty());
    QTest::qWait(1100);
    // The first batch of epoch 9 of 10, two epochs left: about 20 times what one batch took, not 1/81.
    panel.onBatch(batch(9, 10, 1, 10));
    const QString text = part<QLabel>(panel.progress(), "timeLabel")->text();
    const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("ETA (\\d+):(\\d+)")).match(text);
    QVERIFY2(m.hasMatch(), qPrintable(text));
    QVERIFY2(m.captured(1).toInt() * 60 + m.captured(2).toInt() >= 18, qPrintable(text));
}

void tst_RunPanel::finishedRunSaysHowItEnded()
{
    RunPanel panel;
    panel.prepare(3, {"cpu", "cpu"});
    trainlab::EpochMetrics m{1, 0.5, 0.6, 0.7, 2.0, 100.0, {}, 0.0, {}, 0.0, 0.0};
    panel.onEpoch(m);
    trainlab::RunResult r;
    r.status = trainlab::RunStatus::Stopped;
    r.epochs = {m};
    r.runDir = "/tmp/run-x";
    panel.onFinished(r);
    QCOMPARE(part<QLabel>(panel.progress(), "epochLabel")->text(), QStringLiteral("Run stopped after 1 of 3 epochs"));
    QVERIFY(part<QLabel>(panel.progress(), "timeLabel")->text().startsWith(QStringLiteral("took ")));
    const QString log = panel.log()->toPlainText();
    QVERIFY2(log.contains(QStringLiteral("epoch 1/3")), qPrintable(log));
    QVERIFY2(log.contains(QStringLiteral("run kept in /tmp/run-x")), qPrintable(log));
    QCOMPARE(panel.devicesLabel()->text(), QStringLiteral("Training on cpu, cpu"));
    panel.onIdle();
    QCOMPARE(panel.devicesLabel()->text(), QStringLiteral("Last run on cpu, cpu"));
}

void tst_RunPanel::buttonsFollowState()
{
    RunPanel panel;
    QSignalSpy starts(&panel, &RunPanel::startClicked);
    panel.setEnabled(true, false);
    auto *start = part<QPushButton>(panel.buttons(), "startButton");
    auto *stop = part<QPushButton>(panel.buttons(), "stopButton");
    QVERIFY(start->isEnabled() && !stop->isEnabled());
    QTest::mouseClick(start, Qt::LeftButton);
    QCOMPARE(starts.count(), 1);
    panel.setEnabled(false, true);
    QVERIFY(!start->isEnabled() && stop->isEnabled());
}

QTEST_MAIN(tst_RunPanel)
#include "tst_runpanel.moc"
