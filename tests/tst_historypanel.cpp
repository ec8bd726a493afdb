#include "core/runs/runrecord.h"
#include "ui/accuracychart.h"
#include "ui/historypanel.h"
#include "ui/runhistorymodel.h"

#include <QAction>
#include <QDoubleSpinBox>
#include <QFile>
#include <QMenu>
#include <QMessageBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

using trainlab::HistoryPanel;

class tst_HistoryPanel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void selectionOverlaysRuns();
    void activeRunCannotBeDeleted();
    void exportsSelectedMetrics();
    void useConfigurationAsks();
    void timeToTargetColumn();
    void tooltipSummarizesDevices();

private:
    QString fakeRun(const QString &name, const QList<double> &testAcc);
    QTemporaryDir m_tmp;
    QString m_runsDir;
};

QString tst_HistoryPanel::fakeRun(const QString &name, const QList<double> &testAcc)
{
    trainlab::ExperimentConfig c;
    c.name = name.toStdString();
    c.epochs = static_cast<int>(testAcc.size());
    trainlab::RunRecord record(m_runsDir.toStdString(), c, c.devices);
    trainlab::RunResult result;
    for (int i = 0; i < testAcc.size(); ++i) {
        trainlab::EpochMetrics m{i + 1, 1.0, 0.5, testAcc[i], 1.0, 10.0, {}, 0.0, {}};
        record.commitEpoch(m, std::string());
        result.epochs.push_back(m);
    }
    result.status = trainlab::RunStatus::Completed;
    record.finish(result);
    return QString::fromStdString(record.dir());
}

void tst_HistoryPanel::init()
{
    static int n = 0;
    m_runsDir = m_tmp.filePath(QStringLiteral("runs%1").arg(++n));
}

void tst_HistoryPanel::selectionOverlaysRuns()
{
    fakeRun(QStringLiteral("a"), {0.3, 0.5});
    fakeRun(QStringLiteral("b"), {0.4});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    QCOMPARE(panel.model()->rowCount(), 2);
    QSignalSpy changed(&panel, &HistoryPanel::selectionChanged);
    panel.table()->selectAll();
    QVERIFY(changed.count() >= 1);
    QCOMPARE(chart.overlayCount(), 2);
    QCOMPARE(panel.selectedRuns().size(), 2);
    // A refresh keeps what was selected, and so the overlays.
    panel.refresh();
    QCOMPARE(panel.selectedRows().size(), 2);
    QCOMPARE(chart.overlayCount(), 2);
    panel.table()->clearSelection();
    QCOMPARE(chart.overlayCount(), 0);
}

void tst_HistoryPanel::activeRunCannotBeDeleted()
{
    const QString dir = fakeRun(QStringLiteral("active"), {0.5});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    QMenu menu;
    panel.addActions(&menu, {});
    panel.setRunsDir(m_runsDir);
    panel.table()->selectRow(0);
    auto *del = menu.findChild<QAction *>(QStringLiteral("deleteRunAction"));
    QVERIFY(del && del->isEnabled());
    panel.setActiveRunDir(dir);
    panel.updateActions();
    QVERIFY(!del->isEnabled());
    QVERIFY(!menu.findChild<QAction *>(QStringLiteral("deleteCheckpointsAction"))->isEnabled());
}

void tst_HistoryPanel::exportsSelectedMetrics()
{
    fakeRun(QStringLiteral("x,\"y\""), {0.25, 0.5});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    panel.table()->selectAll();
    const QString path = m_tmp.filePath(QStringLiteral("export.csv"));
    QVERIFY(panel.exportMetricsCsv(path));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().split('\n');
    QCOMPARE(lines.first(), QByteArray("run,name,") + trainlab::RunRecord::metricsHeader());
    QVERIFY2(lines[1].contains(",\"x,\"\"y\"\"\",1,1,0.5,0.25,1,10"), lines[1].constData());
    QVERIFY(lines[2].contains(",2,1,0.5,0.5,1,10"));
}

void tst_HistoryPanel::useConfigurationAsks()
{
    fakeRun(QStringLiteral("reuse me"), {0.5});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    QMenu menu;
    panel.addActions(&menu, {});
    panel.setRunsDir(m_runsDir);
    QStringList used;
    connect(&panel, &HistoryPanel::useConfigRequested, this,
            [&used](const trainlab::ExperimentConfig &c) { used << QString::fromStdString(c.name); });
    panel.table()->selectRow(0);
    menu.actions().first()->trigger();
    QCOMPARE(used, QStringList{QStringLiteral("reuse me")});
}

// DAWNBench's column: each fake epoch takes 1 s; the box under the table moves the target.
void tst_HistoryPanel::timeToTargetColumn()
{
    const QString slow = fakeRun(QStringLiteral("slow"), {0.5, 0.85, 0.92});
    const QString never = fakeRun(QStringLiteral("never"), {0.3});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    auto *model = panel.model();
    const auto cell = [model](const QString &dir) {
        return model->data(model->index(model->rowOfDir(dir), trainlab::RunHistoryModel::ToTarget)).toString();
    };
    QCOMPARE(model->headerData(trainlab::RunHistoryModel::ToTarget, Qt::Horizontal).toString(), QStringLiteral("to 0.90"));
    QCOMPARE(cell(slow), QStringLiteral("3.0 s (3)"));
    QCOMPARE(cell(never), QStringLiteral("–"));
    panel.targetBox()->setValue(0.8);
    QCOMPARE(model->headerData(trainlab::RunHistoryModel::ToTarget, Qt::Horizontal).toString(), QStringLiteral("to 0.80"));
    QCOMPARE(cell(slow), QStringLiteral("2.0 s (2)"));
    panel.targetBox()->setValue(0.3);
    QCOMPARE(cell(never), QStringLiteral("1.0 s (1)"));
}

// An old run's devices.csv, summed over the run in the history's tooltip: sample-weighted means, peaks of peaks.
void tst_HistoryPanel::tooltipSummarizesDevices()
{
    const QString dir = fakeRun(QStringLiteral("sampled"), {0.5, 0.6});
    const QString plain = fakeRun(QStringLiteral("older"), {0.5});
    QFile csv(dir + QStringLiteral("/devices.csv"));
    QVERIFY(csv.open(QIODevice::WriteOnly));
    csv.write(QByteArray(trainlab::RunRecord::devicesHeader()) + "\n"
              "1,cpu,,2 cores,1,90.0,512.0,24000.0,,,0\n1,gpu1,cuda:0,H,1,80.0,2048.0,8192.0,60,300.0,0\n"
              "2,cpu,,2 cores,3,50.0,1024.0,24000.0,,,0\n2,gpu1,cuda:0,H,3,40.0,1024.0,8192.0,70,100.0,0\n");
    csv.close();
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    auto *model = panel.model();
    const QString tip = model->data(model->index(model->rowOfDir(dir), 0), Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("Devices over 2 epochs:\n  cpu: mean 60% of 2 cores, peak 1.0 GiB resident\n"
                                         "  gpu1 (cuda:0) H: mean 50%, peak 2.0 of 8.0 GiB, 70 C, 150 W")),
             qPrintable(tip));
    const QString older = model->data(model->index(model->rowOfDir(plain), 0), Qt::ToolTipRole).toString();
    QVERIFY2(!older.contains(QStringLiteral("Devices")), qPrintable(older));
}

QTEST_MAIN(tst_HistoryPanel)
#include "tst_historypanel.moc"
