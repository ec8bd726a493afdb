#include "core/sweeps/queue.h"
#include "core/runs/runrecord.h"
#include "core/runs/runstorage.h"
#include "core/sweeps/sweepreport.h"

#include "runcheck.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <fstream>
#include <set>

using trainlab::EntryState;
using trainlab::Queue;
using trainlab::QueueEntry;
using trainlab::SweepConfig;

namespace {

// The built-in sample cut to a few batches, so that each run takes seconds on two cores.
SweepConfig tinySweep(const std::string &axes, int epochs = 1)
{
    SweepConfig s = SweepConfig::fromJson(R"({"schema_version": 1, "name": "tiny", "base": {"name": "tiny",
        "dataset": {"path": "builtin:sample", "train_limit": 64, "test_limit": 32}, "devices": ["cpu"],
        "batch_size": 16, "learning_rate": 0.05, "momentum": 0.9, "epochs": )" + std::to_string(epochs) + R"(, "seed": 1},
        "axes": )" + axes + "}");
    return s;
}

// Stops the whole queue at the first batch of entry stopAt; records what it saw.
class Recorder : public trainlab::QueueObserver
{
public:
    Recorder(trainlab::StopFlag &stop, int stopAt = -1) : m_stop(stop), m_stopAt(stopAt) {}
    void onEntryStarted(std::size_t i, const trainlab::QueueEntry &) override
    {
        m_current = static_cast<int>(i);
        started.push_back(m_current);
    }
    bool onBatch(const trainlab::BatchProgress &) override
    {
        if (m_current == m_stopAt)
            m_stop.store(true);
        return true;
    }
    void onEntryFinished(std::size_t i, const trainlab::QueueEntry &e) override
    {
        finished.push_back(static_cast<int>(i));
        states.push_back(e.state);
    }
    void onFinished(const trainlab::RunResult &) override { ++results; }

    std::vector<int> started, finished;
    std::vector<EntryState> states;
    int results = 0;

private:
    trainlab::StopFlag &m_stop;
    int m_stopAt;
    int m_current = -1;
};

// IDX headers promising 10 images over files that hold fewer: validation passes, loading fails.
QString truncatedDataset(const QString &root)
{
    const QString folder = root + QStringLiteral("/truncated");
    QDir().mkpath(folder);
    auto write = [&](const char *name, const QByteArray &bytes) {
        QFile file(folder + '/' + QLatin1String(name));
        if (file.open(QIODevice::WriteOnly))
            file.write(bytes);
    };
    const QByteArray images = QByteArray::fromHex("00000803" "0000000a" "0000001c" "0000001c") + QByteArray(100, '\0');
    const QByteArray labels = QByteArray::fromHex("00000801" "0000000a") + QByteArray(10, '\1');
    write("train-images-idx3-ubyte", images);
    write("t10k-images-idx3-ubyte", images);
    write("train-labels-idx1-ubyte", labels);
    write("t10k-labels-idx1-ubyte", labels);
    return folder;
}

double meanImagesPerSecond(const std::string &runDir)
{
    const auto rows = trainlab::readMetrics(runDir);
    double sum = 0;
    for (const auto &m : rows)
        sum += m.imagesPerSecond;
    return rows.empty() ? 0.0 : sum / static_cast<double>(rows.size());
}

} // namespace

class tst_Queue : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void gridRunsEveryPointTagged();
    void devicesAxisGivesTheScalingRows();
    void stopLeavesTheRestWaitingAndResumes();
    void aFailedRunDoesNotStopTheQueue_data();
    void aFailedRunDoesNotStopTheQueue();
    void onlyWaitingEntriesMove();
    void killedSweepResumesWhereItStopped();
    void dryRunPrintsThePlanOnly();
    void pruneReasonComparesTheSameEpoch();
    void pruneRulesDecide_data();
    void estimateFromTheEpochsDone();
    void pruneRulesDecide();
    void prunedRunStopsAndTheQueueGoesOn();

private:
    std::string runsDir() const { return m_runs->path().toStdString(); }
    trainlab::RunOptions options() const
    {
        trainlab::RunOptions o;
        o.runsDir = runsDir();
        return o;
    }
    std::unique_ptr<QTemporaryDir> m_runs;
};

void tst_Queue::init()
{
    m_runs = std::make_unique<QTemporaryDir>();
    QVERIFY(m_runs->isValid());
}

void tst_Queue::gridRunsEveryPointTagged()
{
    const SweepConfig sweep = tinySweep(R"({"learning_rate": [0.02, 0.1], "batch_size": [16, 32]})");
    const std::string id = trainlab::newSweepId(runsDir(), sweep.name);
    Queue queue(trainlab::sweepDir(runsDir(), id) + "/queue.json");
    queue.addSweep(sweep, id);
    trainlab::StopFlag stop{false};
    Recorder rec(stop);
    trainlab::runQueue(queue, rec, stop, options());

    QCOMPARE(rec.started, (std::vector<int>{0, 1, 2, 3}));
    QCOMPARE(rec.results, 4);
    const auto runs = trainlab::listRuns(runsDir());
    QCOMPARE(runs.size(), std::size_t(4));
    std::set<int> indices;
    for (const auto &r : runs) {
        QCOMPARE(r.status, std::string("completed"));
        QCOMPARE(r.sweep.id, id);
        QCOMPARE(r.sweep.count, 4);
        indices.insert(r.sweep.index);
        // The folder's own config holds the run's values, not the base's.
        const auto config = trainlab::ExperimentConfig::load(r.dir + "/config.json");
        QCOMPARE(config, queue.at(static_cast<std::size_t>(r.sweep.index)).config);
        QCOMPARE(r.sweep.label(), queue.at(static_cast<std::size_t>(r.sweep.index)).tag.label());
    }
    QCOMPARE(indices, (std::set<int>{0, 1, 2, 3}));
    QCOMPARE(queue.at(1).config.learningRate, 0.02);
    QCOMPARE(queue.at(1).config.batchSize, 32);

    const trainlab::SweepTable table = trainlab::sweepTable(queue.entries());
    QCOMPARE(table.axes, (std::vector<std::string>{"learning_rate", "batch_size"}));
    QVERIFY(!table.hasScaling);
    QCOMPARE(table.rows.size(), std::size_t(4));
    for (std::size_t i = 0; i < 4; ++i) {
        const auto &row = table.rows[i];
        const auto summary = trainlab::readRunSummary(row.runDir);
        QCOMPARE(row.index, static_cast<int>(i) + 1);
        QCOMPARE(row.status, std::string("completed"));
        QCOMPARE(row.bestTestAcc, summary.bestTestAcc);
        QCOMPARE(row.secondsPerEpoch, summary.meanEpochSeconds);
        QVERIFY(qAbs(row.imagesPerSecond - meanImagesPerSecond(row.runDir)) < 0.1);
        QCOMPARE(row.values[0], i < 2 ? std::string("0.02") : std::string("0.1"));
        QCOMPARE(row.values[1], i % 2 ? std::string("32") : std::string("16"));
    }
    const QString text = QString::fromStdString(trainlab::formatSweepTable(table));
    const QStringList lines = text.section(QStringLiteral("\n\n"), 0, 0).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 5);
    const auto best = std::max_element(table.rows.begin(), table.rows.end(), [](const auto &a, const auto &b) {
        return a.bestTestAcc < b.bestTestAcc;
    });
    QVERIFY2(text.contains(QStringLiteral("\n\nbest: run %1 (").arg(best->index)), qPrintable(text));
    QVERIFY2(lines[0].startsWith("#  learning_rate  batch_size  status     best acc  sec/epoch  img/s"), qPrintable(text));
    QVERIFY2(lines[4].contains(QStringLiteral("%1").arg(table.rows[3].bestTestAcc, 0, 'f', 3)), qPrintable(text));
    QVERIFY(!text.contains("speed-up"));

    // The Compare view's source: the state file, and failing that the folders, say the same.
    const auto loaded = trainlab::loadSweepEntries(runsDir(), id);
    QCOMPARE(loaded.size(), std::size_t(4));
    QCOMPARE(trainlab::sweepTableCsv(trainlab::sweepTable(loaded)), trainlab::sweepTableCsv(table));
    QVERIFY(QFile::remove(QString::fromStdString(queue.stateFile())));
    const auto fromFolders = trainlab::loadSweepEntries(runsDir(), id);
    QCOMPARE(fromFolders.size(), std::size_t(4));
    QCOMPARE(fromFolders[2].bestTestAcc, queue.at(2).bestTestAcc);
    QCOMPARE(trainlab::listSweepIds(runsDir()), std::vector<std::string>{id});
    // The same runs chosen by hand (History's Compare Selected Runs, `trainlab-cli compare`): the settings that
    // differ become the axes, and the table is the sweep's.
    std::vector<std::string> dirs;
    for (const auto &row : table.rows)
        dirs.push_back(row.runDir);
    const auto chosen = trainlab::loadRunEntries(dirs);
    QCOMPARE(chosen.front().tag.id, std::string(trainlab::kSelectedRuns));
    QCOMPARE(trainlab::sweepTableCsv(trainlab::sweepTable(chosen)), trainlab::sweepTableCsv(trainlab::sweepTable(fromFolders)));
    QVERIFY(trainlab::sweepTable(trainlab::loadRunEntries({dirs[1], dirs[1]})).axes.empty());
    QCOMPARE(trainlab::sweepTable(trainlab::loadRunEntries({dirs[0], dirs[2]})).axes, std::vector<std::string>{"learning_rate"});
    try {
        trainlab::loadRunEntries({dirs[0], runsDir() + "/nowhere"});
        QFAIL("compared a folder that holds no run");
    } catch (const std::exception &e) {
        QVERIFY2(std::string(e.what()).find("/nowhere/summary.json") != std::string::npos, e.what());
    }
}

void tst_Queue::devicesAxisGivesTheScalingRows()
{
    const SweepConfig sweep = tinySweep(R"({"devices": [["cpu"], ["cpu", "cpu"]]})");
    Queue queue;
    queue.addSweep(sweep, "scaling");
    trainlab::StopFlag stop{false};
    Recorder rec(stop);
    trainlab::runQueue(queue, rec, stop, options());
    QCOMPARE(queue.at(0).state, EntryState::Completed);
    QCOMPARE(queue.at(1).state, EntryState::Completed);
    QCOMPARE(trainlab::readRunSummary(queue.at(1).runDir).devices, (std::vector<std::string>{"cpu", "cpu"}));

    const trainlab::SweepTable table = trainlab::sweepTable(queue.entries());
    QVERIFY(table.hasScaling);
    const auto &one = table.rows[0], &two = table.rows[1];
    QCOMPARE(one.speedup, 1.0);
    QCOMPARE(one.ideal, 1.0);
    QCOMPARE(one.efficiency, 100.0);
    QCOMPARE(two.devices, 2);
    QCOMPARE(two.ideal, 2.0);
    QVERIFY(two.imagesPerSecond > 0);
    QCOMPARE(two.speedup, two.imagesPerSecond / one.imagesPerSecond);
    QCOMPARE(two.efficiency, 100.0 * two.speedup / 2.0);
    const QString text = QString::fromStdString(trainlab::formatSweepTable(table));
    QVERIFY2(text.contains("speed-up  ideal  eff %"), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("%1x  2.00x").arg(two.speedup, 0, 'f', 2)), qPrintable(text));
}

void tst_Queue::stopLeavesTheRestWaitingAndResumes()
{
    const SweepConfig sweep = tinySweep(R"({"seed": [1, 2, 3]})");
    const std::string state = trainlab::sweepDir(runsDir(), "stop") + "/queue.json";
    Queue queue(state);
    queue.addSweep(sweep, "stop");
    trainlab::StopFlag stop{false};
    Recorder rec(stop, 1);
    trainlab::runQueue(queue, rec, stop, options());
    QCOMPARE(rec.started, (std::vector<int>{0, 1}));
    QCOMPARE(queue.at(0).state, EntryState::Completed);
    QCOMPARE(queue.at(1).state, EntryState::Stopped);
    QCOMPARE(queue.at(2).state, EntryState::Waiting);
    QCOMPARE(trainlab::readRunSummary(queue.at(1).runDir).status, std::string("stopped"));
    QCOMPARE(trainlab::listRuns(runsDir()).size(), std::size_t(2));
    const auto table = trainlab::sweepTable(queue.entries());
    QCOMPARE(table.rows[1].status, std::string("stopped"));
    QCOMPARE(table.rows[2].status, std::string("not started"));
    QVERIFY(QString::fromStdString(trainlab::formatSweepTable(table)).contains(QRegularExpression("\n3  3     not started")));

    // Read back from its state file, the queue goes on: the stopped run in its own folder, then the rest.
    Queue again = Queue::load(state);
    QCOMPARE(again.at(1).state, EntryState::Stopped);
    QVERIFY(again.resumes(1));
    const std::string stoppedDir = again.at(1).runDir;
    stop.store(false);
    Recorder rec2(stop);
    trainlab::runQueue(again, rec2, stop, options());
    QCOMPARE(rec2.started, (std::vector<int>{1, 2}));
    for (std::size_t i = 0; i < 3; ++i)
        QCOMPARE(again.at(i).state, EntryState::Completed);
    QCOMPARE(again.at(1).runDir, stoppedDir);
    QCOMPARE(trainlab::readRunSummary(stoppedDir).resumedAt.size(), std::size_t(1));
    QCOMPARE(trainlab::listRuns(runsDir()).size(), std::size_t(3));
}

void tst_Queue::aFailedRunDoesNotStopTheQueue_data()
{
    QTest::addColumn<bool>("stopOnFailure");
    QTest::newRow("goes on") << false;
    QTest::newRow("stop on failure") << true;
}

void tst_Queue::aFailedRunDoesNotStopTheQueue()
{
    QFETCH(bool, stopOnFailure);
    SweepConfig sweep = tinySweep(R"({"seed": [1, 2]})");
    sweep.stopOnFailure = stopOnFailure;
    Queue queue;
    queue.addSweep(sweep, "fail");
    trainlab::QueueEntry broken;
    broken.config = sweep.base;
    broken.config.name = "broken";
    broken.config.dataset.path = truncatedDataset(m_runs->path()).toStdString();
    broken.config.dataset.trainLimit = 0;
    broken.config.dataset.testLimit = 0;
    broken.config.batchSize = 5;
    queue.add(broken);
    QVERIFY(queue.move(2, 1));
    trainlab::StopFlag stop{false};
    Recorder rec(stop);
    trainlab::runQueue(queue, rec, stop, options());
    QCOMPARE(queue.at(0).state, EntryState::Completed);
    QCOMPARE(queue.at(1).state, EntryState::Failed);
    QVERIFY2(QString::fromStdString(queue.at(1).error).contains("truncated"), queue.at(1).error.c_str());
    QCOMPARE(queue.at(2).state, stopOnFailure ? EntryState::Waiting : EntryState::Completed);
    QCOMPARE(queue.failureStopped(), stopOnFailure);
    const QString text = QString::fromStdString(trainlab::formatSweepTable(trainlab::sweepTable(queue.entries())));
    QVERIFY2(text.contains("run 2 failed: "), qPrintable(text));
}

void tst_Queue::onlyWaitingEntriesMove()
{
    Queue queue;
    queue.addSweep(tinySweep(R"({"seed": [1, 2, 3]})"), "m");
    QVERIFY(queue.move(0, 2));
    QCOMPARE(queue.at(2).tag.index, 0);
    QCOMPARE(queue.at(0).tag.index, 1);
    queue.markStarted(0);
    QVERIFY(!queue.move(0, 1));
    QVERIFY(!queue.remove(0));
    QVERIFY(queue.remove(1));
    QCOMPARE(queue.size(), std::size_t(2));
    QVERIFY(!queue.move(5, 0));
}

void tst_Queue::killedSweepResumesWhereItStopped()
{
    const QString file = m_runs->filePath(QStringLiteral("sweep.json"));
    tinySweep(R"({"seed": [1, 2, 3]})", 2).save(file.toStdString());
    const QString runs = m_runs->filePath(QStringLiteral("runs"));
    // Frozen once run 2's first epoch is on disk, then killed, as a power cut would.
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("TRAINLAB_TEST_PAUSE"), QStringLiteral("epoch-end#3"));
    QProcess *killed = startCli({QStringLiteral("sweep"), file, QStringLiteral("--runs-dir"), runs, QStringLiteral("--notes"),
                                 QStringLiteral("seeds 1 to 3")}, env);
    QString err;
    QTRY_VERIFY_WITH_TIMEOUT((err += QString::fromUtf8(killed->readAllStandardError())).contains("TRAINLAB_PAUSED epoch-end"), 120000);
    killed->kill();
    const CliOutcome k = finishCli(killed);
    QVERIFY2(k.out.contains("run 1/3 completed"), qPrintable(k.out));
    const QStringList sweeps = QDir(runs + "/sweeps").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(sweeps.size(), 1);
    const QString dir = runs + "/sweeps/" + sweeps[0];
    const Queue before = Queue::load((dir + "/queue.json").toStdString());
    QCOMPARE(before.at(1).state, EntryState::Running);
    const std::string interrupted = before.at(1).runDir;
    QCOMPARE(trainlab::readRunSummary(interrupted).status, std::string("interrupted"));

    const CliOutcome r = finishCli(startCli({QStringLiteral("sweep"), QStringLiteral("--resume"), dir}));
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    QVERIFY2(!r.out.contains("run 1/3"), qPrintable(r.out));
    QVERIFY2(r.out.contains("run 2/3 completed") && r.out.contains("run 3/3 completed"), qPrintable(r.out));
    const Queue after = Queue::load((dir + "/queue.json").toStdString());
    QCOMPARE(after.at(1).runDir, interrupted);
    QCOMPARE(trainlab::readRunSummary(interrupted).status, std::string("completed"));
    QCOMPARE(trainlab::readMetrics(interrupted).size(), std::size_t(2));
    QCOMPARE(trainlab::listRuns(runs.toStdString()).size(), std::size_t(3));
    // --notes: on every run, run 3 started by the resumed process included.
    for (std::size_t i = 0; i < 3; ++i)
        QCOMPARE(trainlab::readRunNotes(after.at(i).runDir), std::string("seeds 1 to 3"));
    // The closing table covers the whole sweep, and its CSV is kept beside the state.
    QVERIFY2(r.out.contains(QRegularExpression("\n1  1     completed")), qPrintable(r.out));
    QVERIFY(QFile::exists(dir + "/results.csv"));
}

void tst_Queue::dryRunPrintsThePlanOnly()
{
    const QString runs = m_runs->filePath(QStringLiteral("runs"));
    const CliOutcome o = finishCli(startCli({QStringLiteral("sweep"), QStringLiteral("--preset"), QStringLiteral("lr-sweep-quick"),
                                             QStringLiteral("--dry-run"), QStringLiteral("--runs-dir"), runs}));
    QVERIFY2(o.exitCode == 0, qPrintable(o.out + o.err));
    QVERIFY2(o.out.contains("6 runs, grid learning_rate (3) batch_size (2)"), qPrintable(o.out));
    QVERIFY2(o.out.contains("6  planned    learning_rate=0.1 batch_size=64"), qPrintable(o.out));
    QVERIFY(!QFileInfo::exists(runs));
    const CliOutcome bad = finishCli(startCli({QStringLiteral("sweep"), QStringLiteral("--preset"), QStringLiteral("d2l-scaling"),
                                               QStringLiteral("--runs-dir"), runs}));
    QCOMPARE(bad.exitCode, 2);
    QVERIFY2(bad.err.contains("axes.devices[1][1]: is not on this machine"), qPrintable(bad.err));
    QVERIFY(!QFileInfo::exists(runs));

    // Over 200 runs the CLI asks first: without --yes it names the count and starts nothing.
    SweepConfig big = tinySweep("{}");
    for (std::uint64_t seed = 0; seed < 201; ++seed)
        big.seed.push_back(seed);
    const QString file = m_runs->filePath(QStringLiteral("big.json"));
    big.save(file.toStdString());
    const CliOutcome ask = finishCli(startCli({QStringLiteral("sweep"), file, QStringLiteral("--runs-dir"), runs}));
    QCOMPARE(ask.exitCode, 2);
    QVERIFY2(ask.err.contains("201 runs, more than 200") && ask.err.contains("--yes"), qPrintable(ask.err));
    QVERIFY(!QFileInfo::exists(runs));

    // A random sweep's plan names its draws; the runs are the ones planSweep draws.
    SweepConfig random = tinySweep("{}");
    random.mode = "random";
    random.runs = 3;
    random.randomSeed = 5;
    random.ranges["learning_rate"] = {0.01, 0.2, true};
    const QString randomFile = m_runs->filePath(QStringLiteral("random.json"));
    random.save(randomFile.toStdString());
    const CliOutcome drawn = finishCli(startCli({QStringLiteral("sweep"), randomFile, QStringLiteral("--dry-run"),
                                                 QStringLiteral("--runs-dir"), runs}));
    QVERIFY2(drawn.exitCode == 0, qPrintable(drawn.out + drawn.err));
    QVERIFY2(drawn.out.contains("3 runs, random (3 runs, seed 5) learning_rate (0.01..0.2 log)"), qPrintable(drawn.out));
    const auto planned = trainlab::planSweep(random);
    for (const auto &run : planned)
        QVERIFY2(drawn.out.contains(QString::fromStdString("planned    " + run.tag.label())), qPrintable(drawn.out));
    // Other draws from the command line; a grid has none to change.
    const CliOutcome more = finishCli(startCli({QStringLiteral("sweep"), randomFile, QStringLiteral("--runs"), QStringLiteral("4"),
                                                QStringLiteral("--random-seed"), QStringLiteral("6"), QStringLiteral("--dry-run"),
                                                QStringLiteral("--runs-dir"), runs}));
    QVERIFY2(more.exitCode == 0 && more.out.contains("4 runs, random (4 runs, seed 6)"), qPrintable(more.out + more.err));
    random.runs = 4;
    random.randomSeed = 6;
    QVERIFY2(more.out.contains(QString::fromStdString("planned    " + trainlab::planSweep(random)[3].tag.label())), qPrintable(more.out));
    const CliOutcome grid = finishCli(startCli({QStringLiteral("sweep"), QStringLiteral("--preset"), QStringLiteral("lr-sweep-quick"),
                                                QStringLiteral("--runs"), QStringLiteral("4"), QStringLiteral("--runs-dir"), runs}));
    QCOMPARE(grid.exitCode, 2);
    QVERIFY2(grid.err.contains("draw the runs of a random sweep; this one is mode \"grid\""), qPrintable(grid.err));
    QVERIFY(!QFileInfo::exists(runs));
}

namespace {

QueueEntry finishedEntry(const std::string &sweepId, std::vector<double> testAcc)
{
    QueueEntry e;
    e.tag.id = sweepId;
    e.state = EntryState::Completed;
    for (double acc : testAcc) {
        trainlab::EpochMetrics m;
        m.epoch = static_cast<int>(e.metrics.size()) + 1;
        m.testAcc = acc;
        e.metrics.push_back(m);
    }
    return e;
}

trainlab::EpochMetrics epochAt(int epoch, double testAcc)
{
    trainlab::EpochMetrics m;
    m.epoch = epoch;
    m.testAcc = testAcc;
    return m;
}

} // namespace

void tst_Queue::pruneReasonComparesTheSameEpoch()
{
    Queue queue;
    QueueEntry running;
    running.tag.id = "s";
    running.config.epochs = 4;
    running.prune = {"median", 3, 2};
    queue.add(running);
    queue.add(finishedEntry("s", {0.2, 0.50, 0.7}));
    queue.add(finishedEntry("s", {0.3, 0.60}));          // pruned after epoch 2: it still counts there
    queue.add(finishedEntry("other", {0.9, 0.95, 0.95}));   // another sweep's run never counts
    // Two runs of the sweep reached epoch 2: fewer than startup_runs.
    QCOMPARE(queue.pruneReason(0, epochAt(2, 0.1)), std::string());
    queue.add(finishedEntry("s", {0.4, 0.80, 0.8}));
    // Epoch 1 is before min_epochs; at epoch 2 the median of 0.5, 0.6, 0.8 is 0.6.
    QCOMPARE(queue.pruneReason(0, epochAt(1, 0.0)), std::string());
    QCOMPARE(queue.pruneReason(0, epochAt(2, 0.6)), std::string());
    QCOMPARE(queue.pruneReason(0, epochAt(2, 0.59)),
             std::string("test acc 0.590 at epoch 2 is below the median 0.600 of the sweep's 3 other runs there"));
    queue.add(finishedEntry("s", {0.1, 0.9}));
    QVERIFY(QString::fromStdString(queue.pruneReason(0, epochAt(2, 0.69))).contains("below the median 0.700 of the sweep's 4"));
    // The last epoch saves nothing; only two runs reached epoch 3.
    QCOMPARE(queue.pruneReason(0, epochAt(4, 0.0)), std::string());
    QCOMPARE(queue.pruneReason(0, epochAt(3, 0.0)), std::string());
    // Without a rule nothing is pruned.
    QCOMPARE(queue.pruneReason(1, epochAt(2, 0.0)), std::string());
}

void tst_Queue::pruneRulesDecide_data()
{
    QTest::addColumn<QString>("rule");
    QTest::addColumn<double>("value");
    QTest::addColumn<double>("acc");
    QTest::addColumn<QString>("reason");
    // The others at the epoch: 0.2, 0.4, 0.6, 0.8, 1.0.
    QTest::newRow("median, below") << "median" << 0.0 << 0.59
                                   << "test acc 0.590 at epoch 2 is below the median 0.600 of the sweep's 5 other runs there";
    QTest::newRow("median, at it") << "median" << 0.0 << 0.6 << "";
    QTest::newRow("percentile 50 is the median") << "percentile" << 50.0 << 0.59
                                                 << "test acc 0.590 at epoch 2 is below 0.600, the bar for the top 50 % of the sweep's 5 other runs there";
    // The 75th percentile of five values lies on the fourth: 0.8.
    QTest::newRow("top 25 %, below") << "percentile" << 25.0 << 0.79
                                     << "test acc 0.790 at epoch 2 is below 0.800, the bar for the top 25 % of the sweep's 5 other runs there";
    QTest::newRow("top 25 %, at it") << "percentile" << 25.0 << 0.8 << "";
    // The 90th percentile lies between 0.8 and 1.0, at 0.92.
    QTest::newRow("top 10 %, between two runs") << "percentile" << 10.0 << 0.91
                                                << "test acc 0.910 at epoch 2 is below 0.920, the bar for the top 10 % of the sweep's 5 other runs there";
    QTest::newRow("top 90 %, above the lowest") << "percentile" << 90.0 << 0.3 << "";
    QTest::newRow("threshold, below") << "threshold" << 0.15 << 0.1 << "test acc 0.100 at epoch 2 is below the threshold 0.15";
    QTest::newRow("threshold, at it") << "threshold" << 0.15 << 0.15 << "";
}

// What is left, at the mean seconds per epoch so far: a waiting run's epochs and the rest of a stopped one.
void tst_Queue::estimateFromTheEpochsDone()
{
    Queue queue;
    QueueEntry waiting;
    waiting.config.epochs = 3;
    queue.add(waiting);
    QVERIFY(!queue.estimate().has_value());   // no epoch done yet: no guess
    QueueEntry done = finishedEntry("s", {0.5, 0.6});
    done.metrics[0].seconds = 10.0;
    done.metrics[1].seconds = 20.0;
    done.epochsDone = 2;
    queue.add(done);
    QueueEntry stopped = finishedEntry("s", {0.4});
    stopped.state = EntryState::Stopped;
    stopped.config.epochs = 3;
    stopped.epochsDone = 1;
    stopped.metrics[0].seconds = 15.0;
    queue.add(stopped);
    auto left = queue.estimate();
    QVERIFY(left.has_value());
    QCOMPARE(left->runsLeft, 2);
    QCOMPARE(left->epochsLeft, 5LL);
    QCOMPARE(left->seconds, 75.0);
    QCOMPARE(left->text(), std::string("2 runs left, about 75 s (at 15.0 s per epoch so far)"));
    // Longer: minutes, then hours; a pruning rule makes it an upper bound.
    QueueEntry big;
    big.config.epochs = 400;
    big.prune = {"median", 3, 1};
    queue.add(big);
    QCOMPARE(queue.estimate()->text(), std::string("3 runs left, at most about 1.7 h (at 15.0 s per epoch so far)"));
    QVERIFY(queue.remove(3));
    waiting.config.epochs = 10;
    queue.add(waiting);
    QCOMPARE(queue.estimate()->text(), std::string("3 runs left, about 4 min (at 15.0 s per epoch so far)"));
    // A wall time below the epochs' training seconds (a run found completed in its folder) counts as those.
    QueueEntry instant = done;
    instant.wallSeconds = 0.5;
    Queue found;
    found.add(instant);
    found.add(waiting);
    QCOMPARE(found.estimate()->secondsPerEpoch, 15.0);
    // Once a run has its wall time (setup and evaluation included), that sets the pace: 2 epochs in 50 s.
    QueueEntry timed = done;
    timed.wallSeconds = 50.0;
    timed.epochsDone = 2;
    Queue paced;
    paced.add(timed);
    paced.add(waiting);
    QCOMPARE(paced.estimate()->text(), std::string("1 run left, about 4 min (at 25.0 s per epoch so far)"));
    const std::string state = runsDir() + "/estimate-queue.json";
    Queue kept(state);
    kept.add(timed);
    QCOMPARE(Queue::load(state).at(0).wallSeconds, 50.0);   // queue.json keeps it for a resumed sweep
    // Nothing left to run.
    Queue finished;
    finished.add(done);
    QVERIFY(!finished.estimate().has_value());
}

// Each rule against the same sweep: the median, a percentile interpolated as numpy's, a fixed threshold.
void tst_Queue::pruneRulesDecide()
{
    QFETCH(QString, rule);
    QFETCH(double, value);
    QFETCH(double, acc);
    QFETCH(QString, reason);
    Queue queue;
    QueueEntry running;
    running.tag.id = "s";
    running.config.epochs = 3;
    running.prune = {rule.toStdString(), 5, 1, value, value};
    queue.add(running);
    for (double other : {1.0, 0.2, 0.8, 0.4, 0.6})
        queue.add(finishedEntry("s", {other, other, other}));
    QCOMPARE(QString::fromStdString(queue.pruneReason(0, epochAt(2, acc))), reason);
    // A threshold needs no other run; the others wait for five.
    Queue alone;
    alone.add(running);
    alone.add(finishedEntry("s", {1.0, 1.0, 1.0}));
    QCOMPARE(alone.pruneReason(0, epochAt(2, acc)).empty(), rule != "threshold" || reason.isEmpty());
}

void tst_Queue::prunedRunStopsAndTheQueueGoesOn()
{
    // A run already at 0.99 after epoch 1, then two 2-epoch runs that cannot reach it: each stops after epoch 1.
    SweepConfig sweep = tinySweep(R"({"seed": [1, 2]})", 2);
    sweep.pruning = {"median", 1, 1};
    const std::string id = "prune";
    const std::string state = trainlab::sweepDir(runsDir(), id) + "/queue.json";
    Queue queue(state);
    QueueEntry best = finishedEntry(id, {0.99, 0.99});
    best.config = sweep.base;
    queue.add(best);
    queue.addSweep(sweep, id);
    QCOMPARE(queue.at(1).prune, sweep.pruning);
    trainlab::StopFlag stop{false};
    Recorder rec(stop);
    trainlab::runQueue(queue, rec, stop, options());
    for (std::size_t i : {std::size_t(1), std::size_t(2)}) {
        const QueueEntry &e = queue.at(i);
        QCOMPARE(e.state, EntryState::Pruned);
        // The second compares with the first pruned one too: both reached epoch 1.
        const QString median = i == 1 ? "median 0.990 of the sweep's 1 other runs" : "of the sweep's 2 other runs";
        QVERIFY2(QString::fromStdString(e.error).contains("at epoch 1 is below the " + QString(i == 1 ? median : "")), e.error.c_str());
        QVERIFY2(QString::fromStdString(e.error).contains(median), e.error.c_str());
        QCOMPARE(trainlab::readMetrics(e.runDir).size(), std::size_t(1));
        QCOMPARE(trainlab::readRunSummary(e.runDir).status, std::string("stopped"));
        QCOMPARE(trainlab::readRunNotes(e.runDir), "pruned by its sweep: " + e.error);
    }
    QCOMPARE(queue.next(), -1);   // a pruned run is kept, never resumed
    const Queue again = Queue::load(state);
    QCOMPARE(again.at(2).state, EntryState::Pruned);
    QCOMPARE(again.at(2).prune, sweep.pruning);
    QCOMPARE(again.next(), -1);
    const QString text = QString::fromStdString(trainlab::formatSweepTable(trainlab::sweepTable(queue.entries())));
    QVERIFY2(text.contains(QRegularExpression("\n2  2     pruned")) && text.contains("run 2 pruned: test acc"), qPrintable(text));
}

QTEST_GUILESS_MAIN(tst_Queue)
#include "tst_queue.moc"
