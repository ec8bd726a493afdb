#include "core/sweeps/queue.h"
#include "core/runs/runrecord.h"
#include "core/runs/runstorage.h"
#include "core/util/atomicfile.h"
#include "core/sweeps/sweep.h"
#include "ui/compareview.h"
#include "ui/experimentform.h"
#include "ui/mainwindow.h"
#include "ui/queuepanel.h"
#include "ui/sweepdialog.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSet>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

using trainlab::EntryState;
using trainlab::ExperimentConfig;
using trainlab::MainWindow;
using trainlab::QueuePanel;
using trainlab::SweepConfig;
using trainlab::SweepDialog;

namespace {

// A run of a few seconds on the built-in sample.
ExperimentConfig tinyConfig(const std::string &name)
{
    ExperimentConfig c;
    c.name = name;
    c.dataset.path = "builtin:sample";
    c.dataset.trainLimit = 64;
    c.dataset.testLimit = 40;
    c.devices = {"cpu"};
    c.batchSize = 32;
    c.learningRate = 0.05;
    c.epochs = 1;
    c.checkpoints = "last";
    return c;
}

QString stateText(const QueuePanel &panel, int row)
{
    return panel.table()->item(row, QueuePanel::StateColumn)->text();
}

QStringList states(const QueuePanel &panel)
{
    QStringList out;
    for (const auto &e : panel.queue().entries())
        out << QString::fromLatin1(trainlab::toString(e.state));
    return out;
}

template<typename T>
T *child(QWidget &widget, const QString &name)
{
    T *found = widget.findChild<T *>(name);
    if (!found)
        qFatal("no widget named %s", qPrintable(name));
    return found;
}

} // namespace

class tst_QueuePanel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void sweepRunsThroughTheWindowAndCompares();
    void stopMidQueueLeavesTheRestWaiting();
    void aFailingRunIsRecordedAndTheQueueGoesOn();
    void moveAndRemoveOnlyWaitingEntries();
    void queueIsKeptInTheRunsFolder();
    void damagedQueueFileIsSetAside();
    void damagedQueueAsideNameTaken();
    void dialogCountsRuns_data();
    void dialogCountsRuns();
    void dialogRecipeAxes();
    void dialogAsksAboveTwoHundredRuns();
    void dialogDrawsRandomRuns();
    void prunedRunLetsTheQueueGoOn();
    void windowPrunesRealRuns();
    void dialogLoadsPresets();

private:
    QTemporaryDir m_home;
    QString m_runsDir;
};

void tst_QueuePanel::initTestCase()
{
    QVERIFY(m_home.isValid());
    qputenv("XDG_CONFIG_HOME", m_home.filePath(QStringLiteral("config")).toUtf8());
    QApplication::setOrganizationName(QStringLiteral("TrainLabTest"));
    QApplication::setApplicationName(QStringLiteral("TrainLabQueueTest"));
}

void tst_QueuePanel::init()
{
    static int n = 0;
    m_runsDir = m_home.filePath(QStringLiteral("runs%1").arg(++n));
    QDir().mkpath(m_runsDir);
    qputenv("TRAINLAB_RUNS_DIR", m_runsDir.toUtf8());
    QSettings().clear();
}

void tst_QueuePanel::cleanup()
{
    while (QWidget *modal = QApplication::activeModalWidget())
        modal->close();
}

void tst_QueuePanel::sweepRunsThroughTheWindowAndCompares()
{
    MainWindow window;
    window.setRunsDir(m_runsDir, false);
    QueuePanel *panel = window.queuePanel();
    SweepConfig sweep;
    sweep.name = "gui-grid";
    sweep.base = tinyConfig("gui-grid");
    sweep.learningRate = {0.02, 0.1};
    sweep.batchSize = {16, 32};
    QString error;
    const QString id = panel->addSweep(sweep, &error, "lr against batch, first try");
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QCOMPARE(panel->queue().size(), std::size_t(4));
    QVERIFY(QFile::exists(QDir(m_runsDir).filePath(QStringLiteral("sweeps/%1/sweep.json").arg(id))));
    QCOMPARE(stateText(*panel, 0), QStringLiteral("waiting"));

    QSignalSpy ended(panel, &QueuePanel::queueEnded);
    QTest::mouseClick(child<QPushButton>(*panel, QStringLiteral("queueStart")), Qt::LeftButton);
    QVERIFY(panel->isActive());
    QTRY_COMPARE(stateText(*panel, 0), QStringLiteral("running"));
    // The live chart shows the queued run as it would a run started by hand.
    QTRY_VERIFY(window.isRunning());
    // Once a run is done, the panel says what is left at its pace.
    QTRY_VERIFY_WITH_TIMEOUT(child<QLabel>(*panel, QStringLiteral("queueEstimate"))->text().contains(" left, about "), 120000);
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 240000);
    QCOMPARE(child<QLabel>(*panel, QStringLiteral("queueEstimate"))->text(), QString());
    QCOMPARE(states(*panel), QStringList({"completed", "completed", "completed", "completed"}));
    QCOMPARE(stateText(*panel, 3), QStringLiteral("done"));
    QVERIFY(!panel->isActive());

    // Each a normal run folder, tagged with the sweep and its position.
    QSet<int> indexes;
    for (const trainlab::RunSummary &s : trainlab::listRuns(m_runsDir.toStdString())) {
        QCOMPARE(QString::fromStdString(s.sweep.id), id);
        QCOMPARE(s.sweep.count, 4);
        QCOMPARE(QString::fromStdString(s.status), QStringLiteral("completed"));
        indexes.insert(s.sweep.index);
    }
    QCOMPARE(indexes, QSet<int>({0, 1, 2, 3}));
    for (const auto &e : panel->queue().entries()) {
        QVERIFY(!e.runDir.empty());
        QCOMPARE(trainlab::readRunNotes(e.runDir), std::string("lr against batch, first try"));
        QVERIFY(e.bestTestAcc > 0.0);
        QVERIFY(e.imagesPerSecond > 0.0);
    }
    QVERIFY(!panel->table()->item(0, QueuePanel::BestColumn)->text().isEmpty());
    QVERIFY(window.lastError().isEmpty());

    // Compare: select a row of the sweep and press Compare.
    panel->selectRow(1);
    QTest::mouseClick(child<QPushButton>(*panel, QStringLiteral("queueCompare")), Qt::LeftButton);
    trainlab::CompareView *compare = window.compareView();
    QVERIFY(compare);
    QCOMPARE(compare->sweepId(), id);
    QCOMPARE(compare->epochSeriesCount(), 4);
    QCOMPARE(compare->learningRateSeriesNames().size(), 2);
    QCOMPARE(compare->table()->rowCount(), 4);
    const QString png = m_home.filePath(QStringLiteral("compare.png"));
    const QString csv = m_home.filePath(QStringLiteral("compare.csv"));
    QVERIFY2(compare->saveCurrentChartPng(png, &error), qPrintable(error));
    QVERIFY(!QImage(png).isNull());
    QVERIFY2(compare->saveTableCsv(csv, &error), qPrintable(error));
    QFile file(csv);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll().count('\n'), 5);

    // The run of row 3 (lr 0.1, batch 16) goes back into the form, to be trained further.
    compare->table()->setCurrentCell(2, 0);
    compare->findChild<QAction *>(QStringLiteral("compareUseConfig"))->trigger();
    QCOMPARE(window.form()->config().learningRate, panel->queue().at(2).config.learningRate);
    QCOMPARE(window.form()->config().batchSize, panel->queue().at(2).config.batchSize);
    QCOMPARE(window.form()->config().batchSize, 16);
}

void tst_QueuePanel::stopMidQueueLeavesTheRestWaiting()
{
    MainWindow window;
    window.setRunsDir(m_runsDir, false);
    QueuePanel *panel = window.queuePanel();
    ExperimentConfig longer = tinyConfig("long");
    longer.dataset.trainLimit = 2000;
    longer.epochs = 3;
    panel->addExperiment(longer);
    panel->addExperiment(tinyConfig("second"));
    panel->addExperiment(tinyConfig("third"));
    QSignalSpy ended(panel, &QueuePanel::queueEnded);
    panel->startQueue();
    QTRY_VERIFY(!panel->queue().at(0).runDir.empty());
    QTest::mouseClick(child<QPushButton>(*panel, QStringLiteral("queueStop")), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
    QTRY_VERIFY(!window.isRunning());
    QCOMPARE(states(*panel), QStringList({"stopped", "waiting", "waiting"}));
    QVERIFY(panel->queue().at(1).runDir.empty());
    QCOMPARE(trainlab::listRuns(m_runsDir.toStdString()).size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(trainlab::readRunSummary(panel->queue().at(0).runDir).status),
             QStringLiteral("stopped"));
    // The stopped run is next: Start resumes it from its folder rather than making a new one.
    QVERIFY(panel->queue().resumes(0));
    QCOMPARE(panel->queue().next(), 0);
}

void tst_QueuePanel::aFailingRunIsRecordedAndTheQueueGoesOn()
{
    MainWindow window;
    window.setRunsDir(m_runsDir, false);
    QueuePanel *panel = window.queuePanel();
    panel->addExperiment(tinyConfig("first"));
    ExperimentConfig broken = tinyConfig("broken");
    broken.dataset.path = m_home.filePath(QStringLiteral("no-such-dataset")).toStdString();
    panel->addExperiment(broken);
    panel->addExperiment(tinyConfig("third"));
    QSignalSpy ended(panel, &QueuePanel::queueEnded);
    panel->startQueue();
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 180000);
    QCOMPARE(states(*panel), QStringList({"completed", "failed", "completed"}));
    QVERIFY(panel->queue().at(1).error.find("no-such-dataset") != std::string::npos);
    QVERIFY(panel->table()->item(1, QueuePanel::StateColumn)->toolTip().contains(QStringLiteral("no-such-dataset")));
    // No dialog waits on a click while the queue goes on.
    QVERIFY(window.findChildren<QWidget *>(QStringLiteral("errorBox")).isEmpty());
    QVERIFY(window.lastError().isEmpty());
}

void tst_QueuePanel::moveAndRemoveOnlyWaitingEntries()
{
    QueuePanel panel;
    panel.setRunsDir(m_runsDir);
    for (const char *name : {"a", "b", "c"})
        panel.addExperiment(tinyConfig(name));
    panel.selectRow(2);
    QTest::mouseClick(child<QPushButton>(panel, QStringLiteral("queueUp")), Qt::LeftButton);
    QCOMPARE(panel.queue().at(1).config.name, std::string("c"));
    QCOMPARE(panel.selectedRow(), 1);
    panel.selectRow(0);
    QVERIFY(!child<QPushButton>(panel, QStringLiteral("queueUp"))->isEnabled());
    QTest::mouseClick(child<QPushButton>(panel, QStringLiteral("queueRemove")), Qt::LeftButton);
    QCOMPARE(panel.queue().size(), std::size_t(2));
    QCOMPARE(panel.queue().at(0).config.name, std::string("c"));
    QCOMPARE(panel.table()->item(0, QueuePanel::NameColumn)->text(), QStringLiteral("c"));

    // A finished entry cannot be moved; it can be run again, or removed (its folder stays in the history).
    trainlab::RunResult done;
    done.status = trainlab::RunStatus::Failed;
    done.error = "x";
    panel.setLauncher([](const trainlab::QueueEntry &, bool) { return true; });
    panel.startQueue();
    QVERIFY(!child<QPushButton>(panel, QStringLiteral("queueStart"))->isEnabled());
    panel.selectRow(0);
    QVERIFY(!child<QPushButton>(panel, QStringLiteral("queueRemove"))->isEnabled());   // running
    panel.onRunFinished(done);
    QCOMPARE(states(panel), QStringList({"failed", "waiting"}));
    panel.stopQueue();
    panel.selectRow(0);
    QVERIFY(!child<QPushButton>(panel, QStringLiteral("queueDown"))->isEnabled());
    panel.moveSelected(1);
    QCOMPARE(panel.queue().at(0).config.name, std::string("c"));
    QVERIFY(child<QPushButton>(panel, QStringLiteral("queueRetry"))->isEnabled());
    QTest::mouseClick(child<QPushButton>(panel, QStringLiteral("queueRetry")), Qt::LeftButton);
    QCOMPARE(states(panel), QStringList({"waiting", "waiting"}));
    panel.selectRow(1);
    QTest::mouseClick(child<QPushButton>(panel, QStringLiteral("queueRemove")), Qt::LeftButton);
    QCOMPARE(panel.queue().size(), std::size_t(1));
}

void tst_QueuePanel::queueIsKeptInTheRunsFolder()
{
    {
        QueuePanel panel;
        panel.setRunsDir(m_runsDir);
        panel.addExperiment(tinyConfig("kept-1"));
        panel.addExperiment(tinyConfig("kept-2"));
        QCOMPARE(panel.stateFile(), QDir(m_runsDir).filePath(QStringLiteral("queue.json")));
    }
    QVERIFY(QFile::exists(QDir(m_runsDir).filePath(QStringLiteral("queue.json"))));
    QueuePanel again;
    again.setRunsDir(m_runsDir);
    QCOMPARE(again.queue().size(), std::size_t(2));
    QCOMPARE(again.queue().at(1).config, tinyConfig("kept-2"));
    QCOMPARE(again.table()->rowCount(), 2);
}

void tst_QueuePanel::damagedQueueFileIsSetAside()
{
    const QString file = QDir(m_runsDir).filePath(QStringLiteral("queue.json"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"schema_version\": 1, \"entries\": [ {\"config\": ");
    f.close();
    QueuePanel panel;
    panel.setRunsDir(m_runsDir);
    QCOMPARE(panel.queue().size(), std::size_t(0));
    QVERIFY2(panel.message().contains(QStringLiteral("could not be read")), qPrintable(panel.message()));
    const QStringList aside = QDir(m_runsDir).entryList({QStringLiteral("queue.json.damaged-*")});
    QCOMPARE(aside.size(), 1);
    QFile kept(QDir(m_runsDir).filePath(aside.first()));
    QVERIFY(kept.open(QIODevice::ReadOnly));
    QVERIFY(kept.readAll().startsWith("{\"schema_version\": 1"));
}

// The aside name already taken (the same second, or a file the user made): nothing is overwritten (issue 27).
void tst_QueuePanel::damagedQueueAsideNameTaken()
{
    const QString file = QDir(m_runsDir).filePath(QStringLiteral("queue.json"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"schema_version\": 1, \"entries\": [ {\"config\": ");
    f.close();
    const QDateTime now = QDateTime::currentDateTimeUtc();
    QStringList taken;
    for (int s = 0; s < 3; ++s) {
        const QString name = file + QStringLiteral(".damaged-") + now.addSecs(s).toString(QStringLiteral("yyyyMMdd-HHmmss"));
        QFile t(name);
        QVERIFY(t.open(QIODevice::WriteOnly));
        t.write("an earlier damaged queue");
        taken << name;
    }
    QueuePanel panel;
    panel.setRunsDir(m_runsDir);
    QVERIFY2(panel.message().contains(QStringLiteral("could not be read")), qPrintable(panel.message()));
    QVERIFY(!QFile::exists(file));
    for (const QString &name : std::as_const(taken)) {
        QFile t(name);
        QVERIFY(t.open(QIODevice::ReadOnly));
        QCOMPARE(t.readAll(), QByteArray("an earlier damaged queue"));
    }
    const QStringList aside = QDir(m_runsDir).entryList({QStringLiteral("queue.json.damaged-*-2")});
    QCOMPARE(aside.size(), 1);
    QFile kept(QDir(m_runsDir).filePath(aside.first()));
    QVERIFY(kept.open(QIODevice::ReadOnly));
    QVERIFY(kept.readAll().startsWith("{\"schema_version\": 1"));
}

void tst_QueuePanel::dialogCountsRuns_data()
{
    QTest::addColumn<QString>("mode");
    QTest::addColumn<QString>("learningRate");
    QTest::addColumn<QString>("batchSize");
    QTest::addColumn<QString>("devices");
    QTest::addColumn<long long>("runs");
    QTest::addColumn<QString>("problem");

    QTest::newRow("grid 3x2") << "grid" << "0.01, 0.05, 0.2" << "32, 64" << "" << 6LL << "";
    QTest::newRow("zip 2+2") << "zip" << "0.1, 0.2" << "32, 64" << "" << 2LL << "";
    QTest::newRow("devices") << "grid" << "" << "" << "cpu; cpu,cpu" << 2LL << "";
    QTest::newRow("no axes") << "grid" << "" << "" << "" << 1LL << "";
    QTest::newRow("zip sizes differ") << "zip" << "0.1, 0.2, 0.3" << "32, 64" << "" << -1LL << "same number";
    QTest::newRow("not a number") << "grid" << "0.1, abc" << "" << "" << 1LL << "axes.learning_rate[1]: must be a number";
    QTest::newRow("bad batch") << "grid" << "" << "32, 0" << "" << 2LL << "axes.batch_size[1]";
    QTest::newRow("empty device set") << "grid" << "" << "" << "cpu; ;cpu" << 2LL << "axes.devices[1]";
    QTest::newRow("random") << "random" << "0.001..0.3 log" << "32, 64" << "" << 10LL << "";
    QTest::newRow("range in a grid") << "grid" << "0.01..0.1" << "" << "" << 0LL << "drawn from in mode \"random\" only";
    QTest::newRow("bad range") << "random" << "0.01..fast" << "" << "" << 10LL << "axes.learning_rate: a range is MIN..MAX";
}

void tst_QueuePanel::dialogCountsRuns()
{
    QFETCH(QString, mode);
    QFETCH(QString, learningRate);
    QFETCH(QString, batchSize);
    QFETCH(QString, devices);
    QFETCH(long long, runs);
    QFETCH(QString, problem);

    SweepDialog dialog(tinyConfig("base"));
    auto *modeBox = child<QComboBox>(dialog, QStringLiteral("sweepMode"));
    modeBox->setCurrentIndex(modeBox->findData(mode));
    QTest::keyClicks(child<QLineEdit>(dialog, QStringLiteral("sweepAxis_learning_rate")), learningRate);
    QTest::keyClicks(child<QLineEdit>(dialog, QStringLiteral("sweepAxis_batch_size")), batchSize);
    QTest::keyClicks(child<QLineEdit>(dialog, QStringLiteral("sweepAxis_devices")), devices);
    // The count and the problems follow the typing after a short pause.
    if (problem.isEmpty())
        QTRY_COMPARE(dialog.runCount(), runs);
    else
        QTRY_VERIFY(dialog.problems().join('\n').contains(problem));
    QCOMPARE(dialog.runCount(), runs);
    auto *label = child<QLabel>(dialog, QStringLiteral("sweepCount"));
    if (problem.isEmpty()) {
        QVERIFY2(dialog.problems().isEmpty(), qPrintable(dialog.problems().join('\n')));
        QVERIFY2(label->text().startsWith(QString::number(runs) + (runs == 1 ? " run" : " runs")), qPrintable(label->text()));
        const SweepConfig s = dialog.sweep();
        QCOMPARE(static_cast<long long>(trainlab::planSweep(s).size()), runs);
    } else {
        QVERIFY(!dialog.problems().isEmpty());
        QVERIFY2(dialog.problems().join('\n').contains(problem), qPrintable(dialog.problems().join('\n')));
        QVERIFY(label->text().contains(problem));
    }
    auto *ok = dialog.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    QCOMPARE(ok->isEnabled(), problem.isEmpty());
}

void tst_QueuePanel::dialogRecipeAxes()
{
    SweepDialog dialog(tinyConfig("base"));
    auto *augmentation = child<QLineEdit>(dialog, QStringLiteral("sweepAxis_augmentation"));
    child<QLineEdit>(dialog, QStringLiteral("sweepAxis_schedule"))->setText(QStringLiteral("constant, cosine"));
    augmentation->setText(QStringLiteral("none; crop 2, flip"));
    child<QLineEdit>(dialog, QStringLiteral("sweepAxis_label_smoothing"))->setText(QStringLiteral("0.1"));
    auto *clip = child<QLineEdit>(dialog, QStringLiteral("sweepAxis_grad_clip_norm"));
    clip->setText(QStringLiteral("1.5"));
    auto *init = child<QLineEdit>(dialog, QStringLiteral("sweepAxis_init"));
    init->setText(QStringLiteral("pytorch"));
    QTRY_COMPARE(dialog.runCount(), 4LL);
    QVERIFY2(dialog.problems().isEmpty(), qPrintable(dialog.problems().join('\n')));
    const auto runs = trainlab::planSweep(dialog.sweep());
    QCOMPARE(runs[3].config.schedule.kind, std::string("cosine"));
    QCOMPARE(runs[3].config.augmentation.cropPadding, 2);
    QVERIFY(runs[3].config.augmentation.flip);
    QVERIFY(!runs[2].config.augmentation.any());
    QCOMPARE(runs[2].config.labelSmoothing, 0.1);
    QCOMPARE(runs[2].config.gradClipNorm, 1.5);
    QCOMPARE(runs[2].config.model.init, std::string("pytorch"));
    // A sweep set into the dialog shows its augmentations as typed.
    dialog.setSweep(dialog.sweep());
    QCOMPARE(augmentation->text(), QStringLiteral("none; crop 2, flip"));
    QCOMPARE(init->text(), QStringLiteral("pytorch"));
    QCOMPARE(clip->text(), QStringLiteral("1.5"));
    init->setText(QStringLiteral("xavier"));
    QTRY_VERIFY(dialog.problems().join('\n').contains(QStringLiteral("axes.init[0]: model.init: ")));
    init->setText(QStringLiteral("pytorch"));
    augmentation->setText(QStringLiteral("none; crop 2, rotate"));
    QTRY_VERIFY(dialog.problems().join('\n').contains(QStringLiteral("axes.augmentation[1]: ")));
    QVERIFY(!dialog.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->isEnabled());
}

void tst_QueuePanel::dialogAsksAboveTwoHundredRuns()
{
    SweepDialog dialog(tinyConfig("big"));
    QStringList lrs;
    for (int i = 1; i <= 201; ++i)
        lrs << QString::number(i * 0.001);
    child<QLineEdit>(dialog, QStringLiteral("sweepAxis_learning_rate"))->setText(lrs.join(QStringLiteral(", ")));
    dialog.revalidate();
    QCOMPARE(dialog.runCount(), 201LL);
    long long asked = 0;
    bool answer = false;
    dialog.setConfirm([&](long long runs) {
        asked = runs;
        return answer;
    });
    dialog.open();
    dialog.accept();
    QCOMPARE(asked, 201LL);
    QVERIFY(dialog.isVisible());   // "No" keeps the dialog open
    answer = true;
    dialog.accept();
    QCOMPARE(dialog.result(), int(QDialog::Accepted));

    SweepDialog small(tinyConfig("small"));
    child<QLineEdit>(small, QStringLiteral("sweepAxis_learning_rate"))->setText(QStringLiteral("0.1, 0.2"));
    asked = 0;
    small.setConfirm([&](long long runs) {
        asked = runs;
        return false;
    });
    small.open();
    small.accept();
    QCOMPARE(asked, 0LL);
    QCOMPARE(small.result(), int(QDialog::Accepted));
}

void tst_QueuePanel::dialogDrawsRandomRuns()
{
    SweepDialog dialog(tinyConfig("base"));
    auto *modeBox = child<QComboBox>(dialog, QStringLiteral("sweepMode"));
    auto *runs = child<QSpinBox>(dialog, QStringLiteral("sweepRuns"));
    auto *seed = child<QSpinBox>(dialog, QStringLiteral("sweepRandomSeed"));
    QVERIFY(!runs->isEnabled() && !seed->isEnabled());
    modeBox->setCurrentIndex(modeBox->findData(QStringLiteral("random")));
    QVERIFY(runs->isEnabled() && seed->isEnabled());
    runs->setValue(4);
    seed->setValue(2);
    QTest::keyClicks(child<QLineEdit>(dialog, QStringLiteral("sweepAxis_learning_rate")), QStringLiteral("0.001..0.3 log"));
    QTest::keyClicks(child<QLineEdit>(dialog, QStringLiteral("sweepAxis_momentum")), QStringLiteral("0.8 .. 0.99"));
    QTRY_COMPARE(dialog.runCount(), 4LL);
    QVERIFY2(dialog.problems().isEmpty(), qPrintable(dialog.problems().join('\n')));
    QCOMPARE(child<QLabel>(dialog, QStringLiteral("sweepCount"))->text(),
             QStringLiteral("4 runs drawn (learning_rate 0.001..0.3 log, momentum 0.8..0.99)"));
    const SweepConfig s = dialog.sweep();
    QCOMPARE(s.mode, std::string("random"));
    QCOMPARE(s.runs, 4);
    QCOMPARE(s.randomSeed, std::uint64_t(2));
    QVERIFY(s.ranges.at("learning_rate").log);
    QVERIFY(!s.ranges.at("momentum").log);
    QCOMPARE(s.ranges.at("momentum").max, 0.99);

    // A saved random sweep opens with its ranges, runs and seed in the fields.
    SweepDialog reopened(tinyConfig("other"));
    reopened.setSweep(SweepConfig::fromJson(s.toJson()));
    QCOMPARE(child<QLineEdit>(reopened, QStringLiteral("sweepAxis_learning_rate"))->text(), QStringLiteral("0.001..0.3 log"));
    QCOMPARE(child<QSpinBox>(reopened, QStringLiteral("sweepRuns"))->value(), 4);
    QCOMPARE(child<QSpinBox>(reopened, QStringLiteral("sweepRandomSeed"))->value(), 2);
    QCOMPARE(reopened.sweep().toJson(), s.toJson());

    // Notes for every run: trimmed, and checked as a run's notes are.
    auto *notes = child<QLineEdit>(dialog, QStringLiteral("sweepNotes"));
    notes->setText(QStringLiteral("  lr and momentum at random "));
    QCOMPARE(dialog.notes(), QStringLiteral("lr and momentum at random"));
    notes->setText(QString(17000, QLatin1Char('x')));
    QTRY_VERIFY(dialog.problems().join('\n').contains("notes: at most 16 KB"));
    notes->clear();
    QTRY_VERIFY(dialog.problems().isEmpty());

    auto *prune = child<QComboBox>(dialog, QStringLiteral("sweepPrune"));
    auto *pruneValue = child<QDoubleSpinBox>(dialog, QStringLiteral("sweepPruneValue"));
    QVERIFY(!dialog.sweep().pruning.on());
    QVERIFY(!child<QSpinBox>(dialog, QStringLiteral("sweepPruneStartup"))->isEnabled());
    prune->setCurrentIndex(prune->findData(QStringLiteral("median")));
    QVERIFY(child<QSpinBox>(dialog, QStringLiteral("sweepPruneStartup"))->isEnabled());
    QVERIFY(pruneValue->isHidden());
    child<QSpinBox>(dialog, QStringLiteral("sweepPruneMinEpochs"))->setValue(2);
    QCOMPARE(dialog.sweep().pruning, (trainlab::PruneRule{"median", 3, 2}));
    reopened.setSweep(dialog.sweep());
    QCOMPARE(child<QComboBox>(reopened, QStringLiteral("sweepPrune"))->currentData().toString(), QStringLiteral("median"));
    QCOMPARE(child<QSpinBox>(reopened, QStringLiteral("sweepPruneMinEpochs"))->value(), 2);
    // The top share: the value box asks for it; the startup runs still count.
    prune->setCurrentIndex(prune->findData(QStringLiteral("percentile")));
    QVERIFY(!pruneValue->isHidden());
    QCOMPARE(pruneValue->value(), 25.0);
    pruneValue->setValue(12.5);
    QCOMPARE(dialog.sweep().pruning, (trainlab::PruneRule{"percentile", 3, 2, 12.5}));
    // A threshold: no other run is waited for, and the box turns to a test accuracy.
    prune->setCurrentIndex(prune->findData(QStringLiteral("threshold")));
    QVERIFY(!child<QSpinBox>(dialog, QStringLiteral("sweepPruneStartup"))->isEnabled());
    QCOMPARE(pruneValue->value(), 0.2);
    QCOMPARE(dialog.sweep().pruning.minTestAcc, 0.2);
    QTRY_VERIFY2(dialog.problems().isEmpty(), qPrintable(dialog.problems().join('\n')));
    reopened.setSweep(dialog.sweep());
    QCOMPARE(child<QDoubleSpinBox>(reopened, QStringLiteral("sweepPruneValue"))->value(), 0.2);
    QCOMPARE(reopened.sweep().pruning, dialog.sweep().pruning);
    // A file's value finer than the box (or below its range) is kept as given until the box is edited.
    SweepConfig fine = dialog.sweep();
    fine.pruning = trainlab::PruneRule{"percentile", 3, 2, 0.5};
    reopened.setSweep(fine);
    auto *reopenedValue = child<QDoubleSpinBox>(reopened, QStringLiteral("sweepPruneValue"));
    QCOMPARE(reopenedValue->value(), 1.0);
    QCOMPARE(reopened.sweep().pruning.percentile, 0.5);
    reopenedValue->setValue(2.0);
    QCOMPARE(reopened.sweep().pruning.percentile, 2.0);
    fine.pruning = trainlab::PruneRule{"threshold", 3, 2, 25.0, 0.1234};
    reopened.setSweep(fine);
    QCOMPARE(reopened.sweep().pruning.minTestAcc, 0.1234);
}

void tst_QueuePanel::prunedRunLetsTheQueueGoOn()
{
    SweepConfig sweep;
    sweep.name = "prune";
    sweep.base = tinyConfig("prune");
    sweep.base.epochs = 3;
    sweep.seed = {1, 2, 3};
    sweep.pruning = {"median", 1, 1};
    QueuePanel panel;
    panel.setRunsDir(m_runsDir);
    QString error;
    QVERIFY2(!panel.addSweep(sweep, &error).isEmpty(), qPrintable(error));
    int launches = 0;
    panel.setLauncher([&launches](const trainlab::QueueEntry &, bool) { return ++launches, true; });
    QSignalSpy stops(&panel, &QueuePanel::stopRequested);
    auto epoch = [](int n, double acc) {
        trainlab::EpochMetrics m;
        m.epoch = n;
        m.testAcc = acc;
        return m;
    };
    panel.startQueue();
    QCOMPARE(launches, 1);
    trainlab::RunResult first;
    first.status = trainlab::RunStatus::Completed;
    first.epochs = {epoch(1, 0.8), epoch(2, 0.8), epoch(3, 0.8)};
    for (const auto &m : first.epochs)
        panel.onEpochDone(m);   // no other run yet: nothing to compare with
    panel.onRunFinished(first);
    panel.onRunnerIdle();
    QTRY_COMPARE(launches, 2);

    // Below the first run at epoch 1: the panel asks the window for a stop, once, and keeps the queue going.
    panel.onEpochDone(epoch(1, 0.5));
    QCOMPARE(stops.count(), 1);
    panel.onEpochDone(epoch(1, 0.5));
    QCOMPARE(stops.count(), 1);
    trainlab::RunResult second;
    second.status = trainlab::RunStatus::Stopped;
    second.epochs = {epoch(1, 0.5)};
    panel.onRunFinished(second);
    QCOMPARE(states(panel), QStringList({"completed", "pruned", "waiting"}));
    QVERIFY(panel.isActive());
    QVERIFY2(panel.findChild<QLabel *>(QStringLiteral("queueMessage"))->text().startsWith("Run 2 pruned: test acc 0.500"),
             qPrintable(panel.findChild<QLabel *>(QStringLiteral("queueMessage"))->text()));
    panel.onRunnerIdle();
    QTRY_COMPARE(launches, 3);
    // Above the median of 0.8 and 0.5: it goes on.
    panel.onEpochDone(epoch(1, 0.7));
    QCOMPARE(stops.count(), 1);
}

void tst_QueuePanel::windowPrunesRealRuns()
{
    // A queue file holding a run of the sweep at 0.99 after every epoch, then two real 3-epoch runs of the same sweep
    // that cannot reach it: the window stops each after epoch 1 and goes on to the next.
    const std::string id = "win-prune";
    const std::string bestDir = m_home.filePath(QStringLiteral("best-run")).toStdString();
    QVERIFY(QDir().mkpath(QString::fromStdString(bestDir)));
    std::string csv = std::string(trainlab::RunRecord::metricsHeader()) + "\n";
    trainlab::QueueEntry best;
    best.config = tinyConfig("win-prune");
    best.config.epochs = 3;
    best.tag.id = id;
    best.state = EntryState::Completed;
    best.runDir = bestDir;
    for (int epoch = 1; epoch <= 3; ++epoch) {
        trainlab::EpochMetrics m;
        m.epoch = epoch;
        m.testAcc = 0.99;
        m.seconds = 1.0;
        csv += trainlab::RunRecord::metricsRow(m);
    }
    trainlab::writeFileAtomic(bestDir + "/metrics.csv", csv);
    {
        trainlab::Queue queue(QDir(m_runsDir).filePath(QStringLiteral("queue.json")).toStdString());
        queue.add(best);
        SweepConfig sweep;
        sweep.name = id;
        sweep.base = best.config;
        sweep.seed = {1, 2};
        sweep.pruning = {"median", 1, 1};
        queue.addSweep(sweep, id, "two real runs");
        queue.save();
    }
    MainWindow window;
    window.setRunsDir(m_runsDir, false);
    QueuePanel *panel = window.queuePanel();
    QCOMPARE(states(*panel), QStringList({"completed", "waiting", "waiting"}));
    QSignalSpy ended(panel, &QueuePanel::queueEnded);
    panel->startQueue();
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 120000);
    QTRY_VERIFY(!window.isRunning());
    QCOMPARE(states(*panel), QStringList({"completed", "pruned", "pruned"}));
    for (std::size_t i : {std::size_t(1), std::size_t(2)}) {
        const trainlab::QueueEntry &e = panel->queue().at(i);
        // The second compares with the first pruned one too: both reached epoch 1.
        const char *median = i == 1 ? "at epoch 1 is below the median 0.990 of the sweep's 1 other runs"
                                    : "at epoch 1 is below the median";
        QVERIFY2(e.error.find(median) != std::string::npos, e.error.c_str());
        QCOMPARE(trainlab::readMetrics(e.runDir).size(), std::size_t(1));
        QCOMPARE(trainlab::readRunNotes(e.runDir), "two real runs\npruned by its sweep: " + e.error);
    }
    QCOMPARE(trainlab::Queue::load(panel->stateFile().toStdString()).at(2).state, EntryState::Pruned);
    QVERIFY(window.lastError().isEmpty());
}

void tst_QueuePanel::dialogLoadsPresets()
{
    SweepDialog dialog(tinyConfig("base"));
    auto *preset = child<QComboBox>(dialog, QStringLiteral("sweepPreset"));
    preset->setCurrentIndex(preset->findData(QStringLiteral("lr-sweep-quick")));
    QCOMPARE(dialog.runCount(), 6LL);
    QCOMPARE(child<QLineEdit>(dialog, QStringLiteral("sweepAxis_batch_size"))->text(), QStringLiteral("32, 64"));
    const SweepConfig s = dialog.sweep();
    QCOMPARE(s.base.dataset.trainLimit, std::int64_t(1024));
    QCOMPARE(s.name, std::string("lr-sweep-quick"));
    QVERIFY(dialog.loadPreset(QStringLiteral("d2l-scaling")));
    QCOMPARE(dialog.sweep().mode, std::string("zip"));
    QCOMPARE(child<QLineEdit>(dialog, QStringLiteral("sweepAxis_devices"))->text(), QStringLiteral("cuda:0; cuda:0,cuda:1"));
    QVERIFY(!dialog.loadPreset(QStringLiteral("no-such-sweep")));
    // Back to the current experiment as the base.
    preset->setCurrentIndex(0);
    QCOMPARE(dialog.sweep().base.name, std::string("base"));
}

QTEST_MAIN(tst_QueuePanel)
#include "tst_queuepanel.moc"
