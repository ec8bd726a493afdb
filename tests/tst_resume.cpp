#include "core/util/atomicfile.h"
#include "core/runs/runrecord.h"
#include "core/runs/runstorage.h"
#include "core/train/checkpoint.h"
#include "core/train/engine.h"
#include "core/train/model.h"
#include "core/train/trainer.h"

#include "runcheck.h"
#include "testutil.h"

#include <QDir>
#include <QFile>
#include <QMap>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

using trainlab::ExperimentConfig;
using trainlab::RunStatus;

namespace {

ExperimentConfig tiny(int epochs, std::vector<std::string> devices = {"cpu"})
{
    ExperimentConfig c;
    c.name = "resume";
    c.dataset.trainLimit = 32;
    c.dataset.testLimit = 16;
    c.batchSize = 16;
    c.learningRate = 0.05;
    c.momentum = 0.9;
    c.epochs = epochs;
    c.seed = 5;
    c.cpuThreads = 2;
    c.devices = std::move(devices);
    return c;
}

// Asks for a stop once epoch `after` is reported (0: never), as the window's Stop button does.
class StopAfter : public RecordingObserver
{
public:
    StopAfter(trainlab::StopFlag &stop, int after) : m_stop(stop), m_after(after) {}
    void onEpoch(const trainlab::EpochMetrics &m) override
    {
        RecordingObserver::onEpoch(m);
        if (m.epoch == m_after)
            m_stop = true;
    }

private:
    trainlab::StopFlag &m_stop;
    int m_after;
};

std::string logDigest(const std::vector<std::string> &logs)
{
    for (const auto &l : logs) {
        if (l.rfind("final weights digest: ", 0) == 0)
            return l.substr(22);
    }
    return {};
}

QString cliDigest(const QString &out)
{
    const auto m = QRegularExpression(QStringLiteral("final weights digest: ([0-9a-f]{16})")).match(out);
    return m.hasMatch() ? m.captured(1) : QString();
}

} // namespace

class tst_Resume : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void resumeEqualsUninterrupted_data();
    void resumeEqualsUninterrupted();
    void continueEqualsLongerRun();
    void changedConfigRefused();
    void brokenCheckpointRefused_data();
    void brokenCheckpointRefused();
    void lockedRunRefused();
    void interruptedStatus();
    void bestCheckpointKept();
    void checkpointPolicy_data();
    void checkpointPolicy();
    void deleteCheckpoints();
    void twoNodesResume();
    void cliResumeAndRuns();
    void warmupSecondsAddUp();

private:
    std::string runsDir(const char *name) { return m_dir.filePath(QString::fromLatin1(name)).toStdString(); }
    trainlab::RunResult run(const ExperimentConfig &c, const std::string &runs, RecordingObserver &o,
                            trainlab::StopFlag &stop)
    {
        trainlab::RunOptions options;
        options.runsDir = runs;
        return trainlab::runExperiment(c, o, stop, options);
    }
    QTemporaryDir m_dir;
    QMap<QString, std::pair<trainlab::RunResult, std::string>> m_straight;
};

void tst_Resume::resumeEqualsUninterrupted_data()
{
    QTest::addColumn<QStringList>("devices");
    QTest::addColumn<int>("stopAfter");
    QTest::addColumn<bool>("augmented");
    QTest::addColumn<double>("ema");   // ema_decay
    QTest::addColumn<QString>("optimizer");
    QTest::newRow("1 replica, after epoch 1") << QStringList{"cpu"} << 1 << false << 0.0 << "sgd";
    QTest::newRow("1 replica, after epoch 2") << QStringList{"cpu"} << 2 << false << 0.0 << "sgd";
    // Augmentation's draws come from the seed and the global step, so they too continue exactly; so does the
    // weights' average, which the checkpoint keeps and evaluation uses.
    QTest::newRow("2 replicas, augmented, averaged, after epoch 1") << QStringList{"cpu", "cpu"} << 1 << true << 0.9 << "sgd";
    // AdamW's moments and step count travel in the checkpoint: its bias correction goes on from the right step.
    QTest::newRow("AdamW, 2 replicas, after epoch 1") << QStringList{"cpu", "cpu"} << 1 << false << 0.0 << "adamw";
}

void tst_Resume::resumeEqualsUninterrupted()
{
    QFETCH(QStringList, devices);
    QFETCH(int, stopAfter);
    QFETCH(bool, augmented);
    QFETCH(double, ema);
    QFETCH(QString, optimizer);
    std::vector<std::string> list;
    for (const QString &d : devices)
        list.push_back(d.toStdString());
    ExperimentConfig config = tiny(3, list);
    if (augmented)
        config.augmentation = {true, 3, 0.5};
    config.emaDecay = ema;
    if (optimizer == QLatin1String("adamw")) {
        config.optimizer = "adamw";
        config.momentum = 0;
        config.learningRate = 1e-3;
        config.weightDecay = 0.01;
    }
    const std::string runs = runsDir(QTest::currentDataTag());

    // One uninterrupted run per device list, shared by the rows.
    const QString key = devices.join(QLatin1Char(',')) + (augmented ? QStringLiteral("+augmented") : QString())
                        + QString::number(ema) + optimizer;
    if (!m_straight.contains(key)) {
        trainlab::StopFlag never{false};
        RecordingObserver whole;
        const auto straight = run(config, runs + "/straight", whole, never);
        QCOMPARE(toString(straight.status), "completed");
        m_straight[key] = {straight, logDigest(whole.logs)};
    }
    const trainlab::RunResult straight = m_straight[key].first;
    const std::string straightDigest = m_straight[key].second;

    trainlab::StopFlag stop{false};
    StopAfter first(stop, stopAfter);
    const auto stopped = run(config, runs + "/parts", first, stop);
    QCOMPARE(toString(stopped.status), "stopped");
    QCOMPARE(trainlab::readRunSummary(stopped.runDir).checkpointEpoch, stopAfter);

    trainlab::StopFlag again{false};
    RecordingObserver second;
    const auto resumed = trainlab::resumeRun(stopped.runDir, second, again);
    QVERIFY2(resumed.status == RunStatus::Completed, resumed.error.c_str());
    QCOMPARE(resumed.runDir, stopped.runDir);
    QCOMPARE(second.started.epochsDone, stopAfter);
    QCOMPARE(second.started.doneMetrics.size(), size_t(stopAfter));
    QVERIFY(second.started.doneMetrics.back().gradNorm > 0);   // the chart redraws the done epochs whole
    QCOMPARE(second.epochs.size(), size_t(3 - stopAfter));
    QCOMPARE(resumed.epochs.size(), size_t(3));
    // Bitwise the same weights and the same learning curve as the run that was never stopped.
    QCOMPARE(logDigest(second.logs), straightDigest);
    QCOMPARE(learningColumns(resumed.runDir), learningColumns(straight.runDir));
    // The evaluated weights too (the average, where the run keeps one), bitwise.
    auto evaluated = trainlab::makeResNet18(1, 10), straightEvaluated = trainlab::makeResNet18(1, 10);
    trainlab::loadEvaluatedWeights(resumed.runDir + "/checkpoint.pt", *evaluated);
    trainlab::loadEvaluatedWeights(straight.runDir + "/checkpoint.pt", *straightEvaluated);
    QCOMPARE(trainlab::weightsDigest(*evaluated), trainlab::weightsDigest(*straightEvaluated));
    const auto summary = trainlab::readRunSummary(resumed.runDir);
    QCOMPARE(summary.status, std::string("completed"));
    QCOMPARE(summary.epochsDone, 3);
    QCOMPARE(summary.resumedAt.size(), size_t(1));
    QCOMPARE(summary.bestTestAcc, straight.bestTestAcc);
    QVERIFY(summary.totalSeconds > 0);
}

void tst_Resume::continueEqualsLongerRun()
{
    const std::string runs = runsDir("continue");
    trainlab::StopFlag never{false};
    RecordingObserver longer, shorter, more;
    const auto three = run(tiny(3), runs + "/three", longer, never);
    const auto two = run(tiny(2), runs + "/two", shorter, never);
    QCOMPARE(toString(two.status), "completed");
    // Without more epochs there is nothing to do: refused, the run left as it was.
    RecordingObserver refused;
    const QByteArray before = fileBytes(two.runDir + "/summary.json");
    const auto nothing = trainlab::resumeRun(two.runDir, refused, never);
    QCOMPARE(toString(nothing.status), "failed");
    QVERIFY2(nothing.error.find("all 2 epochs are done") != std::string::npos, nothing.error.c_str());
    QCOMPARE(fileBytes(two.runDir + "/summary.json"), before);

    const auto continued = trainlab::resumeRun(two.runDir, more, never, {}, 3);
    QVERIFY2(continued.status == RunStatus::Completed, continued.error.c_str());
    QCOMPARE(more.epochs.size(), size_t(1));
    QCOMPARE(logDigest(more.logs), logDigest(longer.logs));
    QCOMPARE(learningColumns(two.runDir), learningColumns(three.runDir));
    QCOMPARE(ExperimentConfig::load(two.runDir + "/config.json").epochs, 3);
    QCOMPARE(trainlab::readRunSummary(two.runDir).epochsPlanned, 3);

    RecordingObserver fewer;
    const auto shrink = trainlab::resumeRun(two.runDir, fewer, never, {}, 2);
    QVERIFY2(shrink.error.find("epochs: must be at least the 3 epochs already done, got 2") != std::string::npos,
             shrink.error.c_str());
}

void tst_Resume::changedConfigRefused()
{
    trainlab::StopFlag stop{false};
    StopAfter o(stop, 1);
    const auto stopped = run(tiny(3), runsDir("changed"), o, stop);
    QCOMPARE(toString(stopped.status), "stopped");
    ExperimentConfig edited = tiny(3);
    edited.learningRate = 0.2;
    edited.dataset.trainLimit = 24;
    edited.save(stopped.runDir + "/config.json");
    const QByteArray summary = fileBytes(stopped.runDir + "/summary.json");
    const QByteArray metrics = fileBytes(stopped.runDir + "/metrics.csv");
    trainlab::StopFlag never{false};
    RecordingObserver again;
    const auto r = trainlab::resumeRun(stopped.runDir, again, never);
    QCOMPARE(toString(r.status), "failed");
    QVERIFY2(r.error.find("config.json: differs from the configuration the run was trained with in: dataset.train_limit, learning_rate")
                 != std::string::npos, r.error.c_str());
    QCOMPARE(again.startedCount, 0);
    QCOMPARE(fileBytes(stopped.runDir + "/summary.json"), summary);
    QCOMPARE(fileBytes(stopped.runDir + "/metrics.csv"), metrics);
}

void tst_Resume::brokenCheckpointRefused_data()
{
    QTest::addColumn<int>("keepBytes");
    QTest::addColumn<QByteArray>("replacement");
    QTest::newRow("truncated") << 4096 << QByteArray();
    QTest::newRow("garbage") << 0 << QByteArray("not a checkpoint at all");
    QTest::newRow("empty") << 0 << QByteArray();
}

void tst_Resume::brokenCheckpointRefused()
{
    QFETCH(int, keepBytes);
    QFETCH(QByteArray, replacement);
    trainlab::StopFlag stop{false};
    StopAfter o(stop, 1);
    const auto stopped = run(tiny(3), runsDir(QTest::currentDataTag()), o, stop);
    const std::string checkpoint = stopped.runDir + "/checkpoint.pt";
    const QByteArray bytes = fileBytes(checkpoint).left(keepBytes) + replacement;
    trainlab::writeFileAtomic(checkpoint, bytes.toStdString());
    const QByteArray summary = fileBytes(stopped.runDir + "/summary.json");
    trainlab::StopFlag never{false};
    RecordingObserver again;
    const auto r = trainlab::resumeRun(stopped.runDir, again, never);
    QCOMPARE(toString(r.status), "failed");
    QVERIFY2(r.error.find(checkpoint + ": not a TrainLab checkpoint") == 0, r.error.c_str());
    QCOMPARE(fileBytes(stopped.runDir + "/summary.json"), summary);
    QCOMPARE(fileBytes(checkpoint), bytes);
    QCOMPARE(trainlab::readRunSummary(stopped.runDir).status, std::string("stopped"));
}

void tst_Resume::lockedRunRefused()
{
    trainlab::StopFlag stop{false};
    StopAfter o(stop, 1);
    const auto stopped = run(tiny(2), runsDir("locked"), o, stop);
    // Another process resuming it holds the folder's lock (a second open file description acts as one).
    const auto holder = trainlab::RunRecord::reopen(stopped.runDir, tiny(2), o.result.epochs, 1);
    QVERIFY(trainlab::runFolderInUse(stopped.runDir));
    QCOMPARE(trainlab::readRunSummary(stopped.runDir).status, std::string("running"));
    trainlab::StopFlag never{false};
    RecordingObserver again;
    const auto r = trainlab::resumeRun(stopped.runDir, again, never);
    QCOMPARE(toString(r.status), "failed");
    QVERIFY2(r.error.find("in use by another TrainLab process (pid " + std::to_string(::getpid())) != std::string::npos,
             r.error.c_str());
    try {
        trainlab::RunRecord::reopen(stopped.runDir, tiny(2), o.result.epochs, 1);
        QFAIL("a second reopen must be refused");
    } catch (const std::runtime_error &e) {
        QVERIFY2(std::string(e.what()).find("in use by another TrainLab process") != std::string::npos, e.what());
    }
}

void tst_Resume::interruptedStatus()
{
    trainlab::StopFlag never{false};
    RecordingObserver o;
    const auto done = run(tiny(1), runsDir("interrupted"), o, never);
    // What a killed run leaves: summary.json still says running, and nobody holds the lock.
    std::string text = fileBytes(done.runDir + "/summary.json").toStdString();
    text.replace(text.find("\"completed\""), 11, "\"running\"");
    trainlab::writeFileAtomic(done.runDir + "/summary.json", text);
    QCOMPARE(trainlab::readRunSummary(done.runDir).status, std::string("interrupted"));
    QVERIFY(trainlab::readRunSummary(done.runDir).canResume());
    const int fd = ::open(done.runDir.c_str(), O_RDONLY | O_DIRECTORY);
    QVERIFY(fd >= 0);
    QCOMPARE(::flock(fd, LOCK_EX | LOCK_NB), 0);
    QCOMPARE(trainlab::listRuns(runsDir("interrupted")).front().status, std::string("running"));
    ::close(fd);
    const auto listed = trainlab::listRuns(runsDir("interrupted"));
    QCOMPARE(listed.size(), size_t(1));
    QCOMPARE(listed.front().status, std::string("interrupted"));
    QCOMPARE(listed.front().pid, static_cast<long long>(::getpid()));
    QCOMPARE(listed.front().host, trainlab::hostName());
}

void tst_Resume::bestCheckpointKept()
{
    trainlab::StopFlag never{false};
    RecordingObserver o;
    const auto r = run(tiny(3), runsDir("best"), o, never);
    QCOMPARE(toString(r.status), "completed");
    const auto s = trainlab::readRunSummary(r.runDir);
    QCOMPARE(s.bestCheckpointEpoch, r.bestEpoch);
    QCOMPARE(s.checkpointEpoch, 3);
    auto model = trainlab::makeResNet18(1, 10);
    const auto best = trainlab::loadCheckpoint(r.runDir + "/best.pt", *model);
    QCOMPARE(best.epoch, r.bestEpoch);
    QCOMPARE(best.metrics.back().testAcc, r.bestTestAcc);
    QCOMPARE(trainlab::loadCheckpoint(r.runDir + "/checkpoint.pt", *model).epoch, 3);
    QCOMPARE(QString::fromStdString(trainlab::weightsDigest(*model)), QString::fromStdString(logDigest(o.logs)));
}

void tst_Resume::checkpointPolicy_data()
{
    QTest::addColumn<QString>("policy");
    QTest::addColumn<QStringList>("files");
    QTest::newRow("last+best") << "last+best" << QStringList{"best.pt", "checkpoint.pt"};
    QTest::newRow("last") << "last" << QStringList{"checkpoint.pt"};
    QTest::newRow("best") << "best" << QStringList{"best.pt"};
    QTest::newRow("none") << "none" << QStringList{};
}

void tst_Resume::checkpointPolicy()
{
    QFETCH(QString, policy);
    QFETCH(QStringList, files);
    ExperimentConfig c = tiny(1);
    c.checkpoints = policy.toStdString();
    trainlab::StopFlag never{false};
    RecordingObserver o;
    const auto r = run(c, runsDir(qPrintable("policy-" + policy)), o, never);
    QCOMPARE(toString(r.status), "completed");
    QCOMPARE(QDir(QString::fromStdString(r.runDir)).entryList({QStringLiteral("*.pt")}, QDir::Files), files);
    c.checkpoints = "sometimes";
    QCOMPARE(QString::fromStdString(c.validate().front()),
             QStringLiteral("checkpoints: must be \"last+best\", \"last\", \"best\" or \"none\", got \"sometimes\""));
}

// Freeing a run's checkpoints keeps its record, says so in the summary, and never touches a run in use.
void tst_Resume::deleteCheckpoints()
{
    ExperimentConfig c = tiny(1);
    trainlab::StopFlag never{false};
    RecordingObserver o;
    const auto r = run(c, runsDir("free"), o, never);
    QCOMPARE(toString(r.status), "completed");
    const auto before = trainlab::runsFolderUsage(runsDir("free"));
    QCOMPARE(before.runs, 1);
    QVERIFY(before.checkpointBytes > 40'000'000);
    QVERIFY(before.totalBytes > before.checkpointBytes);

    // best.pt is a hard link to checkpoint.pt: the space is counted and freed once.
    const int fd = ::open(r.runDir.c_str(), O_RDONLY | O_DIRECTORY);
    QVERIFY(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0);
    try {
        trainlab::deleteCheckpoints(r.runDir);
        QFAIL("a run in use lost its checkpoints");
    } catch (const std::runtime_error &e) {
        QVERIFY2(std::string(e.what()).find("in use") != std::string::npos, e.what());
    }
    ::close(fd);
    QVERIFY(QFile::exists(QString::fromStdString(r.runDir + "/checkpoint.pt")));

    QCOMPARE(trainlab::deleteCheckpoints(r.runDir), before.checkpointBytes);
    QVERIFY(!QFile::exists(QString::fromStdString(r.runDir + "/checkpoint.pt")));
    QVERIFY(!QFile::exists(QString::fromStdString(r.runDir + "/best.pt")));
    const auto s = trainlab::readRunSummary(r.runDir);
    QCOMPARE(s.checkpointEpoch, 0);
    QCOMPARE(s.bestCheckpointEpoch, 0);
    QCOMPARE(s.epochsDone, 1);
    QCOMPARE(int(trainlab::readMetrics(r.runDir).size()), 1);
    const auto after = trainlab::runsFolderUsage(runsDir("free"));
    QCOMPARE(after.checkpointBytes, std::uint64_t(0));
    QCOMPARE(after.totalBytes, before.totalBytes - before.checkpointBytes);
    RecordingObserver more;
    const auto continued = trainlab::resumeRun(r.runDir, more, never, {}, 2);
    QCOMPARE(toString(continued.status), "failed");
    QVERIFY2(continued.error.find("checkpoint.pt: missing, so the 1 epochs recorded cannot be resumed and are kept (its checkpoints were deleted)")
                 != std::string::npos, continued.error.c_str());
}

// Node 0 holds the record and resumes it; node 1 runs the same command it ran first and gets the state from node 0.
void tst_Resume::twoNodesResume()
{
    // Two processes through a resume: the LibTorch 2.x job (TRAINLAB_TEST_SHORT) has tst_cli's two-node rows.
    if (qEnvironmentVariableIsSet("TRAINLAB_TEST_SHORT"))
        QSKIP("two nodes through a resume run in the main build (TRAINLAB_TEST_SHORT is set)");
    const QString config = m_dir.filePath(QStringLiteral("nodes.json"));
    tiny(2).save(config.toStdString());
    const QString runs = m_dir.filePath(QStringLiteral("node-runs"));
    const int base = 21000 + static_cast<int>(QCoreApplication::applicationPid() % 9000) * 3;
    auto pair = [&](const QStringList &first, int port, const QProcessEnvironment &env0) {
        const QStringList nodes = {QStringLiteral("--nnodes"), QStringLiteral("2"), QStringLiteral("--master-port"), QString::number(port)};
        QProcess *p0 = startCli(first + nodes + QStringList{QStringLiteral("--node-rank"), QStringLiteral("0")}, env0);
        QProcess *p1 = startCli(QStringList{QStringLiteral("run"), config, QStringLiteral("--runs-dir"), runs + QStringLiteral("-1")}
                             + nodes + QStringList{QStringLiteral("--node-rank"), QStringLiteral("1")});
        return std::make_pair(p0, p1);
    };
    const auto env = QProcessEnvironment::systemEnvironment();
    auto straight = pair({QStringLiteral("run"), config, QStringLiteral("--runs-dir"), runs + QStringLiteral("-straight")}, base, env);
    const CliOutcome s0 = finishCli(straight.first), s1 = finishCli(straight.second);
    QVERIFY2(s0.exitCode == 0, qPrintable(s0.out + s0.err));
    QVERIFY2(s1.exitCode == 0, qPrintable(s1.out + s1.err));

    // Node 0 freezes once epoch 1 is on disk; both nodes are then killed, as a power cut would.
    QProcessEnvironment pause = env;
    pause.insert(QStringLiteral("TRAINLAB_TEST_PAUSE"), QStringLiteral("epoch-end#1"));
    auto killed = pair({QStringLiteral("run"), config, QStringLiteral("--runs-dir"), runs}, base + 1, pause);
    QString err;
    QTRY_VERIFY_WITH_TIMEOUT((err += QString::fromUtf8(killed.first->readAllStandardError())).contains(QStringLiteral("TRAINLAB_PAUSED epoch-end")), 120000);
    killed.first->kill();
    killed.second->kill();
    finishCli(killed.first);
    finishCli(killed.second);
    const auto listed = trainlab::listRuns(runs.toStdString());
    QCOMPARE(listed.size(), size_t(1));
    QCOMPARE(listed.front().status, std::string("interrupted"));
    QCOMPARE(listed.front().epochsDone, 1);

    auto resumed = pair({QStringLiteral("resume"), QString::fromStdString(listed.front().dir)}, base + 2, env);
    const CliOutcome r0 = finishCli(resumed.first), r1 = finishCli(resumed.second);
    QVERIFY2(r0.exitCode == 0, qPrintable(r0.out + r0.err));
    QVERIFY2(r1.exitCode == 0, qPrintable(r1.out + r1.err));
    QVERIFY2(r1.out.contains(QStringLiteral("epoch 2/2")) && !r1.out.contains(QStringLiteral("epoch 1/2")), qPrintable(r1.out));
    QVERIFY(!cliDigest(s0.out).isEmpty());
    QCOMPARE(cliDigest(r0.out), cliDigest(s0.out));
    QCOMPARE(cliDigest(r1.out), cliDigest(s0.out));
    QCOMPARE(learningColumns(listed.front().dir), learningColumns(trainlab::listRuns((runs + QStringLiteral("-straight")).toStdString()).front().dir));
}

void tst_Resume::cliResumeAndRuns()
{
    // The CLI's arguments and messages do not depend on LibTorch: the LibTorch 2.x job (TRAINLAB_TEST_SHORT) skips them.
    if (qEnvironmentVariableIsSet("TRAINLAB_TEST_SHORT"))
        QSKIP("the CLI's resume arguments run in the main build (TRAINLAB_TEST_SHORT is set)");
    const QString runs = m_dir.filePath(QStringLiteral("cli-runs"));
    const QString config = m_dir.filePath(QStringLiteral("cli.json"));
    tiny(2).save(config.toStdString());
    const CliOutcome first = finishCli(startCli({QStringLiteral("run"), config, QStringLiteral("--runs-dir"), runs}));
    QVERIFY2(first.exitCode == 0, qPrintable(first.err));
    const std::string dir = trainlab::listRuns(runs.toStdString()).front().dir;
    const CliOutcome list = finishCli(startCli({QStringLiteral("runs"), QStringLiteral("--runs-dir"), runs}));
    QCOMPARE(list.exitCode, 0);
    QVERIFY2(QRegularExpression(QStringLiteral("resume\\s+completed\\s+2/2\\s+0\\.\\d{4}")).match(list.out).hasMatch(), qPrintable(list.out));
    const CliOutcome nothing = finishCli(startCli({QStringLiteral("resume"), QString::fromStdString(dir)}));
    QCOMPARE(nothing.exitCode, 2);
    QVERIFY2(nothing.err.contains(QStringLiteral("all 2 epochs are done; give more epochs")), qPrintable(nothing.err));
    const CliOutcome lr = finishCli(startCli({QStringLiteral("resume"), QString::fromStdString(dir), QStringLiteral("--lr"), QStringLiteral("1")}));
    QCOMPARE(lr.exitCode, 2);
    QVERIFY2(lr.err.contains(QStringLiteral("resume: --lr cannot change a run being resumed")), qPrintable(lr.err));
    const CliOutcome missing = finishCli(startCli({QStringLiteral("resume"), m_dir.filePath(QStringLiteral("nope"))}));
    QCOMPARE(missing.exitCode, 2);
    QVERIFY2(missing.err.contains(QStringLiteral("nope: not a run folder")), qPrintable(missing.err));
    const CliOutcome more = finishCli(startCli({QStringLiteral("resume"), QString::fromStdString(dir), QStringLiteral("--epochs"), QStringLiteral("3")}));
    QVERIFY2(more.exitCode == 0, qPrintable(more.out + more.err));
    QVERIFY2(more.out.contains(QStringLiteral("resuming after epoch 2 of 3")) && more.out.contains(QStringLiteral("epoch 3/3")), qPrintable(more.out));
    QCOMPARE(trainlab::readMetrics(dir).size(), size_t(3));
}

// summary.json's warm-up seconds: each session's first epoch brings its own, and a resumed run adds them up.
void tst_Resume::warmupSecondsAddUp()
{
    const ExperimentConfig config = tiny(3);
    auto epoch = [](int n, double warmup) {
        trainlab::EpochMetrics m;
        m.epoch = n;
        m.testAcc = 0.5;
        m.seconds = 1.0;
        m.warmupSeconds = warmup;
        return m;
    };
    std::string dir;
    std::vector<trainlab::EpochMetrics> done{epoch(1, 1.25), epoch(2, 0.0)};
    {
        trainlab::RunRecord record(runsDir("warmup"), config, {"cpu"});
        dir = record.dir();
        for (const auto &m : done)
            record.commitEpoch(m, {});
        QCOMPARE(trainlab::readRunSummary(dir).warmupSeconds, 1.25);
        trainlab::RunResult stopped;
        stopped.status = RunStatus::Stopped;
        stopped.epochs = done;
        record.finish(stopped);
    }
    QCOMPARE(trainlab::readRunSummary(dir).warmupSeconds, 1.25);
    auto record = trainlab::RunRecord::reopen(dir, config, done, 2);
    record->commitEpoch(epoch(3, 0.5), {});
    QCOMPARE(trainlab::readRunSummary(dir).warmupSeconds, 1.75);
}

QTEST_GUILESS_MAIN(tst_Resume)
#include "tst_resume.moc"
