#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

namespace {

struct Outcome
{
    int exitCode = -1;
    QString out;
    QString err;
};

QProcess *start(const QStringList &args)
{
    auto *p = new QProcess;
    p->start(QStringLiteral(TRAINLAB_CLI), args);
    return p;
}

Outcome finish(QProcess *p, int timeoutMs = 240000)
{
    Outcome o;
    if (!p->waitForFinished(timeoutMs))
        p->kill();
    p->waitForFinished();
    o.exitCode = p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -1;
    o.out = QString::fromUtf8(p->readAllStandardOutput());
    o.err = QString::fromUtf8(p->readAllStandardError());
    delete p;
    return o;
}

Outcome cli(const QStringList &args)
{
    return finish(start(args));
}

QString digest(const QString &out)
{
    const auto m = QRegularExpression(QStringLiteral("final weights digest: ([0-9a-f]{16})")).match(out);
    return m.hasMatch() ? m.captured(1) : QString();
}

int freePort()
{
    return 20000 + static_cast<int>(QCoreApplication::applicationPid() % 20000);
}

} // namespace

class tst_Cli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void badUsage_data();
    void badUsage();
    void validate();
    void quickDemo();
    void missingDevice();
    void signalStopsAndKeepsRun();
    void twoNodesMatchOneProcess();
    void absentPeerFails();
    void mismatchedConfigRefused();

private:
    QString writeConfig(const QString &name, const QByteArray &json)
    {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        f.open(QIODevice::WriteOnly);
        f.write(json);
        return path;
    }
    QStringList tinyRun(const QString &config)
    {
        return {QStringLiteral("run"), config, QStringLiteral("--runs-dir"), m_dir.filePath(QStringLiteral("runs"))};
    }
    QTemporaryDir m_dir;
};

void tst_Cli::badUsage_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("no command") << QStringList{} << "no command given";
    QTest::newRow("unknown command") << QStringList{"train"} << "unknown command \"train\"";
    QTest::newRow("bad epochs") << QStringList{"run", "--preset", "quick-demo", "--epochs", "x"} << "--epochs: must be an integer, got \"x\"";
    QTest::newRow("bad lr") << QStringList{"run", "--preset", "quick-demo", "--lr", "fast"} << "--lr: must be a number";
    QTest::newRow("missing value") << QStringList{"run", "--preset"} << "--preset: needs a value";
    QTest::newRow("unknown flag") << QStringList{"run", "--preset", "quick-demo", "--bogus"} << "unknown option \"--bogus\"";
    QTest::newRow("no config") << QStringList{"run"} << "give either CONFIG.json or --preset NAME";
    QTest::newRow("unknown preset") << QStringList{"run", "--preset", "nope"} << "unknown preset \"nope\"";
    QTest::newRow("node rank") << QStringList{"run", "--preset", "quick-demo", "--nnodes", "2", "--node-rank", "2"} << "--node-rank: must be below --nnodes (2), got 2";
    QTest::newRow("zero lr override") << QStringList{"run", "--preset", "quick-demo", "--lr", "0"} << "learning_rate: must be finite and greater than 0, got 0";
}

void tst_Cli::badUsage()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const Outcome o = cli(args);
    QCOMPARE(o.exitCode, 2);
    QVERIFY2(o.err.contains(message), qPrintable(o.err));
}

void tst_Cli::validate()
{
    const QString bad = writeConfig(QStringLiteral("bad.json"), R"({"batch_size": 0, "epochs": "ten"})");
    Outcome o = cli({QStringLiteral("validate"), bad});
    QCOMPARE(o.exitCode, 2);
    QVERIFY2(o.err.contains(QStringLiteral("epochs: must be an integer")), qPrintable(o.err));
    const QString bad2 = writeConfig(QStringLiteral("bad2.json"), R"({"batch_size": 0, "learning_rate": -1})");
    o = cli({QStringLiteral("validate"), bad2});
    QCOMPARE(o.exitCode, 2);
    QVERIFY2(o.err.contains(QStringLiteral("batch_size: must be at least 1, got 0")), qPrintable(o.err));
    QVERIFY2(o.err.contains(QStringLiteral("learning_rate: must be finite")), qPrintable(o.err));
    o = cli({QStringLiteral("run"), bad2});
    QCOMPARE(o.exitCode, 2);
    const QString good = writeConfig(QStringLiteral("good.json"), R"({"name": "ok"})");
    QCOMPARE(cli({QStringLiteral("validate"), good}).exitCode, 0);
}

void tst_Cli::quickDemo()
{
    const Outcome o = cli({QStringLiteral("run"), QStringLiteral("--preset"), QStringLiteral("quick-demo"),
                           QStringLiteral("--epochs"), QStringLiteral("1"), QStringLiteral("--train-limit"),
                           QStringLiteral("64"), QStringLiteral("--test-limit"), QStringLiteral("30"),
                           QStringLiteral("--runs-dir"), m_dir.filePath(QStringLiteral("runs"))});
    QVERIFY2(o.exitCode == 0, qPrintable(o.out + o.err));
    QVERIFY2(o.out.contains(QRegularExpression(QStringLiteral("epoch 1/1  loss [0-9.]+  train acc [0-9.]+  test acc [0-9.]+  [0-9.]+ sec/epoch  [0-9]+ img/s"))), qPrintable(o.out));
    QVERIFY2(o.out.contains(QRegularExpression(QStringLiteral("test acc: [0-9.]+, [0-9.]+ sec/epoch on \\[cpu\\]"))), qPrintable(o.out));
    const auto m = QRegularExpression(QStringLiteral("run kept in (\\S+)")).match(o.out);
    QVERIFY(m.hasMatch());
    for (const char *file : {"config.json", "metrics.csv", "summary.json", "checkpoint.pt"})
        QVERIFY2(QFile::exists(m.captured(1) + QLatin1Char('/') + QLatin1String(file)), file);
}

void tst_Cli::missingDevice()
{
    const Outcome o = cli({QStringLiteral("run"), QStringLiteral("--preset"), QStringLiteral("quick-demo"),
                           QStringLiteral("--devices"), QStringLiteral("cpu,cuda:5")});
    QCOMPARE(o.exitCode, 2);
    QVERIFY2(o.err.contains(QStringLiteral("devices[1]: is not on this machine")) && o.err.contains(QStringLiteral("\"cuda:5\"")),
             qPrintable(o.err));
}

void tst_Cli::signalStopsAndKeepsRun()
{
    QProcess *p = start({QStringLiteral("run"), QStringLiteral("--preset"), QStringLiteral("quick-demo"),
                         QStringLiteral("--runs-dir"), m_dir.filePath(QStringLiteral("signal-runs"))});
    QString out;
    QTRY_VERIFY_WITH_TIMEOUT((out += QString::fromUtf8(p->readAllStandardOutput())).contains(QStringLiteral("training on")), 60000);
    QTest::qWait(500);
    p->terminate();  // SIGTERM takes the same path as Ctrl-C
    QElapsedTimer timer;
    timer.start();
    const Outcome o = finish(p, 30000);
    out += o.out;
    QVERIFY2(timer.elapsed() < 10000, std::to_string(timer.elapsed()).c_str());
    QCOMPARE(o.exitCode, 1);
    QVERIFY2(out.contains(QStringLiteral("stopped after 0 completed epochs")), qPrintable(out));
    const auto m = QRegularExpression(QStringLiteral("run kept in (\\S+)")).match(out);
    QVERIFY(m.hasMatch());
    QFile summary(m.captured(1) + QStringLiteral("/summary.json"));
    QVERIFY(summary.open(QIODevice::ReadOnly));
    QVERIFY(summary.readAll().contains("\"status\": \"stopped\""));
}

void tst_Cli::twoNodesMatchOneProcess()
{
    const QString config = writeConfig(QStringLiteral("nodes.json"), R"({"name": "nodes", "devices": ["cpu"],
        "dataset": {"train_limit": 48, "test_limit": 20}, "batch_size": 16, "epochs": 1,
        "cpu_threads": 1, "collective_timeout_s": 60})");
    const QString port = QString::number(freePort());
    QStringList node0 = tinyRun(config), node1 = tinyRun(config);
    node0 << QStringLiteral("--nnodes") << QStringLiteral("2") << QStringLiteral("--node-rank") << QStringLiteral("0")
          << QStringLiteral("--master-port") << port;
    node1 << QStringLiteral("--nnodes") << QStringLiteral("2") << QStringLiteral("--node-rank") << QStringLiteral("1")
          << QStringLiteral("--master-port") << port;
    QProcess *p0 = start(node0);
    QProcess *p1 = start(node1);
    const Outcome o0 = finish(p0), o1 = finish(p1);
    QVERIFY2(o0.exitCode == 0, qPrintable(o0.out + o0.err));
    QVERIFY2(o1.exitCode == 0, qPrintable(o1.out + o1.err));
    QVERIFY(o0.out.contains(QStringLiteral("run kept in")));
    QVERIFY(!o1.out.contains(QStringLiteral("run kept in")));
    const QString d0 = digest(o0.out), d1 = digest(o1.out);
    QVERIFY(!d0.isEmpty());
    QCOMPARE(d0, d1);
    QStringList single = tinyRun(config);
    single << QStringLiteral("--devices") << QStringLiteral("cpu,cpu");
    const Outcome one = cli(single);
    QVERIFY2(one.exitCode == 0, qPrintable(one.out + one.err));
    QCOMPARE(digest(one.out), d0);
}

void tst_Cli::absentPeerFails()
{
    const QString config = writeConfig(QStringLiteral("alone.json"), R"({"name": "alone",
        "dataset": {"train_limit": 20, "test_limit": 10}, "batch_size": 10, "epochs": 1, "collective_timeout_s": 3})");
    QStringList args = tinyRun(config);
    args << QStringLiteral("--nnodes") << QStringLiteral("2") << QStringLiteral("--master-port")
         << QString::number(freePort() + 1);
    QElapsedTimer timer;
    timer.start();
    const Outcome o = cli(args);
    QCOMPARE(o.exitCode, 1);
    QVERIFY2(timer.elapsed() < 30000, std::to_string(timer.elapsed()).c_str());
    QVERIFY2(o.err.contains(QStringLiteral("node 1 of 2 did not join")), qPrintable(o.err));
}

void tst_Cli::mismatchedConfigRefused()
{
    const QString a = writeConfig(QStringLiteral("a.json"), R"({"name": "m", "dataset": {"train_limit": 20, "test_limit": 10},
        "batch_size": 10, "epochs": 1, "collective_timeout_s": 20})");
    const QString b = writeConfig(QStringLiteral("b.json"), R"({"name": "m", "dataset": {"train_limit": 20, "test_limit": 10},
        "batch_size": 10, "epochs": 2, "collective_timeout_s": 20})");
    const QString port = QString::number(freePort() + 2);
    QStringList n0 = tinyRun(a), n1 = tinyRun(b);
    n0 << QStringLiteral("--nnodes") << QStringLiteral("2") << QStringLiteral("--master-port") << port;
    n1 << QStringLiteral("--nnodes") << QStringLiteral("2") << QStringLiteral("--node-rank") << QStringLiteral("1")
       << QStringLiteral("--master-port") << port;
    QProcess *p0 = start(n0);
    QProcess *p1 = start(n1);
    const Outcome o0 = finish(p0, 60000), o1 = finish(p1, 60000);
    QCOMPARE(o0.exitCode, 1);
    QCOMPARE(o1.exitCode, 1);
    QVERIFY2(o0.err.contains(QStringLiteral("different configuration")), qPrintable(o0.err));
}

QTEST_GUILESS_MAIN(tst_Cli)
#include "tst_cli.moc"
