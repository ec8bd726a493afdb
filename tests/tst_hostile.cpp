#include "core/util/atomicfile.h"
#include "core/config.h"
#include "core/data/download.h"
#include "core/runs/runrecord.h"
#include "core/runs/runstorage.h"
#include "core/sweeps/queue.h"
#include "core/train/nodereport.h"
#include "core/train/trainer.h"
#include "core/util/numtext.h"
#include "core/util/paths.h"
#include "core/util/wordfilter.h"
#include "testutil.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <clocale>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

void writeText(const std::string &path, const std::string &text)
{
    std::ofstream(path, std::ios::binary) << text;
}

std::string readText(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A run folder as the CLI leaves it: config.json, summary.json and metrics.csv with `rows` epochs.
std::string makeRun(const std::string &runsDir, const std::string &name, int rows = 2)
{
    const std::string dir = runsDir + "/" + name;
    fs::create_directories(dir);
    trainlab::ExperimentConfig config;
    config.name = name;
    config.save(dir + "/config.json");
    writeText(dir + "/summary.json", R"({"name": ")" + name + R"(", "status": "completed", "epochs_done": )"
                                         + std::to_string(rows) + R"(, "start_time": "2026-12-01T00:00:00Z"})");
    std::string metrics = std::string(trainlab::RunRecord::metricsHeader()) + "\n";
    for (int e = 1; e <= rows; ++e)
        metrics += std::to_string(e) + ",0.500000,0.800000,0.750000,1.000,100.0,0.1,2.5\n";
    writeText(dir + "/metrics.csv", metrics);
    return dir;
}

// Restores LC_ALL's numeric part when a row changed the locale.
struct LocaleGuard
{
    ~LocaleGuard() { std::setlocale(LC_ALL, "C"); }
};

struct EnvGuard
{
    explicit EnvGuard(const char *name) : m_name(name)
    {
        if (const char *v = std::getenv(name))
            m_value = v, m_set = true;
    }
    ~EnvGuard()
    {
        if (m_set)
            qputenv(m_name, m_value.c_str());
        else
            qunsetenv(m_name);
    }
    const char *m_name;
    std::string m_value;
    bool m_set = false;
};

} // namespace

// Issue 27: the files around a run as a hostile user or a crash may leave them.
class tst_Hostile : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void recordFilesRefused_data();
    void recordFilesRefused();
    void fifoNeverBlocks_data();
    void fifoNeverBlocks();
    void metricsRowsRangeChecked_data();
    void metricsRowsRangeChecked();
    void legacyMetricsStillRead();
    void nodeReportChecked_data();
    void nodeReportChecked();
    void localeNeverChangesFiles_data();
    void localeNeverChangesFiles();
    void deleteRunNeverLeavesFolder();
    void deleteRunRefusedWhileHeld();
    void runNotesStayInTheirFolder_data();
    void runNotesStayInTheirFolder();
    void trashKeepsTheRunWhole();
    void trashOnAnotherFileSystem();
    void notesHeadline_data();
    void notesHeadline();
    void vanishedFolderSaysSo();
    void resumeKeepsEpochsWithoutCheckpoint();
    void runsDirThatIsAFile();
    void moveAsideNeverOverwrites();
    void sweepFolderLocked();
    void homeAndXdg();
    void missingResourcesNamed();
    void mirrorsChecked_data();
    void mirrorsChecked();
    void wordFilterAnyCase_data();
    void wordFilterAnyCase();

private:
    QTemporaryDir m_tmp;
    std::string m_runs;
};

void tst_Hostile::init()
{
    m_runs = m_tmp.path().toStdString() + "/runs-" + QTest::currentTestFunction() + "-"
             + std::to_string(std::rand());
    fs::create_directories(m_runs);
}

void tst_Hostile::recordFilesRefused_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("summary.json is a FIFO") << "summary.json" << "fifo" << "a FIFO, not a regular file";
    QTest::newRow("summary.json links outside") << "summary.json" << "symlink" << "is a symbolic link";
    QTest::newRow("summary.json is not JSON") << "summary.json" << "garbage" << "not valid JSON";
    QTest::newRow("summary.json of 2 MB") << "summary.json" << "huge" << "more than the 1048576";
    QTest::newRow("summary.json epochs wrap") << "summary.json" << "bigint" << "epochs_done: must be an integer from 0 to 100000";
    QTest::newRow("summary.json pid overflows") << "summary.json" << "bigpid" << "pid: must be an integer";
    QTest::newRow("summary.json accuracy 7") << "summary.json" << "badacc" << "best_test_acc: must be a number from 0 to 1";
    QTest::newRow("run folder links outside") << "" << "dirlink" << "does not follow links out of the runs folder";
}

// Every record that cannot be read is listed with its problem, at once: no hang on a FIFO, no read of a
// multi-MB file, no wrapped number shown, no link followed out of the runs folder.
void tst_Hostile::recordFilesRefused()
{
    QFETCH(QString, file);
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    const std::string dir = makeRun(m_runs, "victim");
    const std::string path = dir + "/" + file.toStdString();
    const std::string outside = m_tmp.path().toStdString() + "/outside-" + kind.toStdString();
    if (!file.isEmpty())
        fs::remove(path);
    if (kind == "fifo") {
        QCOMPARE(::mkfifo(path.c_str(), 0600), 0);
    } else if (kind == "symlink") {
        writeText(outside, R"({"name": "outside", "status": "completed"})");
        fs::create_symlink(outside, path);
    } else if (kind == "garbage") {
        writeText(path, "{\"name\": ");
    } else if (kind == "huge") {
        writeText(path, "{\"name\": \"" + std::string(2 << 20, 'x') + "\"}");
    } else if (kind == "bigint") {
        writeText(path, R"({"status": "completed", "epochs_done": 4294967296})");
    } else if (kind == "bigpid") {
        writeText(path, R"({"status": "completed", "pid": 9223372036854775808})");
    } else if (kind == "badacc") {
        writeText(path, R"({"status": "completed", "best_test_acc": 7})");
    } else if (kind == "dirlink") {
        fs::rename(dir, outside);
        fs::create_symlink(outside, dir);
    }
    QElapsedTimer timer;
    timer.start();
    const auto runs = trainlab::listRuns(m_runs);
    QVERIFY2(timer.elapsed() < 5000, "listing a hostile runs folder must not block");
    QCOMPARE(runs.size(), std::size_t(1));
    QCOMPARE(runs[0].status, std::string("unreadable"));
    QVERIFY2(runs[0].error.find(expected.toStdString()) != std::string::npos, runs[0].error.c_str());
    QVERIFY(!runs[0].canResume());
    if (kind == "dirlink") {
        QVERIFY(trainlab::runsFolderUsage(m_runs).runs == 0);
        QVERIFY(fs::exists(outside + "/summary.json"));
    }
}

void tst_Hostile::fifoNeverBlocks_data()
{
    QTest::addColumn<QString>("file");
    QTest::newRow("checkpoint.pt (resume)") << "checkpoint.pt";
    QTest::newRow("queue.json (sweep --resume, the window's queue)") << "queue.json";
    QTest::newRow("metrics.csv (overlay, export)") << "metrics.csv";
}

// A FIFO where a record file belongs is refused at once by name; nothing waits for a writer (issue 27).
void tst_Hostile::fifoNeverBlocks()
{
    QFETCH(QString, file);
    const std::string dir = makeRun(m_runs, "fifo");
    writeText(dir + "/summary.json", R"({"name": "fifo", "status": "stopped", "epochs_done": 2})");
    const std::string path = dir + "/" + file.toStdString();
    fs::remove(path);
    QCOMPARE(::mkfifo(path.c_str(), 0600), 0);
    QElapsedTimer timer;
    timer.start();
    std::string error;
    if (file == "checkpoint.pt") {
        RecordingObserver observer;
        trainlab::StopFlag stop{false};
        error = trainlab::resumeRun(dir, observer, stop, {}, 0).error;
    } else if (file == "queue.json") {
        try {
            trainlab::Queue::load(path);
        } catch (const std::exception &e) {
            error = e.what();
        }
    } else {
        try {
            trainlab::readMetrics(dir);
        } catch (const std::exception &e) {
            error = e.what();
        }
    }
    QVERIFY2(timer.elapsed() < 5000, "a FIFO blocked a reader");
    QVERIFY2(error.find(path + ": is a FIFO, not a regular file") != std::string::npos, error.c_str());
}

void tst_Hostile::metricsRowsRangeChecked_data()
{
    QTest::addColumn<QString>("row");
    QTest::addColumn<bool>("kept");
    QTest::newRow("a row of ours") << "3,0.100000,0.900000,0.800000,1.500,200.0,0.05,2.5" << true;
    QTest::newRow("learning rate unknown") << "3,0.100000,0.900000,0.800000,1.500,200.0,,2.5" << true;
    QTest::newRow("norm unknown") << "3,0.100000,0.900000,0.800000,1.500,200.0,0.05," << true;
    QTest::newRow("learning rate negative") << "3,0.1,0.9,0.8,1.5,200,-0.1,2.5" << false;
    QTest::newRow("norm negative") << "3,0.1,0.9,0.8,1.5,200,0.05,-2.5" << false;
    QTest::newRow("norm infinite") << "3,0.1,0.9,0.8,1.5,200,0.05,inf" << false;
    QTest::newRow("no norm field") << "3,0.1,0.9,0.8,1.5,200,0.05" << false;
    QTest::newRow("epoch 2147483647") << "2147483647,0.1,0.9,0.8,1.5,200,0.1,2.5" << false;
    QTest::newRow("epoch 100001") << "100001,0.1,0.9,0.8,1.5,200,0.1,2.5" << false;
    QTest::newRow("decimal commas") << "3,0,100000,0,900000,0,800000,1,500,200,0,0,1,2,5" << false;
    QTest::newRow("accuracy above 1") << "3,0.1,1.5,0.8,1.5,200,0.1,2.5" << false;
    QTest::newRow("not a number") << "3,0.1,0.9,nan,1.5,200,0.1,2.5" << false;
    QTest::newRow("trailing field") << "3,0.1,0.9,0.8,1.5,200,0.1,2.5,7" << false;
    QTest::newRow("epoch going back") << "1,0.1,0.9,0.8,1.5,200,0.1,2.5" << false;
}

// What another node sends node 0 at an epoch's end: read back as sent, anything else refused with the reason.
void tst_Hostile::nodeReportChecked_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("error");
    trainlab::NodeReport report;
    trainlab::TimeSplit t;
    t.rank = 3;
    t.compute = 1.25;
    t.allreduce = 0.5;
    report.time.push_back(t);
    trainlab::DeviceEpochStats d;
    d.id = "node1:gpu0";
    d.cudaId = "cuda:0";
    d.name = "H200";
    d.samples = 4;
    d.meanUtilization = 87.5;
    report.devices.push_back(d);
    report.warmupSeconds = 1.5;
    QTest::newRow("as sent") << QString::fromStdString(trainlab::encodeNodeReport(2, report)) << QString();
    QTest::newRow("another epoch's") << QString::fromStdString(trainlab::encodeNodeReport(1, report)) << "not epoch 2's";
    QTest::newRow("not JSON") << "{\"epoch\": 2," << "not JSON";
    QTest::newRow("no time") << R"({"epoch": 2, "devices": ""})" << "no \"time\" list";
    QTest::newRow("short row") << R"({"epoch": 2, "time": [[3, 1, 2]], "devices": ""})" << "not [rank, 5 seconds]";
    QTest::newRow("negative part") << R"({"epoch": 2, "time": [[3, 0, -1, 0, 0, 0]], "devices": ""})" << "not a number of seconds";
    QTest::newRow("devices not a table") << R"({"epoch": 2, "time": [], "devices": 7})" << "no \"devices\" table";
    QTest::newRow("negative warm-up") << R"({"epoch": 2, "time": [], "devices": "", "warmup": -1})" << "\"warmup\" is not a number of seconds";
    QTest::newRow("warm-up as text") << R"({"epoch": 2, "time": [], "devices": "", "warmup": "1.5"})" << "\"warmup\" is not a number of seconds";
}

void tst_Hostile::nodeReportChecked()
{
    QFETCH(QString, text);
    QFETCH(QString, error);
    try {
        const trainlab::NodeReport r = trainlab::decodeNodeReport(2, text.toStdString());
        QVERIFY2(error.isEmpty(), "accepted");
        QCOMPARE(r.time.size(), std::size_t(1));
        QCOMPARE(r.time[0].rank, 3);
        QCOMPARE(r.time[0].compute, 1.25);
        QCOMPARE(r.time[0].allreduce, 0.5);
        QCOMPARE(r.devices.size(), std::size_t(1));
        QCOMPARE(r.devices[0].id, std::string("node1:gpu0"));
        QCOMPARE(r.devices[0].cudaId, std::string("cuda:0"));
        QCOMPARE(*r.devices[0].meanUtilization, 87.5);
        QVERIFY(!r.devices[0].peakMemory);
        QCOMPARE(r.warmupSeconds, 1.5);
    } catch (const std::runtime_error &e) {
        QVERIFY2(!error.isEmpty() && QString::fromStdString(e.what()).contains(error), e.what());
    }
}

void tst_Hostile::metricsRowsRangeChecked()
{
    QFETCH(QString, row);
    QFETCH(bool, kept);
    const std::string text = std::string(trainlab::RunRecord::metricsHeader()) + "\n1,0.5,0.5,0.5,1.0,10.0,0.1,3\n"
                             + "2,0.5,0.5,0.5,1.0,10.0,0.1,3\n" + row.toStdString() + "\n";
    const auto rows = trainlab::parseMetrics(text, "metrics.csv");
    QCOMPARE(rows.size(), std::size_t(kept ? 3 : 2));
    if (kept) {
        QCOMPARE(rows[2].epoch, 3);
        QCOMPARE(rows[2].testAcc, 0.8);
        QCOMPARE(rows[2].learningRate, row.contains(",,") ? 0.0 : 0.05);
        QCOMPARE(rows[2].gradNorm, row.endsWith(',') ? 0.0 : 2.5);
    }
}

void tst_Hostile::legacyMetricsStillRead()
{
    // Written before metrics.csv kept the learning rate: six columns, read with the rate and the norm unknown.
    const std::string six = "epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second\n"
                            "1,0.5,0.5,0.5,1.0,10.0\n2,0.4,0.6,0.7,1.0,10.0\n2,0.4,0.6,0.7,1.0,10.0,0.1\n";
    auto rows = trainlab::parseMetrics(six, "metrics.csv");
    QCOMPARE(rows.size(), std::size_t(2));
    QCOMPARE(rows[1].testAcc, 0.7);
    QCOMPARE(rows[1].learningRate, 0.0);
    // Then before it kept the gradient norm: seven columns, read with the norm unknown.
    const std::string seven = "epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second,learning_rate\n"
                              "1,0.5,0.5,0.5,1.0,10.0,0.1\n2,0.4,0.6,0.7,1.0,10.0,0.05\n3,0.4,0.6,0.7,1.0,10.0,0.1,2\n";
    rows = trainlab::parseMetrics(seven, "metrics.csv");
    QCOMPARE(rows.size(), std::size_t(2));
    QCOMPARE(rows[1].learningRate, 0.05);
    QCOMPARE(rows[1].gradNorm, 0.0);
}

void tst_Hostile::localeNeverChangesFiles_data()
{
    QTest::addColumn<QString>("locale");
    QTest::newRow("de_DE") << "de_DE.UTF-8";
    QTest::newRow("fr_FR") << "fr_FR.UTF-8";
}

// A Qt program runs under the user's LC_NUMERIC: what core writes and reads must not change with it.
void tst_Hostile::localeNeverChangesFiles()
{
    QFETCH(QString, locale);
    LocaleGuard restore;
    if (!std::setlocale(LC_ALL, locale.toUtf8().constData())) {
        if (qEnvironmentVariableIsSet("TRAINLAB_LOCALES_REQUIRED"))
            QFAIL(qPrintable(locale + " is not installed; .ci/run generates it"));
        QSKIP(qPrintable(locale + " is not installed here"));
    }
    char probe[16];
    std::snprintf(probe, sizeof probe, "%.1f", 0.5);
    QCOMPARE(QByteArray(probe), QByteArray("0,5"));   // the locale does change printf
    trainlab::ExperimentConfig config;
    config.name = "locale";
    trainlab::RunRecord record(m_runs, config, {"cpu"});
    record.commitEpoch({1, 2.527563, 0.078125, 0.5, 12.25, 1234.5, {}, 0.0125, {}, 0.0, 6.53125}, {});
    const std::string metrics = readText(record.dir() + "/metrics.csv");
    QCOMPARE(metrics, std::string(trainlab::RunRecord::metricsHeader()) + "\n1,2.527563,0.078125,0.500000,12.250,1234.5,0.0125,6.53125\n");
    // Rows the CLI wrote under the C locale read back whole under this one.
    const auto rows = trainlab::readMetrics(record.dir());
    QCOMPARE(rows.size(), std::size_t(1));
    QCOMPARE(rows[0].trainLoss, 2.527563);
    QCOMPARE(rows[0].seconds, 12.25);
    QCOMPARE(rows[0].learningRate, 0.0125);
    QCOMPARE(rows[0].gradNorm, 6.53125);
    const auto summary = trainlab::readRunSummary(record.dir());
    QCOMPARE(summary.bestTestAcc, 0.5);
    QVERIFY(readText(record.dir() + "/summary.json").find("0.5") != std::string::npos);
    QCOMPARE(trainlab::formatFixed(0.5, 3), std::string("0.500"));
    QCOMPARE(trainlab::formatGeneral(0.001), std::string("0.001"));
}

void tst_Hostile::deleteRunNeverLeavesFolder()
{
    // A run folder that is a link: only the link goes.
    const std::string outside = m_tmp.path().toStdString() + "/precious-" + std::to_string(std::rand());
    const std::string real = makeRun(m_runs, "real");
    fs::rename(real, outside);
    fs::create_symlink(outside, m_runs + "/linked");
    trainlab::deleteRun(m_runs + "/linked");
    QVERIFY(!fs::exists(fs::symlink_status(m_runs + "/linked")));
    QVERIFY(fs::exists(outside + "/metrics.csv"));
    QVERIFY(fs::exists(outside + "/config.json"));
    // Links inside a run folder are removed as links, never followed.
    const std::string dir = makeRun(m_runs, "inner");
    const std::string keep = m_tmp.path().toStdString() + "/keep-" + std::to_string(std::rand());
    fs::create_directories(keep);
    writeText(keep + "/data.bin", "keep me");
    fs::create_symlink(keep, dir + "/linked-folder");
    fs::create_symlink(keep + "/data.bin", dir + "/checkpoint.pt");
    fs::create_directories(dir + "/tb/sub");
    writeText(dir + "/tb/sub/events", "x");
    trainlab::deleteRun(dir);
    QVERIFY(!fs::exists(dir));
    QCOMPARE(readText(keep + "/data.bin"), std::string("keep me"));
}

void tst_Hostile::deleteRunRefusedWhileHeld()
{
    trainlab::ExperimentConfig config;
    config.name = "held";
    trainlab::RunRecord record(m_runs, config, {"cpu"});
    try {
        trainlab::deleteRun(record.dir());
        QFAIL("deleteRun removed a run that a process holds");
    } catch (const std::runtime_error &e) {
        QVERIFY2(std::string(e.what()).find("in use by a running or resuming process") != std::string::npos, e.what());
    }
    QVERIFY(fs::exists(record.dir() + "/summary.json"));
    QVERIFY(fs::exists(record.dir() + "/metrics.csv"));
}

void tst_Hostile::runNotesStayInTheirFolder_data()
{
    QTest::addColumn<QByteArray>("notes");
    QTest::addColumn<QString>("problem");   // what writeRunNotes refuses with; empty: taken
    QTest::newRow("two lines, UTF-8") << QByteArray("größer batch\nnext: lr 0.05  \n\n") << QString();
    QTest::newRow("blank removes") << QByteArray(" \n\t") << QString();
    QTest::newRow("a NUL byte") << QByteArray("a\0b", 3) << "notes: text only, got a NUL byte";
    QTest::newRow("Latin-1, not UTF-8") << QByteArray("gr\xf6\xdf" "er") << "notes: not UTF-8 text (invalid UTF-8 byte at index 2";
    QTest::newRow("above 16 KB") << QByteArray(16 * 1024 + 1, 'x') << "notes: at most 16 KB, got 16385 bytes";
}

// Notes are written atomically inside the run folder only: never through a link, never over a link's target.
void tst_Hostile::runNotesStayInTheirFolder()
{
    QFETCH(QByteArray, notes);
    QFETCH(QString, problem);
    const std::string dir = makeRun(m_runs, "noted");
    const std::string outside = m_tmp.path().toStdString() + "/outside-" + std::to_string(std::rand());
    writeText(outside, "keep me");
    fs::create_symlink(outside, dir + "/notes.txt");
    // A notes.txt that is a link is not read through: the run lists, its notes say why they are not shown.
    QVERIFY(trainlab::readRunSummary(dir).notes.find("notes.txt") != std::string::npos);
    const std::string text = notes.toStdString();
    try {
        trainlab::writeRunNotes(dir, text);
        QVERIFY2(problem.isEmpty(), "bad notes were written");
    } catch (const std::exception &e) {
        QVERIFY2(!problem.isEmpty() && QString::fromStdString(e.what()).startsWith(problem), e.what());
        QVERIFY(fs::is_symlink(dir + "/notes.txt"));
    }
    QCOMPARE(readText(outside), std::string("keep me"));
    if (problem.isEmpty()) {
        const std::string kept = text.substr(0, text.find_last_not_of(" \t\n") + 1);
        QCOMPARE(trainlab::readRunNotes(dir), kept);
        QCOMPARE(trainlab::readRunSummary(dir).notes, kept);
        QCOMPARE(fs::exists(fs::symlink_status(dir + "/notes.txt")), !kept.empty());
    }
    // A run folder that is a link, and a folder that is no run, get no notes.
    fs::create_symlink(dir, m_runs + "/linked");
    trainlab::requireRunFolder(dir);
    for (const std::string &target : {m_runs + "/linked", m_runs}) {
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, trainlab::requireRunFolder(target));
        try {
            trainlab::writeRunNotes(target, "x");
            QFAIL(("notes written into " + target).c_str());
        } catch (const std::runtime_error &e) {
            QVERIFY2(std::string(e.what()).rfind(target + ": ", 0) == 0, e.what());
        }
    }
    QVERIFY(!fs::exists(m_runs + "/notes.txt"));
}

// The desktop's trash (freedesktop.org): the folder whole, a .trashinfo with its percent-encoded path, a taken name
// numbered, a link moved as the link, a held run kept with no .trashinfo left behind.
void tst_Hostile::trashKeepsTheRunWhole()
{
    const std::string data = m_tmp.path().toStdString() + "/data-" + std::to_string(std::rand());
    qputenv("XDG_DATA_HOME", data.c_str());
    const std::string trash = data + "/Trash";
    const std::string run = makeRun(m_runs, "to trash");
    const std::string named = m_runs + "/a b%ö";
    fs::rename(run, named);
    const std::string where = trainlab::trashRun(named);
    QCOMPARE(where, trash + "/files/a b%ö");
    QVERIFY(!fs::exists(fs::symlink_status(named)) && fs::exists(where + "/summary.json"));
    const std::string info = readText(trash + "/info/a b%ö.trashinfo");
    QVERIFY2(info.rfind("[Trash Info]\nPath=" + m_runs + "/a%20b%25%C3%B6\nDeletionDate=", 0) == 0, info.c_str());
    // The same name again: numbered, the first one untouched.
    fs::rename(makeRun(m_runs, "again"), named);
    QCOMPARE(trainlab::trashRun(named + "/"), trash + "/files/a b%ö.2");
    QVERIFY(fs::exists(where + "/summary.json"));
    // A link: the link goes, what it points to stays.
    const std::string target = makeRun(m_runs, "target");
    fs::create_symlink(target, m_runs + "/link");
    QVERIFY(fs::is_symlink(trainlab::trashRun(m_runs + "/link")));
    QVERIFY(fs::exists(target + "/summary.json"));
    // Held by a running process: refused, kept, no .trashinfo left.
    const int fd = ::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    QVERIFY(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, trainlab::trashRun(target));
    ::close(fd);
    QVERIFY(fs::exists(target + "/summary.json"));
    QVERIFY(!fs::exists(trash + "/info/" + fs::path(target).filename().string() + ".trashinfo"));
    qunsetenv("XDG_DATA_HOME");
}

// A run on another file system than the home trash goes to that file system's own trash ($topdir/.Trash-$uid), its
// .trashinfo path from the top: moved, never copied, and the home trash untouched.
void tst_Hostile::trashOnAnotherFileSystem()
{
    struct stat tmp {}, dev {}, shm {};
    if (::stat(m_tmp.path().toUtf8().constData(), &tmp) != 0 || ::stat("/dev", &dev) != 0 || ::stat("/dev/shm", &shm) != 0
        || shm.st_dev == tmp.st_dev || shm.st_dev == dev.st_dev || ::access("/dev/shm", W_OK) != 0)
        QSKIP("needs /dev/shm writable and the top of a file system other than the temporary folder's");
    const std::string data = m_tmp.path().toStdString() + "/data-" + std::to_string(std::rand());
    qputenv("XDG_DATA_HOME", data.c_str());
    QTemporaryDir other(QStringLiteral("/dev/shm/trainlab-trash-XXXXXX"));
    QVERIFY(other.isValid());
    const std::string run = makeRun(other.path().toStdString(), "far run");
    const std::string trash = "/dev/shm/.Trash-" + std::to_string(::getuid());
    const std::string name = "far run";
    const bool hadTrash = fs::exists(trash);
    const std::string where = trainlab::trashRun(run);
    const std::string info = trash + "/info/" + fs::path(where).filename().string() + ".trashinfo";
    const std::string text = readText(info);
    const std::string kept = where;
    const bool whole = fs::exists(where + "/summary.json") && fs::exists(where + "/metrics.csv");
    fs::remove_all(where);
    fs::remove(info);
    if (!hadTrash) {
        std::error_code ec;
        for (const char *sub : {"/files", "/info", ""})
            fs::remove(trash + sub, ec);
    }
    QCOMPARE(fs::path(kept).parent_path().string(), trash + "/files");
    QVERIFY(fs::path(kept).filename().string().rfind(name, 0) == 0);
    QVERIFY(whole && !fs::exists(run));
    const std::string relative = fs::path(other.path().toStdString()).filename().string() + "/far%20run";
    QVERIFY2(text.rfind("[Trash Info]\nPath=" + relative + "\nDeletionDate=", 0) == 0, text.c_str());
    QVERIFY(!fs::exists(data + "/Trash/files"));
    qunsetenv("XDG_DATA_HOME");
}

void tst_Hostile::notesHeadline_data()
{
    QTest::addColumn<QByteArray>("notes");
    QTest::addColumn<int>("maxChars");
    QTest::addColumn<QByteArray>("headline");
    QTest::newRow("one line") << QByteArray("baseline") << 10 << QByteArray("baseline");
    QTest::newRow("more lines") << QByteArray("baseline\nthen it wobbled") << 80 << QByteArray("baseline…");
    QTest::newRow("blank lines after") << QByteArray("  baseline\t\r\n \n") << 80 << QByteArray("baseline");
    QTest::newRow("exactly the bound") << QByteArray("abcde") << 5 << QByteArray("abcde");
    QTest::newRow("cut, never inside a character") << QByteArray("gr\xc3\xb6\xc3\x9f" "er") << 4 << QByteArray("gr\xc3\xb6\xc3\x9f…");
    QTest::newRow("a blank first line") << QByteArray(" \nsecond") << 80 << QByteArray("…");
    QTest::newRow("none") << QByteArray() << 80 << QByteArray();
}

// The notes' first line in a table cell (History, runs, the Compare table): cut by characters, "…" where more.
void tst_Hostile::notesHeadline()
{
    QFETCH(QByteArray, notes);
    QFETCH(int, maxChars);
    QFETCH(QByteArray, headline);
    QCOMPARE(QByteArray::fromStdString(trainlab::notesHeadline(notes.toStdString(), static_cast<std::size_t>(maxChars))), headline);
}

// A folder removed under a run by another tool: the run says so rather than claiming a kept checkpoint.
void tst_Hostile::vanishedFolderSaysSo()
{
    trainlab::ExperimentConfig config;
    config.name = "vanish";
    trainlab::RunRecord record(m_runs, config, {"cpu"});
    record.commitEpoch({1, 0.5, 0.5, 0.5, 1.0, 10.0, {}, 0.0, {}}, "checkpoint bytes");
    QVERIFY(!record.folderGone());
    fs::remove_all(record.dir());
    QVERIFY(record.folderGone());
    try {
        record.commitEpoch({2, 0.5, 0.5, 0.6, 1.0, 10.0, {}, 0.0, {}}, "checkpoint bytes");
        QFAIL("an epoch was committed into a deleted folder");
    } catch (const std::runtime_error &e) {
        QVERIFY2(std::string(e.what()).find("deleted or moved while the run was training") != std::string::npos, e.what());
        QVERIFY(std::string(e.what()).find("is kept") == std::string::npos);
    }
}

void tst_Hostile::resumeKeepsEpochsWithoutCheckpoint()
{
    const std::string dir = makeRun(m_runs, "nocheckpoint", 3);
    // summary.json says no epoch (as after a crash between the two writes); metrics.csv holds three.
    writeText(dir + "/summary.json", R"({"name": "nocheckpoint", "status": "stopped", "epochs_done": 0})");
    const std::string before = readText(dir + "/metrics.csv");
    RecordingObserver observer;
    trainlab::StopFlag stop{false};
    const trainlab::RunResult r = trainlab::resumeRun(dir, observer, stop, {}, 0);
    QCOMPARE(r.status, trainlab::RunStatus::Failed);
    QVERIFY2(r.error.find("3 epochs recorded cannot be resumed and are kept") != std::string::npos, r.error.c_str());
    QCOMPARE(readText(dir + "/metrics.csv"), before);
}

void tst_Hostile::runsDirThatIsAFile()
{
    const std::string file = m_runs + "/plain-file";
    writeText(file, "x");
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, trainlab::listRuns(file));
    QVERIFY(trainlab::listRuns(m_runs + "/absent").empty());
}

void tst_Hostile::moveAsideNeverOverwrites()
{
    const std::string file = m_runs + "/queue.json";
    writeText(file, "damaged");
    writeText(file + ".damaged", "an earlier damaged queue");
    const std::string aside = trainlab::moveAside(file, ".damaged");
    QCOMPARE(aside, file + ".damaged-2");
    QCOMPARE(readText(aside), std::string("damaged"));
    QCOMPARE(readText(file + ".damaged"), std::string("an earlier damaged queue"));
    QVERIFY(!fs::exists(file));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, trainlab::moveAside(file, ".damaged"));
}

// Two `sweep --resume` of one sweep: the second is refused while the first holds the folder.
void tst_Hostile::sweepFolderLocked()
{
    const std::string sweep = m_runs + "/sweeps/s1";
    fs::create_directories(sweep);
    {
        trainlab::FolderLock first(sweep);
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, trainlab::FolderLock second(sweep));
        QProcess cli;
        cli.start(QStringLiteral(TRAINLAB_CLI), {QStringLiteral("sweep"), QStringLiteral("--resume"),
                                                 QString::fromStdString(sweep)});
        QVERIFY(cli.waitForFinished(30000));
        QVERIFY(cli.exitCode() != 0);
        const QString err = QString::fromUtf8(cli.readAllStandardError());
        QVERIFY2(err.contains(QStringLiteral("in use by another TrainLab process")), qPrintable(err));
    }
    trainlab::FolderLock again(sweep);
}

void tst_Hostile::homeAndXdg()
{
    EnvGuard home("HOME"), xdg("XDG_DATA_HOME"), runs("TRAINLAB_RUNS_DIR");
    qunsetenv("TRAINLAB_RUNS_DIR");
    qunsetenv("HOME");
    qputenv("XDG_DATA_HOME", "relative/data");
    const passwd *account = ::getpwuid(::getuid());
    QVERIFY(account && account->pw_dir);
    QCOMPARE(trainlab::defaultRunsDir(), std::string(account->pw_dir) + "/.local/share/TrainLab/runs");
    QVERIFY(trainlab::defaultRunsDir().rfind("/tmp", 0) != 0);
    qputenv("XDG_DATA_HOME", "/srv/data");
    QCOMPARE(trainlab::defaultRunsDir(), std::string("/srv/data/TrainLab/runs"));
}

void tst_Hostile::missingResourcesNamed()
{
    EnvGuard resources("TRAINLAB_RESOURCES");
    qputenv("TRAINLAB_RESOURCES", "/nowhere/trainlab");
    const std::string problem = trainlab::resourcesProblem();
    QVERIFY2(problem.find("TRAINLAB_RESOURCES=/nowhere/trainlab") != std::string::npos, problem.c_str());
    qunsetenv("TRAINLAB_RESOURCES");
    QCOMPARE(trainlab::resourcesProblem(), std::string());
}

void tst_Hostile::mirrorsChecked_data()
{
    QTest::addColumn<QString>("url");
    QTest::addColumn<bool>("allowed");
    QTest::addColumn<QString>("shown");
    QTest::newRow("https") << "https://example.org/fm/" << true << "https://example.org/fm/";
    QTest::newRow("HTTP upper case") << "HTTP://example.org/" << true << "HTTP://example.org/";
    QTest::newRow("credentials") << "https://user:secret@example.org/a@b" << true << "https://***@example.org/a@b";
    QTest::newRow("file") << "file:///etc/" << false << "file:///etc/";
    QTest::newRow("gopher") << "gopher://example.org/" << false << "gopher://example.org/";
    QTest::newRow("dict") << "dict://u:p@example.org/" << false << "dict://***@example.org/";
    QTest::newRow("no scheme") << "example.org/fm" << false << "example.org/fm";
}

void tst_Hostile::mirrorsChecked()
{
    QFETCH(QString, url);
    QFETCH(bool, allowed);
    QFETCH(QString, shown);
    QCOMPARE(trainlab::mirrorProblem(url.toStdString()).empty(), allowed);
    QCOMPARE(QString::fromStdString(trainlab::redactUrl(url.toStdString())), shown);
}

void tst_Hostile::wordFilterAnyCase_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QByteArray>("query");
    QTest::addColumn<bool>("matches");
    QTest::newRow("ASCII, any case") << QByteArray("fmnist-BF16\nfailed") << QByteArray("bf16 FAILED") << true;
    QTest::newRow("every word needed") << QByteArray("bf16\ncompleted") << QByteArray("bf16 failed") << false;
    QTest::newRow("white space in the query") << QByteArray("run-a\ncompleted") << QByteArray(" \tA  completed\n") << true;
    QTest::newRow("empty query") << QByteArray("anything") << QByteArray("   ") << true;
    QTest::newRow("Latin-1 capitals") << QByteArray("\xc3\x84RGER-Lauf") << QByteArray("\xc3\xa4rger lauf") << true;
    QTest::newRow("Cyrillic") << QByteArray("\xd0\x9f\xd0\xa0\xd0\x9e\xd0\x93\xd0\x9e\xd0\x9d-1") << QByteArray("\xd0\xbf\xd1\x80\xd0\xbe\xd0\xb3\xd0\xbe\xd0\xbd") << true;
    QTest::newRow("Greek, query in capitals") << QByteArray("\xce\xb1\xce\xbb\xcf\x86\xce\xb1") << QByteArray("\xce\x91\xce\x9b\xce\xa6\xce\x91") << true;
    QTest::newRow("bytes that are not UTF-8 kept") << QByteArray("run\xff\xfeX") << QByteArray("\xff\xfex") << true;
    QTest::newRow("an overlong slash is no slash") << QByteArray("a\xc0\xaf" "b") << QByteArray("a/b") << false;
    QTest::newRow("a cut-off character") << QByteArray("run\xc3") << QByteArray("RUN") << true;
}

// History and `runs --filter` fold case the same way, Unicode included, and never by the process's locale.
void tst_Hostile::wordFilterAnyCase()
{
    QFETCH(QByteArray, text);
    QFETCH(QByteArray, query);
    QFETCH(bool, matches);
    LocaleGuard restore;
    for (const char *locale : {"C", "de_DE.UTF-8", "tr_TR.UTF-8"}) {
        if (!std::setlocale(LC_ALL, locale))
            continue;
        const trainlab::WordFilter filter(query.toStdString());
        QVERIFY2(filter.matches(text.toStdString()) == matches, locale);
    }
    QCOMPARE(trainlab::WordFilter::fold("\xc3\x84\xc3\x96\xc3\x9c-Ab"), std::string("\xc3\xa4\xc3\xb6\xc3\xbc-ab"));
}

QTEST_GUILESS_MAIN(tst_Hostile)
#include "tst_hostile.moc"
