#include "core/train/checkpoint.h"
#include "core/config.h"
#include "core/runs/runrecord.h"
#include "core/train/engine.h"
#include "core/train/model.h"

#include "runcheck.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

using trainlab::ExperimentConfig;

namespace {

ExperimentConfig tinyConfig()
{
    ExperimentConfig c;
    c.name = "killed";
    c.dataset.trainLimit = 32;
    c.dataset.testLimit = 16;
    c.batchSize = 16;
    c.learningRate = 0.05;
    c.momentum = 0.9;
    c.epochs = 2;
    c.seed = 11;
    c.cpuThreads = 2;
    return c;
}

std::string checkpointDigest(const std::string &path)
{
    auto model = trainlab::makeResNet18(1, 10);
    trainlab::loadCheckpoint(path, *model);
    return trainlab::weightsDigest(*model);
}

QStringList temporaries(const QString &dir)
{
    return QDir(dir).entryList({QStringLiteral("*.tmp"), QStringLiteral("*.tmp-*")}, QDir::Files | QDir::Hidden);
}

// Every file of a run folder as a reader finds it at any instant; each problem found is one line.
QStringList invalidFiles(const std::string &dir)
{
    QStringList bad;
    int checkpointEpoch = 0;
    try {
        ExperimentConfig::load(dir + "/config.json");
    } catch (const std::exception &e) {
        bad << QStringLiteral("config.json: %1").arg(QString::fromUtf8(e.what()));
    }
    trainlab::RunSummary summary;
    try {
        if (!nlohmann::json::parse(fileBytes(dir + "/summary.json").toStdString()).is_object())
            bad << QStringLiteral("summary.json: not an object");
        summary = trainlab::readRunSummary(dir);
    } catch (const std::exception &e) {
        bad << QStringLiteral("summary.json: %1").arg(QString::fromUtf8(e.what()));
    }
    for (const char *name : {"checkpoint.pt", "best.pt"}) {
        if (!QFile::exists(QString::fromStdString(dir + "/" + name)))
            continue;
        try {
            auto model = trainlab::makeResNet18(1, 10);
            const int epoch = trainlab::loadCheckpoint(dir + "/" + name, *model).epoch;
            if (std::string(name) == "checkpoint.pt")
                checkpointEpoch = epoch;
        } catch (const std::exception &e) {
            bad << QString::fromUtf8(e.what());
        }
    }
    const QByteArray metrics = fileBytes(dir + "/metrics.csv");
    if (!metrics.endsWith('\n'))
        bad << QStringLiteral("metrics.csv: ends inside a row");
    try {
        const auto rows = trainlab::readMetrics(dir);
        if (static_cast<int>(rows.size()) != metrics.count('\n') - 1)
            bad << QStringLiteral("metrics.csv: a row that does not parse");
        // The record never claims more than the checkpoint holds.
        if (static_cast<int>(rows.size()) > checkpointEpoch)
            bad << QStringLiteral("metrics.csv: %1 rows, checkpoint of epoch %2").arg(rows.size()).arg(checkpointEpoch);
    } catch (const std::exception &e) {
        bad << QString::fromUtf8(e.what());
    }
    if (summary.epochsDone > checkpointEpoch || summary.checkpointEpoch > checkpointEpoch)
        bad << QStringLiteral("summary.json: claims epoch %1, checkpoint of epoch %2").arg(summary.epochsDone).arg(checkpointEpoch);
    return bad;
}

struct Totals
{
    int points = 0, resumed = 0, invalid = 0, leftovers = 0;
};
Totals g_totals;

} // namespace

class tst_KillPoints : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void killAt_data();
    void killAt();
    void diskFullKeepsTheLastCheckpoint();
    void cleanupTestCase();

private:
    QProcess *cli(const QStringList &args, const QString &pause = {})
    {
        auto *p = new QProcess(this);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        if (!pause.isEmpty())
            env.insert(QStringLiteral("TRAINLAB_TEST_PAUSE"), pause);
        p->setProcessEnvironment(env);
        p->start(QStringLiteral(TRAINLAB_CLI), args);
        return p;
    }
    int wait(QProcess *p, QString *out = nullptr)
    {
        if (!p->waitForFinished(240000))
            p->kill();
        p->waitForFinished();
        if (out)
            *out = QString::fromUtf8(p->readAllStandardOutput() + p->readAllStandardError());
        const int code = p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -1;
        delete p;
        return code;
    }
    QTemporaryDir m_dir;
    QString m_config;
    std::string m_straightDigest;
    QStringList m_straightColumns;
};

void tst_KillPoints::initTestCase()
{
    m_config = m_dir.filePath(QStringLiteral("config.json"));
    tinyConfig().save(m_config.toStdString());
    const QString runs = m_dir.filePath(QStringLiteral("straight"));
    QString out;
    QCOMPARE(wait(cli({QStringLiteral("run"), m_config, QStringLiteral("--runs-dir"), runs}), &out), 0);
    const auto listed = trainlab::listRuns(runs.toStdString());
    QCOMPARE(listed.size(), size_t(1));
    m_straightDigest = checkpointDigest(listed.front().dir + "/checkpoint.pt");
    m_straightColumns = learningColumns(listed.front().dir);
    QCOMPARE(m_straightColumns.size(), 2);
}

void tst_KillPoints::killAt_data()
{
    QTest::addColumn<QString>("point");
    QTest::addColumn<bool>("visible");   // whether a run folder exists yet
    // While the folder is being made (it is still a hidden .creating-* folder).
    QTest::newRow("folder made") << "folder-created" << false;
    QTest::newRow("first summary") << "write:summary.json#1" << false;
    QTest::newRow("config") << "write:config.json#1" << false;
    QTest::newRow("metrics header") << "write:metrics.csv#1" << false;
    // Epoch 1: a batch, the evaluation, each file of the epoch's record, then between epochs.
    QTest::newRow("epoch 1 batch 2") << "step#2" << true;
    QTest::newRow("epoch 1 evaluation") << "evaluate#1" << true;
    QTest::newRow("epoch 1 checkpoint") << "write:checkpoint.pt#1" << true;
    QTest::newRow("epoch 1 best") << "write:best.pt#1" << true;
    QTest::newRow("epoch 1 metrics") << "write:metrics.csv#2" << true;
    QTest::newRow("epoch 1 summary") << "write:summary.json#2" << true;
    QTest::newRow("after epoch 1") << "epoch-end#1" << true;
    // Epoch 2, the last (its evaluation, metrics and summary write as epoch 1's do): down to the final summary.
    QTest::newRow("epoch 2 batch 1") << "step#3" << true;
    QTest::newRow("epoch 2 checkpoint") << "write:checkpoint.pt#2" << true;
    QTest::newRow("evaluation file") << "write:evaluation.json#1" << true;
    QTest::newRow("final summary") << "write:summary.json#4" << true;
}

void tst_KillPoints::killAt()
{
    QFETCH(QString, point);
    QFETCH(bool, visible);
    const QString runs = m_dir.filePath(QString::fromLatin1(QTest::currentDataTag()).replace(QLatin1Char(' '), QLatin1Char('-')));
    QProcess *p = cli({QStringLiteral("run"), m_config, QStringLiteral("--runs-dir"), runs}, point);
    QString err;
    const QString marker = QStringLiteral("TRAINLAB_PAUSED ") + point.section(QLatin1Char('#'), 0, 0);
    QTRY_VERIFY_WITH_TIMEOUT((err += QString::fromUtf8(p->readAllStandardError())).contains(marker), 120000);
    ++g_totals.points;
    auto listed = trainlab::listRuns(runs.toStdString());
    QCOMPARE(listed.size(), size_t(visible ? 1 : 0));
    if (visible)
        QCOMPARE(listed.front().status, std::string("running"));   // alive: it holds the folder's lock
    p->kill();
    QCOMPARE(wait(p), -1);

    if (!visible) {
        // Nothing was trained; the half-made folder stays hidden and the next run clears it.
        QCOMPARE(QDir(runs).entryList(QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot).filter(QStringLiteral(".creating-")).size(), 1);
        QCOMPARE(wait(cli({QStringLiteral("run"), m_config, QStringLiteral("--runs-dir"), runs})), 0);
        QCOMPARE(QDir(runs).entryList(QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot).size(), 1);
        listed = trainlab::listRuns(runs.toStdString());
        QCOMPARE(listed.size(), size_t(1));
        QCOMPARE(checkpointDigest(listed.front().dir + "/checkpoint.pt"), m_straightDigest);
        return;
    }
    listed = trainlab::listRuns(runs.toStdString());
    QCOMPARE(listed.size(), size_t(1));
    QCOMPARE(listed.front().status, std::string("interrupted"));
    const std::string dir = listed.front().dir;
    const QStringList bad = invalidFiles(dir);
    g_totals.invalid += static_cast<int>(bad.size());
    QVERIFY2(bad.isEmpty(), qPrintable(bad.join(QLatin1Char('\n'))));

    QString out;
    const int code = wait(cli({QStringLiteral("resume"), QString::fromStdString(dir)}), &out);
    QVERIFY2(code == 0, qPrintable(out));
    ++g_totals.resumed;
    const QStringList left = temporaries(QString::fromStdString(dir));
    g_totals.leftovers += static_cast<int>(left.size());
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QLatin1Char(' '))));
    QCOMPARE(trainlab::readRunSummary(dir).status, std::string("completed"));
    QCOMPARE(checkpointDigest(dir + "/checkpoint.pt"), m_straightDigest);
    QCOMPARE(learningColumns(dir), m_straightColumns);
    QVERIFY(invalidFiles(dir).isEmpty());
}

// A runs folder on a 150 MB tmpfs (a private mount namespace): epoch 1's 90 MB checkpoint fits, epoch 2's does not.
void tst_KillPoints::diskFullKeepsTheLastCheckpoint()
{
    const QString mount = m_dir.filePath(QStringLiteral("small-disk"));
    const QString copy = m_dir.filePath(QStringLiteral("after-full"));
    QDir().mkpath(mount);
    const QString script = QStringLiteral(
        "mount -t tmpfs -o size=150m none \"$1\" || exit 97; \"$2\" run \"$3\" --runs-dir \"$1/runs\"; echo \"rc=$?\"; cp -r \"$1/runs\" \"$4\"");
    QProcess p;
    p.start(QStringLiteral("unshare"), {QStringLiteral("-rm"), QStringLiteral("sh"), QStringLiteral("-c"), script, QStringLiteral("sh"),
                                         mount, QStringLiteral(TRAINLAB_CLI), m_config, copy});
    QVERIFY(p.waitForFinished(240000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() == 97 || !out.contains(QStringLiteral("rc=")))
        QSKIP(qPrintable(QStringLiteral("this machine cannot mount a private tmpfs: ") + out.left(200)));
    QVERIFY2(out.contains(QStringLiteral("rc=1")), qPrintable(out));
    QVERIFY2(out.contains(QStringLiteral("No space left on device; checkpoint.pt of epoch 1 is kept")), qPrintable(out));
    const auto listed = trainlab::listRuns(copy.toStdString());
    QCOMPARE(listed.size(), size_t(1));
    const std::string dir = listed.front().dir;
    QCOMPARE(listed.front().status, std::string("failed"));
    QVERIFY2(listed.front().error.find("runs folder: ") != std::string::npos, listed.front().error.c_str());
    QCOMPARE(listed.front().epochsDone, 1);
    QCOMPARE(temporaries(QString::fromStdString(dir)), QStringList());
    QVERIFY(invalidFiles(dir).isEmpty());
    // Space again: the run goes on from epoch 1 to the uninterrupted result.
    QString resumed;
    QCOMPARE(wait(cli({QStringLiteral("resume"), QString::fromStdString(dir)}), &resumed), 0);
    QCOMPARE(checkpointDigest(dir + "/checkpoint.pt"), m_straightDigest);
    QCOMPARE(learningColumns(dir), m_straightColumns);
}

void tst_KillPoints::cleanupTestCase()
{
    qInfo("kill -9 points tried: %d, runs resumed: %d, files found invalid: %d, temporary files left after resume: %d",
          g_totals.points, g_totals.resumed, g_totals.invalid, g_totals.leftovers);
}

QTEST_GUILESS_MAIN(tst_KillPoints)
#include "tst_killpoints.moc"
