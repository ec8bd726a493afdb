#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QTest>

// The trainlab program as a user starts it: its command line, the missing display, the smoke test.
class tst_App : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void commandLine_data();
    void commandLine();

private:
    QTemporaryDir m_dir;
};

void tst_App::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QFile broken(m_dir.filePath(QStringLiteral("broken.json")));
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("{\"batch_size\": \"big\"}");
}

void tst_App::commandLine_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("platform");   // QT_QPA_PLATFORM; empty: no display at all
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("output");
    QTest::newRow("version") << QStringList{"--version"} << "" << 0 << "trainlab 0.";
    QTest::newRow("help") << QStringList{"--help"} << "" << 0 << "--smoke-test";
    QTest::newRow("no display") << QStringList{} << "" << 1 << "trainlab-cli run --preset quick-demo";
    QTest::newRow("two files") << QStringList{"a.json", "b.json"} << "offscreen" << 2
                               << "one experiment file at most, got 2";
    QTest::newRow("file and preset") << QStringList{"a.json", "--preset", "quick-demo"} << "offscreen" << 2
                                     << "give an experiment file or --preset, not both";
    QTest::newRow("smoke test") << QStringList{"--smoke-test"} << "offscreen" << 0
                                << "window opened with \"quick-demo\", ready to start";
    QTest::newRow("smoke test, no display") << QStringList{"--smoke-test"} << "" << 0 << "ready to start";
    QTest::newRow("smoke test, unknown preset") << QStringList{"--smoke-test", "--preset", "nope"} << "offscreen" << 1
                                                << "unknown preset \"nope\"";
    QTest::newRow("smoke test, broken file") << QStringList{"--smoke-test", "BROKEN"} << "offscreen" << 1
                                             << "batch_size: must be an integer";
}

void tst_App::commandLine()
{
    QFETCH(QStringList, args);
    QFETCH(QString, platform);
    QFETCH(int, exitCode);
    QFETCH(QString, output);
    args.replaceInStrings(QStringLiteral("BROKEN"), m_dir.filePath(QStringLiteral("broken.json")));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char *name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
        env.remove(QLatin1String(name));
    if (!platform.isEmpty())
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), platform);
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("TRAINLAB_RUNS_DIR"), m_dir.filePath(QStringLiteral("runs")));
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(TRAINLAB_GUI), args);
    QVERIFY(p.waitForFinished(60000));
    const QString text = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QVERIFY2(p.exitCode() == exitCode, qPrintable(QString::number(p.exitCode()) + ": " + text));
    QVERIFY2(text.contains(output), qPrintable(text));
}

QTEST_MAIN(tst_App)
#include "tst_app.moc"
