#include "core/runs/runrecord.h"
#include "ui/accuracychart.h"
#include "ui/compareview.h"
#include "ui/historypanel.h"
#include "ui/runhistorymodel.h"

#include <QAction>
#include <QApplication>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMap>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollBar>
#include <QSet>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <algorithm>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

using trainlab::HistoryPanel;
using trainlab::RunHistoryModel;

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
    void recipeAndWarmup();
    void filterNarrowsTheTable_data();
    void filterNarrowsTheTable();
    void sortsNumbersAsNumbers();
    void notesEditedShownAndFound();
    void compareSelectedRuns();
    void columnsShownMovedAndKept();
    void deleteGoesToTheTrashFirst();
    void followsRunsOfOtherProcesses();
    void refreshKeepsThePlace();

private:
    QString fakeRun(const QString &name, const QList<double> &testAcc, double epochSeconds = 1.0,
                    trainlab::RunStatus status = trainlab::RunStatus::Completed, const std::string &precision = "fp32");
    // The Name column as the table shows it, top to bottom.
    static QStringList shownNames(const HistoryPanel &panel);
    QTemporaryDir m_tmp;
    QString m_runsDir;
};

QString tst_HistoryPanel::fakeRun(const QString &name, const QList<double> &testAcc, double epochSeconds,
                                  trainlab::RunStatus status, const std::string &precision)
{
    trainlab::ExperimentConfig c;
    c.name = name.toStdString();
    c.precision = precision;
    c.epochs = std::max(1, static_cast<int>(testAcc.size()));
    trainlab::RunRecord record(m_runsDir.toStdString(), c, c.devices);
    trainlab::RunResult result;
    for (int i = 0; i < testAcc.size(); ++i) {
        trainlab::EpochMetrics m{i + 1, 1.0, 0.5, testAcc[i], epochSeconds, 10.0, {}, 0.0, {}, 0.0, 0.0};
        record.commitEpoch(m, std::string());
        result.epochs.push_back(m);
    }
    result.status = status;
    if (status == trainlab::RunStatus::Failed)
        result.error = "out of memory";
    record.finish(result);
    return QString::fromStdString(record.dir());
}

QStringList tst_HistoryPanel::shownNames(const HistoryPanel &panel)
{
    QStringList names;
    const QAbstractItemModel *shown = panel.table()->model();
    for (int row = 0; row < shown->rowCount(); ++row)
        names << shown->index(row, trainlab::RunHistoryModel::Name).data().toString();
    return names;
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

namespace {

// Splits a CSV line at the commas outside quotes.
QStringList csvFields(const QByteArray &line)
{
    QStringList fields{QString()};
    bool quoted = false;
    for (const char c : line) {
        if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted)
            fields << QString();
        else
            fields.last() += QLatin1Char(c);
    }
    return fields;
}

} // namespace

// One table for the selected runs: metrics.csv's columns with the learning rate, the time split (the mean over
// the ranks; empty where not measured), and devices.csv's rows in their own table.
void tst_HistoryPanel::exportsSelectedMetrics()
{
    fakeRun(QStringLiteral("x,\"y\""), {0.25, 0.5});
    trainlab::ExperimentConfig c;
    c.name = "timed";
    c.epochs = 1;
    trainlab::RunRecord record(m_runsDir.toStdString(), c, c.devices);
    trainlab::EpochMetrics m{1, 2.0, 0.4, 0.75, 3.0, 20.0, {{0, 0.1, 2.0, 0.5, 0.2, 0.2}, {1, 0.3, 2.0, 0.3, 0.2, 0.2}}, 0.05, {}, 0.0, 0.0};
    record.commitEpoch(m, std::string());
    trainlab::RunResult result;
    result.epochs.push_back(m);
    result.status = trainlab::RunStatus::Completed;
    record.finish(result);
    const QString timed = QString::fromStdString(record.dir());
    QFile devices(timed + QStringLiteral("/devices.csv"));
    QVERIFY(devices.open(QIODevice::WriteOnly));
    devices.write(QByteArray(trainlab::RunRecord::devicesHeader()) + "\n1,cpu,,2 cores,3,90.0,512.0,24000.0,,,0\n");
    devices.close();

    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    panel.table()->selectAll();
    const QString path = m_tmp.filePath(QStringLiteral("export.csv"));
    QVERIFY(panel.exportMetricsCsv(path));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QList<QByteArray> lines = f.readAll().split('\n');
    QCOMPARE(lines.takeLast(), QByteArray());
    QCOMPARE(lines.size(), 4);
    const QStringList header = csvFields(lines.takeFirst());
    QMap<QString, QStringList> byRun;
    for (const QByteArray &line : std::as_const(lines)) {
        const QStringList fields = csvFields(line);
        QCOMPARE(fields.size(), header.size());
        byRun[fields[1] + fields[2]] = fields;
    }
    const auto field = [&](const QString &key, const char *column) { return byRun[key].value(header.indexOf(QLatin1String(column))); };
    QCOMPARE(field(QStringLiteral("x,y1"), "test_acc").toDouble(), 0.25);
    QCOMPARE(field(QStringLiteral("x,y2"), "test_acc").toDouble(), 0.5);
    QCOMPARE(field(QStringLiteral("x,y2"), "compute_seconds"), QString());
    QCOMPARE(field(QStringLiteral("x,y2"), "ranks"), QStringLiteral("0"));
    QCOMPARE(field(QStringLiteral("timed1"), "learning_rate").toDouble(), 0.05);
    QCOMPARE(field(QStringLiteral("timed1"), "data_seconds").toDouble(), 0.2);
    QCOMPARE(field(QStringLiteral("timed1"), "allreduce_seconds").toDouble(), 0.4);
    QCOMPARE(field(QStringLiteral("timed1"), "ranks"), QStringLiteral("2"));
    QCOMPARE(field(QStringLiteral("timed1"), "run"), QFileInfo(timed).fileName());

    f.close();
    QVERIFY(panel.exportDevicesCsv(path));
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    const QByteArray devicesCsv = f.readAll();
    QCOMPARE(devicesCsv, QByteArray("run,run_name,") + trainlab::RunRecord::devicesHeader() + "\n" + QFileInfo(timed).fileName().toUtf8()
                             + ",\"timed\",1,cpu,,2 cores,3,90.0,512.0,24000.0,,,0\n");
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

    // A refresh reads a metrics.csv again when it changed, and only then: an untouched file is not re-read.
    panel.targetBox()->setValue(0.9);
    trainlab::EpochMetrics better{1, 1.0, 0.5, 0.95, 2.0, 10.0, {}, 0.0, {}, 0.0, 0.0};
    QFile rewritten(never + QStringLiteral("/metrics.csv"));
    QVERIFY(rewritten.open(QIODevice::WriteOnly));
    rewritten.write(QByteArray(trainlab::RunRecord::metricsHeader()) + '\n' + QByteArray::fromStdString(trainlab::RunRecord::metricsRow(better)));
    rewritten.close();
    const std::string slowMetrics = (slow + QStringLiteral("/metrics.csv")).toStdString();
    const auto slowTime = std::filesystem::last_write_time(slowMetrics);
    QFile garbled(QString::fromStdString(slowMetrics));
    QVERIFY(garbled.open(QIODevice::ReadWrite));
    const qint64 size = garbled.size();
    garbled.seek(0);
    garbled.write(QByteArray(size, 'x'));
    garbled.close();
    std::filesystem::last_write_time(slowMetrics, slowTime);
    panel.refresh();
    QCOMPARE(cell(never), QStringLiteral("2.0 s (1)"));
    QCOMPARE(cell(slow), QStringLiteral("3.0 s (3)"));
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

// The Recipe column names what a run changed from the chapter's recipe; the tooltip its warm-up before epoch 1.
void tst_HistoryPanel::recipeAndWarmup()
{
    const QString plain = fakeRun(QStringLiteral("plain"), {0.5});
    trainlab::ExperimentConfig c;
    c.name = "tuned";
    c.epochs = 1;
    c.precision = "bf16";
    c.momentum = 0.9;
    c.schedule.kind = "cosine";
    c.augmentation.flip = true;
    QString tuned;
    {
        trainlab::RunRecord record(m_runsDir.toStdString(), c, c.devices);
        tuned = QString::fromStdString(record.dir());
        trainlab::RunResult result;
        result.epochs.push_back({1, 1.0, 0.5, 0.6, 1.0, 10.0, {}, 0.1, {}, 2.34});
        record.commitEpoch(result.epochs.front(), std::string());
        result.status = trainlab::RunStatus::Completed;
        record.finish(result);
    }
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    auto *model = panel.model();
    auto cell = [model](const QString &dir, int column, int role = Qt::DisplayRole) {
        return model->data(model->index(model->rowOfDir(dir), column), role).toString();
    };
    QCOMPARE(model->headerData(trainlab::RunHistoryModel::Recipe, Qt::Horizontal).toString(), QStringLiteral("Recipe"));
    QCOMPARE(cell(tuned, trainlab::RunHistoryModel::Recipe), QStringLiteral("bf16, momentum 0.9, cosine, flip"));
    QCOMPARE(cell(plain, trainlab::RunHistoryModel::Recipe), QStringLiteral("d2l"));
    QVERIFY2(cell(tuned, 0, Qt::ToolTipRole).contains(QStringLiteral("Warm-up before epoch 1: 2.3 s")), qPrintable(cell(tuned, 0, Qt::ToolTipRole)));
    QVERIFY(!cell(plain, 0, Qt::ToolTipRole).contains(QStringLiteral("Warm-up")));
}

void tst_HistoryPanel::filterNarrowsTheTable_data()
{
    QTest::addColumn<QString>("filter");
    QTest::addColumn<QStringList>("shown");
    QTest::addColumn<QString>("count");
    // The model's order is the newest first (and, within a second, by folder name): gamma, beta, alpha.
    QTest::newRow("empty") << "" << QStringList{"gamma", "beta", "alpha"} << "3 runs";
    QTest::newRow("a name, any case") << "BETA" << QStringList{"beta"} << "1 of 3 runs";
    QTest::newRow("the recipe column") << "bf16" << QStringList{"gamma", "beta"} << "2 of 3 runs";
    QTest::newRow("every word, any column") << "bf16 failed" << QStringList{"beta"} << "1 of 3 runs";
    QTest::newRow("spaces around") << "  completed  " << QStringList{"gamma", "alpha"} << "2 of 3 runs";
    QTest::newRow("nothing matches") << "bf16 alpha" << QStringList{} << "0 of 3 runs";
}

void tst_HistoryPanel::filterNarrowsTheTable()
{
    QFETCH(QString, filter);
    QFETCH(QStringList, shown);
    QFETCH(QString, count);
    const QString alpha = fakeRun(QStringLiteral("alpha"), {0.5});
    fakeRun(QStringLiteral("beta"), {0.2}, 1.0, trainlab::RunStatus::Failed, "bf16");
    fakeRun(QStringLiteral("gamma"), {0.7}, 1.0, trainlab::RunStatus::Completed, "bf16");
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    panel.table()->selectAll();
    QCOMPARE(chart.overlayCount(), 3);
    panel.filterEdit()->setText(filter);
    QCOMPARE(shownNames(panel), shown);
    QCOMPARE(panel.shownLabel()->text(), count);
    // What is hidden is not selected: the overlays, exports and deletes act on the rows in view only.
    QCOMPARE(panel.selectedRuns().size(), shown.size());
    QCOMPARE(chart.overlayCount(), shown.size());
    // A refresh keeps the filter, and Ctrl+F in the panel goes back to it.
    panel.refresh();
    QCOMPARE(shownNames(panel), shown);
    panel.show();
    panel.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&panel));
    panel.table()->setFocus();
    QTest::keySequence(panel.table(), QKeySequence::Find);
    QVERIFY(panel.filterEdit()->hasFocus());
    panel.filterEdit()->clear();
    QCOMPARE(shownNames(panel), (QStringList{"gamma", "beta", "alpha"}));
    QVERIFY(!alpha.isEmpty());
}

void tst_HistoryPanel::sortsNumbersAsNumbers()
{
    fakeRun(QStringLiteral("r0-none"), {}, 1.0, trainlab::RunStatus::Failed);
    fakeRun(QStringLiteral("r1-slow"), {0.9}, 100.0);
    fakeRun(QStringLiteral("r2-fast"), {0.85}, 9.5);
    fakeRun(QStringLiteral("r3-middle"), {0.100}, 10.2);
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    QCOMPARE(panel.sortColumn(), -1);
    QCOMPARE(shownNames(panel), (QStringList{"r3-middle", "r2-fast", "r1-slow", "r0-none"}));
    // As text, "10.2" < "100.0" < "9.5"; as seconds, 9.5 < 10.2 < 100. A run without an epoch has no value: last.
    panel.sortBy(trainlab::RunHistoryModel::SecPerEpoch, Qt::AscendingOrder);
    QCOMPARE(shownNames(panel), (QStringList{"r2-fast", "r3-middle", "r1-slow", "r0-none"}));
    panel.sortBy(trainlab::RunHistoryModel::BestAcc, Qt::DescendingOrder);
    QCOMPARE(shownNames(panel), (QStringList{"r1-slow", "r2-fast", "r3-middle", "r0-none"}));
    // The top row is the most accurate run, whatever its place in the model.
    panel.table()->selectRow(0);
    QCOMPARE(panel.selectedRuns().size(), 1);
    QCOMPARE(panel.selectedRuns().front().name, std::string("r1-slow"));
    panel.refresh();
    QCOMPARE(panel.selectedRuns().front().name, std::string("r1-slow"));
    QCOMPARE(shownNames(panel), (QStringList{"r1-slow", "r2-fast", "r3-middle", "r0-none"}));
    // The time to the target follows the target's box: at 0.90 only r1 reaches it, at 0.80 r2 does first.
    panel.sortBy(trainlab::RunHistoryModel::ToTarget, Qt::AscendingOrder);
    QCOMPARE(shownNames(panel).front(), QStringLiteral("r1-slow"));
    panel.targetBox()->setValue(0.8);
    QCOMPARE(shownNames(panel).mid(0, 2), (QStringList{"r2-fast", "r1-slow"}));
    panel.targetBox()->setValue(0.9);
    QCOMPARE(shownNames(panel).front(), QStringLiteral("r1-slow"));
    // A column the settings remember from another version is no sort at all.
    panel.sortBy(99, Qt::DescendingOrder);
    QCOMPARE(panel.sortColumn(), -1);
    QCOMPARE(shownNames(panel), (QStringList{"r3-middle", "r2-fast", "r1-slow", "r0-none"}));
}


// Edit Notes: the dialog's text lands in notes.txt, the column shows its first line, the tooltip and filter all of it.
void tst_HistoryPanel::notesEditedShownAndFound()
{
    const QString noted = fakeRun(QStringLiteral("noted"), {0.5});
    fakeRun(QStringLiteral("plain"), {0.6});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    QMenu menu;
    panel.addActions(&menu, {});
    panel.setRunsDir(m_runsDir);
    auto *edit = menu.findChild<QAction *>(QStringLiteral("editNotesAction"));
    QVERIFY(edit);
    panel.table()->selectAll();
    QVERIFY(!edit->isEnabled());
    panel.table()->clearSelection();   // selectRow toggles while an earlier test's Ctrl is still held
    for (int row = 0; row < panel.table()->model()->rowCount(); ++row) {
        if (panel.table()->model()->index(row, 0).data(RunHistoryModel::DirRole).toString() == noted)
            panel.table()->selectRow(row);
    }
    QVERIFY(edit->isEnabled());
    const QString text = QStringLiteral("baseline as the chapter\nbest at epoch 1, then it wobbled");
    QTimer::singleShot(0, this, [&text] {
        auto *dialog = qobject_cast<QInputDialog *>(QApplication::activeModalWidget());
        QVERIFY(dialog);
        dialog->setTextValue(text);
        dialog->accept();
    });
    edit->trigger();
    QFile file(noted + QStringLiteral("/notes.txt"));
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(file.readAll()), text + QLatin1Char('\n'));
    const QModelIndex notes = panel.model()->index(panel.model()->rowOfDir(noted), RunHistoryModel::Notes);
    QCOMPARE(notes.data().toString(), QStringLiteral("baseline as the chapter…"));
    QVERIFY(panel.model()->index(notes.row(), RunHistoryModel::Name).data(Qt::ToolTipRole).toString().contains(QStringLiteral("then it wobbled")));
    panel.filterEdit()->setText(QStringLiteral("WOBBLED"));
    QCOMPARE(shownNames(panel), QStringList{"noted"});
    // Too long: refused by name, the notes kept.
    QSignalSpy errors(&panel, &HistoryPanel::error);
    QVERIFY(!panel.setRunNotes(noted, QString(17000, QLatin1Char('x'))));
    QCOMPARE(errors.count(), 1);
    QVERIFY2(errors.first().at(1).toString().contains(QStringLiteral("notes: at most 16 KB")), qPrintable(errors.first().at(1).toString()));
    QCOMPARE(panel.model()->summary(panel.model()->rowOfDir(noted)).notes, text.toStdString());
    QVERIFY(panel.setRunNotes(noted, QString()));
    QVERIFY(!file.exists());
    QCOMPARE(shownNames(panel), QStringList{});
}

// Compare Selected Runs: two or more runs, in the Compare window by the settings that differ between them.
void tst_HistoryPanel::compareSelectedRuns()
{
    const QString fp32 = fakeRun(QStringLiteral("fp32 run"), {0.5, 0.6});
    const QString bf16 = fakeRun(QStringLiteral("bf16 run"), {0.4, 0.7}, 1.0, trainlab::RunStatus::Completed, "bf16");
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    QMenu menu;
    panel.addActions(&menu, {});
    panel.setRunsDir(m_runsDir);
    auto *compare = menu.findChild<QAction *>(QStringLiteral("compareRunsAction"));
    QVERIFY(compare);
    panel.table()->clearSelection();
    panel.table()->selectRow(0);
    QVERIFY(!compare->isEnabled());
    panel.table()->selectAll();
    QVERIFY(compare->isEnabled());
    QSignalSpy requested(&panel, &HistoryPanel::compareRequested);
    compare->trigger();
    QCOMPARE(requested.count(), 1);
    const QStringList dirs = requested.first().first().toStringList();
    QCOMPARE(QSet<QString>(dirs.begin(), dirs.end()), (QSet<QString>{fp32, bf16}));
    trainlab::CompareView view;
    QVERIFY(view.loadRuns(dirs));
    QCOMPARE(view.axes(), QStringList{"precision"});
    QCOMPARE(view.findChild<QLabel *>(QStringLiteral("sweepTitle"))->text(),
             QStringLiteral("2 selected runs, by what differs between them"));
    QCOMPARE(view.table()->rowCount(), 2);
    QCOMPARE(view.table()->horizontalHeaderItem(1)->text(), QStringLiteral("run"));
    QCOMPARE(view.table()->item(0, 1)->text(), QFileInfo(dirs.first()).fileName());
    QCOMPARE(view.epochSeriesCount(), 2);
    // A run that differs in keys no sweep varies: each key is a column, its value as config.json has it.
    trainlab::ExperimentConfig c;
    c.name = "limited";
    c.epochs = 2;
    c.dataset.trainLimit = 512;
    c.speed.channelsLast = "on";
    trainlab::RunRecord record(m_runsDir.toStdString(), c, c.devices);
    record.commitEpoch({1, 1.0, 0.5, 0.55, 1.0, 10.0, {}, 0.0, {}, 0.0, 0.0}, std::string());
    record.finish(trainlab::RunResult{});
    QVERIFY(view.loadRuns({fp32, QString::fromStdString(record.dir())}));
    QCOMPARE(view.axes(), (QStringList{"dataset.train_limit", "speed.channels_last"}));
    QCOMPARE(view.table()->horizontalHeaderItem(2)->text(), QStringLiteral("dataset.train_limit"));
    QCOMPARE(view.table()->item(0, 2)->text(), QStringLiteral("0"));
    QCOMPARE(view.table()->item(1, 2)->text(), QStringLiteral("512"));
    QCOMPARE(view.table()->item(1, 3)->text(), QStringLiteral("on"));
    QString error;
    QVERIFY(!view.loadRuns({fp32, m_runsDir + QStringLiteral("/gone")}, &error));
    QVERIFY2(error.contains(QStringLiteral("/gone/summary.json")), qPrintable(error));
}

// History > Columns hides and shows columns (never Name); their order and what is hidden make a layout the window
// keeps, which a later version with other columns still reads.
void tst_HistoryPanel::columnsShownMovedAndKept()
{
    fakeRun(QStringLiteral("one"), {0.5});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    QMenu menu;
    panel.addActions(&menu, {});
    panel.setRunsDir(m_runsDir);
    QVERIFY(menu.actions().contains(panel.columnsMenu()->menuAction()));
    Q_EMIT panel.columnsMenu()->aboutToShow();
    const auto action = [&panel](const QString &text) {
        for (QAction *a : panel.columnsMenu()->actions()) {
            if (a->text() == text)
                return a;
        }
        return static_cast<QAction *>(nullptr);
    };
    QVERIFY(action(QStringLiteral("Name")) && !action(QStringLiteral("Name"))->isEnabled());
    QAction *date = action(QStringLiteral("Date"));
    QVERIFY(date && date->isChecked());
    date->trigger();
    QVERIFY(panel.table()->isColumnHidden(RunHistoryModel::Date));
    QHeaderView *header = panel.table()->horizontalHeader();
    header->moveSection(header->visualIndex(RunHistoryModel::Notes), 1);
    const QStringList layout = panel.columnLayout();
    QCOMPARE(layout.mid(0, 4), QStringList({"name", "notes", "-date", "devices"}));
    QCOMPARE(layout.size(), int(RunHistoryModel::ColumnCount));
    HistoryPanel again(&chart);
    again.setColumnLayout(QStringList{"a_later_column"} + layout + QStringList{"-name"});
    QCOMPARE(again.columnLayout(), layout);
    Q_EMIT again.columnsMenu()->aboutToShow();
    for (QAction *a : again.columnsMenu()->actions()) {
        if (a->text() == QStringLiteral("Date"))
            QVERIFY(!a->isChecked());
    }
    // Reset Columns: the model's order, every column shown.
    again.columnsMenu()->actions().constLast()->trigger();
    QCOMPARE(again.columnLayout().mid(0, 3), QStringList({"name", "date", "devices"}));
    QVERIFY(!again.table()->isColumnHidden(RunHistoryModel::Date));
}

// Delete Run moves runs to the desktop's trash, whole, unless Delete Permanently is chosen; a held run stays.
void tst_HistoryPanel::deleteGoesToTheTrashFirst()
{
    const QString data = m_tmp.filePath(QStringLiteral("data"));
    qputenv("XDG_DATA_HOME", QFile::encodeName(data));
    const QString trashed = fakeRun(QStringLiteral("to trash"), {0.5});
    const QString gone = fakeRun(QStringLiteral("to delete"), {0.5});
    const QString held = fakeRun(QStringLiteral("held"), {0.5});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    QMenu menu;
    panel.addActions(&menu, {});
    panel.setRunsDir(m_runsDir);
    QSignalSpy status(&panel, &HistoryPanel::status);
    QSignalSpy errors(&panel, &HistoryPanel::error);
    const auto deleteAnswering = [&panel, &menu](const QString &dir, QMessageBox::StandardButton answer) {
        panel.table()->clearSelection();
        for (int row = 0; row < panel.table()->model()->rowCount(); ++row) {
            if (panel.table()->model()->index(row, 0).data(RunHistoryModel::DirRole).toString() == dir)
                panel.table()->selectRow(row);
        }
        QTimer::singleShot(0, [answer] {
            auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
            QVERIFY(box && box->button(answer));
            box->button(answer)->click();
        });
        menu.findChild<QAction *>(QStringLiteral("deleteRunAction"))->trigger();
    };
    deleteAnswering(trashed, QMessageBox::Yes);
    QVERIFY(!QFileInfo::exists(trashed));
    QCOMPARE(status.count(), 1);
    const QString where = status.first().first().toString().section(QStringLiteral(": "), 1);
    QCOMPARE(where, data + QStringLiteral("/Trash/files/") + QFileInfo(trashed).fileName());
    QVERIFY(QFileInfo::exists(where + QStringLiteral("/summary.json")));
    deleteAnswering(gone, QMessageBox::Discard);
    QVERIFY(!QFileInfo::exists(gone));
    QCOMPARE(status.count(), 1);
    QCOMPARE(QDir(QFileInfo(where).path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot), QStringList{QFileInfo(where).fileName()});
    const int fd = ::open(QFile::encodeName(held).constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    QVERIFY(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0);
    deleteAnswering(held, QMessageBox::Yes);
    ::close(fd);
    QVERIFY(QFileInfo::exists(held + QStringLiteral("/summary.json")));
    QCOMPARE(errors.count(), 1);
    QVERIFY2(errors.first().at(1).toString().contains(QStringLiteral("in use by a running or resuming process")),
             qPrintable(errors.first().at(1).toString()));
    QCOMPARE(shownNames(panel), QStringList{"held"});
}

// A run another process starts shows up without Refresh, and its epochs as it writes them.
void tst_HistoryPanel::followsRunsOfOtherProcesses()
{
    fakeRun(QStringLiteral("earlier"), {0.5});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    QCOMPARE(panel.model()->rowCount(), 1);
    trainlab::ExperimentConfig c;
    c.name = "elsewhere";
    c.epochs = 2;
    trainlab::RunRecord record(m_runsDir.toStdString(), c, c.devices);   // holds its folder, as a running process does
    QTRY_COMPARE_WITH_TIMEOUT(panel.model()->rowCount(), 2, 5000);
    const auto epochsOf = [&panel, &record] {
        const int row = panel.model()->rowOfDir(QString::fromStdString(record.dir()));
        return panel.model()->index(row, RunHistoryModel::Epochs).data().toString();
    };
    QCOMPARE(epochsOf(), QStringLiteral("0/2"));
    record.commitEpoch({1, 1.0, 0.5, 0.55, 1.0, 10.0, {}, 0.0, {}, 0.0, 0.0}, std::string());
    QTRY_COMPARE_WITH_TIMEOUT(epochsOf(), QStringLiteral("1/2"), 5000);
}

// A refresh (by hand, or because another process wrote) leaves the table scrolled where it was, the current run current.
void tst_HistoryPanel::refreshKeepsThePlace()
{
    for (int i = 0; i < 30; ++i)
        fakeRun(QStringLiteral("run %1").arg(i), {0.5});
    trainlab::AccuracyChart chart;
    HistoryPanel panel(&chart);
    panel.setRunsDir(m_runsDir);
    panel.resize(500, 250);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QScrollBar *bar = panel.table()->verticalScrollBar();
    QVERIFY(bar->maximum() > 0);
    const QModelIndex last = panel.table()->model()->index(panel.table()->model()->rowCount() - 1, RunHistoryModel::Epochs);
    const QString lastDir = last.data(RunHistoryModel::DirRole).toString();
    panel.table()->setCurrentIndex(last);
    panel.table()->scrollToBottom();
    const int bottom = bar->value();
    QVERIFY(bottom > 0);
    panel.refresh();
    QCOMPARE(bar->value(), bottom);
    QCOMPARE(panel.table()->currentIndex().data(RunHistoryModel::DirRole).toString(), lastDir);
    QCOMPARE(panel.table()->currentIndex().column(), int(RunHistoryModel::Epochs));
}

QTEST_MAIN(tst_HistoryPanel)
#include "tst_historypanel.moc"
