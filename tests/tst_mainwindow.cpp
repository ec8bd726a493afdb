#include "core/config.h"
#include "core/runs/runrecord.h"
#include "ui/accuracychart.h"
#include "ui/experimentform.h"
#include "ui/lrfinderdialog.h"
#include "ui/evaluationview.h"
#include "ui/mainwindow.h"
#include "ui/queuepanel.h"
#include "ui/runhistorymodel.h"
#include "ui/timeview.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QImage>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

using trainlab::ExperimentConfig;
using trainlab::LrFinderDialog;
using trainlab::MainWindow;
using trainlab::RunHistoryModel;

namespace {

template<typename T>
T *child(QWidget &window, const char *name)
{
    T *widget = window.findChild<T *>(QLatin1String(name));
    if (!widget)
        qFatal("no widget named %s", name);
    return widget;
}

// Types into a widget as a person would: select what is there, then the keys.
void retype(QWidget *widget, const QString &text)
{
    widget->setFocus();
    if (auto *spin = qobject_cast<QAbstractSpinBox *>(widget))
        spin->selectAll();
    else if (auto *edit = qobject_cast<QLineEdit *>(widget))
        edit->selectAll();
    QTest::keyClicks(widget, text);
}

// Clicks the given button of the next message box that opens.
void answerNextQuestion(QMessageBox::StandardButton button)
{
    QTimer::singleShot(100, [button] {
        auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
        if (box && box->button(button))
            QTest::mouseClick(box->button(button), Qt::LeftButton);
    });
}

QJsonObject readJson(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).object();
}

} // namespace

class tst_MainWindow : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void listsTheCpuAndBuild();
    void invalidBatchSizeDisablesStart();
    void shortRunGrowsTheChartAndHistory();
    void stopEndsTheRunAsStopped();
    void resumeAndContinueFromTheHistory();
    void aFailingRunSaysWhy();
    void saveThenOpenRestoresEveryField();
    void brokenFileLeavesTheFormUnchanged_data();
    void brokenFileLeavesTheFormUnchanged();
    void duplicateMarksAnUnsavedCopy();
    void unsavedChangesAreOfferedForSaving();
    void selectingTwoRunsOverlaysTwoCurves();
    void useRunConfigurationAndDelete();
    void deleteRunStaysInItsFolder_data();
    void deleteRunStaysInItsFolder();
    void exportsChartAndMetrics();
    void closingDuringARunExitsCleanly();
    void destroyingDuringARunDoesNotHang();
    void settingsRememberRecentFilesAndRunsFolder();
    void rangeTestHoldsTheDevices();
    void chartHasMostOfTheWidth();
    void advancedFormNeverClipped();

private:
    // A small real experiment on the built-in sample, entered through the form's widgets.
    void enterShortExperiment(MainWindow &window, int epochs, int trainImages);
    // A finished run written through the core's run record, without training.
    QString fakeRun(const QString &name, const QList<double> &testAcc);

    QTemporaryDir m_home;
    QString m_runsDir;
};

void tst_MainWindow::initTestCase()
{
    QVERIFY(m_home.isValid());
    // Settings in a folder of this test run only, never the user's (nor a previous run's).
    qputenv("XDG_CONFIG_HOME", m_home.filePath(QStringLiteral("config")).toUtf8());
    qputenv("XDG_DATA_HOME", m_home.filePath(QStringLiteral("data")).toUtf8());   // the trash Delete Run moves runs to
    QApplication::setOrganizationName(QStringLiteral("TrainLabTest"));
    QApplication::setApplicationName(QStringLiteral("TrainLabTest"));
}

void tst_MainWindow::init()
{
    static int n = 0;
    m_runsDir = m_home.filePath(QStringLiteral("runs%1").arg(++n));
    qputenv("TRAINLAB_RUNS_DIR", m_runsDir.toUtf8());
    QSettings().clear();
}

void tst_MainWindow::cleanup()
{
    // A failed test must not leave a box open for the next one.
    while (QWidget *modal = QApplication::activeModalWidget())
        modal->close();
}

void tst_MainWindow::enterShortExperiment(MainWindow &window, int epochs, int trainImages)
{
    QVERIFY(window.loadPreset(QStringLiteral("quick-demo")));
    retype(child<QLineEdit>(window, "name"), QStringLiteral("gui test"));
    retype(child<QSpinBox>(window, "epochs"), QString::number(epochs));
    retype(child<QSpinBox>(window, "batchSize"), QStringLiteral("20"));
    retype(child<QSpinBox>(window, "trainLimit"), QString::number(trainImages));
    retype(child<QSpinBox>(window, "testLimit"), QStringLiteral("20"));
    QVERIFY2(window.form()->isValid(), qPrintable(window.form()->problems().join('\n')));
}

QString tst_MainWindow::fakeRun(const QString &name, const QList<double> &testAcc)
{
    ExperimentConfig c;
    c.name = name.toStdString();
    c.epochs = static_cast<int>(testAcc.size());
    trainlab::RunRecord record(m_runsDir.toStdString(), c, c.devices);
    trainlab::RunResult result;
    for (int i = 0; i < testAcc.size(); ++i) {
        trainlab::EpochMetrics m;
        m.epoch = i + 1;
        m.testAcc = testAcc[i];
        m.trainLoss = 1.0;
        record.commitEpoch(m, std::string());
        result.epochs.push_back(m);
    }
    result.status = trainlab::RunStatus::Completed;
    record.finish(result);
    return QString::fromStdString(record.dir());
}

void tst_MainWindow::listsTheCpuAndBuild()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto *devices = child<QListWidget>(window, "devices");
    QVERIFY(devices->item(0)->text().startsWith(QStringLiteral("cpu — CPU")));
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());
    QVERIFY(!child<QPushButton>(window, "stopButton")->isEnabled());
    QVERIFY(window.windowTitle().startsWith(QStringLiteral("experiment[*] — TrainLab")));
    bool buildShown = false;
    for (QLabel *label : window.statusBar()->findChildren<QLabel *>())
        buildShown |= label->text().contains(QLatin1String("build, LibTorch"));
    QVERIFY(buildShown);
}

void tst_MainWindow::invalidBatchSizeDisablesStart()
{
    MainWindow window;
    window.show();
    auto *start = child<QPushButton>(window, "startButton");
    QVERIFY(start->isEnabled());
    retype(child<QSpinBox>(window, "batchSize"), QStringLiteral("0"));
    QVERIFY(!start->isEnabled());
    auto *problems = child<QLabel>(window, "problems");
    QVERIFY(problems->isVisible());
    QVERIFY(problems->text().contains(QLatin1String("batch_size: must be at least 1, got 0")));
    QVERIFY(window.isWindowModified());
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY(!window.isRunning());
    QVERIFY(!window.openLrFinder());   // Find Learning Rate takes a valid experiment too
    retype(child<QSpinBox>(window, "batchSize"), QStringLiteral("64"));
    QVERIFY(start->isEnabled());
    // Its "Use" puts the suggested rate into the form, as if typed.
    LrFinderDialog *finder = window.openLrFinder();
    QVERIFY(finder);
    Q_EMIT finder->learningRateChosen(0.0123);
    QCOMPARE(child<QLineEdit>(window, "learningRate")->text(), QStringLiteral("0.0123"));
    QCOMPARE(window.form()->config().learningRate, 0.0123);
    finder->close();
}

void tst_MainWindow::shortRunGrowsTheChartAndHistory()
{
    MainWindow window;
    window.show();
    enterShortExperiment(window, 2, 40);
    QSignalSpy ended(&window, &MainWindow::runEnded);
    QTest::mouseClick(child<QPushButton>(window, "startButton"), Qt::LeftButton);
    QVERIFY(window.isRunning());
    QVERIFY(!child<QPushButton>(window, "startButton")->isEnabled());
    // The run shows in the history as soon as its folder exists, and cannot be deleted while it trains.
    QTRY_COMPARE_WITH_TIMEOUT(window.historyModel()->rowCount(), 1, 60000);
    QCOMPARE(window.historyModel()->data(window.historyModel()->index(0, RunHistoryModel::Status)).toString(),
             QStringLiteral("running"));
    window.history()->selectRow(0);
    QVERIFY(!window.findChild<QAction *>(QStringLiteral("deleteRunAction"))->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(window.chart()->livePointCount() >= 1, 120000);
    QTRY_COMPARE_WITH_TIMEOUT(ended.size(), 1, 120000);
    // runEnded means the chart is complete: the last epoch does not wait for the redraw timer.
    QCOMPARE(window.chart()->livePointCount(), 2);
    QVERIFY(window.findChild<QAction *>(QStringLiteral("deleteRunAction"))->isEnabled());
    QVERIFY(!window.isRunning());
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());

    QCOMPARE(window.historyModel()->rowCount(), 1);
    auto cell = [&](int column) { return window.historyModel()->data(window.historyModel()->index(0, column)).toString(); };
    QCOMPARE(cell(RunHistoryModel::Name), QStringLiteral("gui test"));
    QCOMPARE(cell(RunHistoryModel::Status), QStringLiteral("completed"));
    QCOMPARE(cell(RunHistoryModel::Epochs), QStringLiteral("2/2"));
    QCOMPARE(cell(RunHistoryModel::Batch), QStringLiteral("20"));
    QCOMPARE(cell(RunHistoryModel::Devices), QStringLiteral("cpu"));

    const QString dir = QString::fromStdString(window.historyModel()->summary(0).dir);
    QVERIFY(dir.startsWith(m_runsDir));
    for (const char *file : {"config.json", "metrics.csv", "summary.json", "checkpoint.pt"})
        QVERIFY2(QFile::exists(dir + '/' + file), file);
    QCOMPARE(readJson(dir + QStringLiteral("/summary.json")).value(QStringLiteral("status")).toString(),
             QStringLiteral("completed"));
    QFile metrics(dir + QStringLiteral("/metrics.csv"));
    QVERIFY(metrics.open(QIODevice::ReadOnly));
    QCOMPARE(metrics.readAll().count('\n'), 3);
    const QString log = child<QPlainTextEdit>(window, "log")->toPlainText();
    QVERIFY2(log.contains(QLatin1String("epoch 2/2  loss ")), qPrintable(log));
    QVERIFY(log.contains(QLatin1String("run kept in ") + dir));

    // The runs folder's size line, and freeing a run's checkpoints without losing its record.
    auto *storage = child<QLabel>(window, "runsStorage");
    QVERIFY2(storage->text().startsWith(QLatin1String("Runs folder: 1 run, ")), qPrintable(storage->text()));
    QVERIFY2(storage->text().contains(QRegularExpression(QStringLiteral("\\(checkpoints [1-9][0-9]* MB\\)$"))), qPrintable(storage->text()));
    window.history()->selectRow(0);
    auto *deleteCheckpoints = window.findChild<QAction *>(QStringLiteral("deleteCheckpointsAction"));
    QVERIFY(deleteCheckpoints->isEnabled());
    answerNextQuestion(QMessageBox::Yes);
    deleteCheckpoints->trigger();
    QVERIFY(!QFile::exists(dir + QStringLiteral("/checkpoint.pt")));
    QVERIFY(!QFile::exists(dir + QStringLiteral("/best.pt")));
    QVERIFY(QFile::exists(dir + QStringLiteral("/metrics.csv")));
    QCOMPARE(readJson(dir + QStringLiteral("/summary.json")).value(QStringLiteral("checkpoint_epoch")).toInt(-1), 0);
    QCOMPARE(window.historyModel()->rowCount(), 1);
    QVERIFY2(storage->text().endsWith(QLatin1String("(checkpoints 0 KB)")), qPrintable(storage->text()));
}

void tst_MainWindow::stopEndsTheRunAsStopped()
{
    MainWindow window;
    window.show();
    enterShortExperiment(window, 50, 400);
    QSignalSpy ended(&window, &MainWindow::runEnded);
    QTest::mouseClick(child<QPushButton>(window, "startButton"), Qt::LeftButton);
    auto *bar = child<QProgressBar>(window, "batchProgress");
    QTRY_VERIFY_WITH_TIMEOUT(bar->value() >= 1 && bar->maximum() == 20, 60000);
    auto *stop = child<QPushButton>(window, "stopButton");
    QVERIFY(stop->isEnabled());
    QVERIFY(!window.openLrFinder());   // the range test would share the run's devices
    QElapsedTimer clock;
    clock.start();
    QTest::mouseClick(stop, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(ended.size(), 1, 20000);
    qInfo("stopped %lld ms after the click", static_cast<long long>(clock.elapsed()));
    // A batch of 20 takes about 0.3 s here: 5 s is far more than "within a batch".
    QVERIFY(clock.elapsed() < 5000);
    const auto result = ended.first().first().value<trainlab::RunResult>();
    QCOMPARE(result.status, trainlab::RunStatus::Stopped);
    QVERIFY(result.epochs.size() < 50);
    QCOMPARE(window.historyModel()->data(window.historyModel()->index(0, RunHistoryModel::Status)).toString(),
             QStringLiteral("stopped"));
    QCOMPARE(readJson(result.runDir.c_str() + QStringLiteral("/summary.json")).value("status").toString(),
             QStringLiteral("stopped"));
}

void tst_MainWindow::resumeAndContinueFromTheHistory()
{
    MainWindow window;
    window.show();
    enterShortExperiment(window, 6, 40);
    QSignalSpy ended(&window, &MainWindow::runEnded);
    QTest::mouseClick(child<QPushButton>(window, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(window.chart()->livePointCount() >= 1, 120000);
    QTest::mouseClick(child<QPushButton>(window, "stopButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(ended.size(), 1, 60000);
    const int before = static_cast<int>(ended.last().first().value<trainlab::RunResult>().epochs.size());
    QVERIFY(before >= 1 && before < 6);
    auto *resume = window.findChild<QAction *>(QStringLiteral("resumeRunAction"));
    auto *more = window.findChild<QAction *>(QStringLiteral("continueRunAction"));
    QVERIFY(resume && more);
    QVERIFY(!resume->isEnabled());
    window.history()->selectRow(0);
    QCOMPARE(window.historyModel()->data(window.historyModel()->index(0, RunHistoryModel::Status)).toString(),
             QStringLiteral("stopped"));
    QVERIFY(resume->isEnabled());
    QVERIFY(!more->isEnabled());
    QVERIFY(window.history()->actions().contains(resume));

    resume->trigger();
    QVERIFY(window.isRunning());
    QVERIFY(!resume->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(ended.size(), 2, 120000);
    // One curve: the epochs from before the stop, then the resumed ones; the same folder, now completed.
    QCOMPARE(window.chart()->livePointCount(), 6);
    QCOMPARE(window.historyModel()->rowCount(), 1);
    auto cell = [&](int column) { return window.historyModel()->data(window.historyModel()->index(0, column)).toString(); };
    QCOMPARE(cell(RunHistoryModel::Status), QStringLiteral("completed"));
    QCOMPARE(cell(RunHistoryModel::Epochs), QStringLiteral("6/6"));
    const QString dir = QString::fromStdString(window.historyModel()->summary(0).dir);
    QCOMPARE(trainlab::readMetrics(dir.toStdString()).size(), size_t(6));
    QVERIFY(child<QPlainTextEdit>(window, "log")->toPlainText().contains(QStringLiteral("resuming after epoch %1 of 6").arg(before)));

    window.history()->selectRow(0);
    QVERIFY(!resume->isEnabled());
    QVERIFY(more->isEnabled());
    QTimer::singleShot(100, [] {
        auto *dialog = qobject_cast<QInputDialog *>(QApplication::activeModalWidget());
        if (dialog) {
            dialog->setIntValue(2);
            dialog->accept();
        }
    });
    more->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(ended.size(), 3, 120000);
    QCOMPARE(window.chart()->livePointCount(), 8);
    QCOMPARE(cell(RunHistoryModel::Epochs), QStringLiteral("8/8"));
    QCOMPARE(cell(RunHistoryModel::Status), QStringLiteral("completed"));
    QCOMPARE(trainlab::readMetrics(dir.toStdString()).size(), size_t(8));
}

void tst_MainWindow::aFailingRunSaysWhy()
{
    // Headers that promise 10 images of 28x28 over files that hold less: the form cannot tell, the run can.
    const QString folder = m_home.filePath(QStringLiteral("truncated"));
    QVERIFY(QDir().mkpath(folder));
    auto write = [&](const char *name, const QByteArray &bytes) {
        QFile file(folder + '/' + QLatin1String(name));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(bytes);
    };
    const QByteArray images = QByteArray::fromHex("00000803" "0000000a" "0000001c" "0000001c") + QByteArray(100, '\0');
    const QByteArray labels = QByteArray::fromHex("00000801" "0000000a") + QByteArray(10, '\1');
    write("train-images-idx3-ubyte", images);
    write("t10k-images-idx3-ubyte", images);
    write("train-labels-idx1-ubyte", labels);
    write("t10k-labels-idx1-ubyte", labels);

    MainWindow window;
    window.show();
    enterShortExperiment(window, 1, 0);
    child<QComboBox>(window, "datasetKind")->setCurrentIndex(2);
    retype(child<QLineEdit>(window, "datasetPath"), folder);
    // validate reads the headers: a batch above their 10 images would be refused before the run.
    retype(child<QSpinBox>(window, "batchSize"), QStringLiteral("5"));
    QVERIFY2(window.form()->isValid(), qPrintable(window.form()->problems().join('\n')));
    QSignalSpy ended(&window, &MainWindow::runEnded);
    QTest::mouseClick(child<QPushButton>(window, "startButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(ended.size(), 1, 30000);
    const auto result = ended.first().first().value<trainlab::RunResult>();
    QCOMPARE(result.status, trainlab::RunStatus::Failed);
    auto *box = window.findChild<QMessageBox *>(QStringLiteral("errorBox"));
    QVERIFY(box);
    QVERIFY2(box->text().contains(folder + QStringLiteral("/train-images-idx3-ubyte")), qPrintable(box->text()));
    QVERIFY(child<QPlainTextEdit>(window, "log")->toPlainText().contains(QLatin1String("run failed: ")));
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());
    box->close();
}

void tst_MainWindow::saveThenOpenRestoresEveryField()
{
    MainWindow window;
    window.show();
    retype(child<QLineEdit>(window, "name"), QStringLiteral("saved experiment"));
    child<QComboBox>(window, "datasetKind")->setCurrentIndex(2);
    retype(child<QLineEdit>(window, "datasetPath"), m_home.path());
    retype(child<QSpinBox>(window, "cpuReplicas"), QStringLiteral("2"));
    retype(child<QSpinBox>(window, "batchSize"), QStringLiteral("48"));
    retype(child<QLineEdit>(window, "learningRate"), QStringLiteral("3e-2"));
    retype(child<QSpinBox>(window, "epochs"), QStringLiteral("12"));
    retype(child<QLineEdit>(window, "seed"), QStringLiteral("42"));
    retype(child<QLineEdit>(window, "momentum"), QStringLiteral("0.875"));
    retype(child<QLineEdit>(window, "weightDecay"), QStringLiteral("1e-4"));
    child<QComboBox>(window, "precision")->setCurrentText(QStringLiteral("bf16"));
    retype(child<QSpinBox>(window, "cpuThreads"), QStringLiteral("3"));
    retype(child<QSpinBox>(window, "trainLimit"), QStringLiteral("500"));
    retype(child<QSpinBox>(window, "testLimit"), QStringLiteral("100"));
    QVERIFY(window.isWindowModified());
    const ExperimentConfig entered = window.form()->config();
    QCOMPARE(entered.devices, (std::vector<std::string>{"cpu", "cpu"}));
    QCOMPARE(entered.learningRate, 0.03);

    const QString path = m_home.filePath(QStringLiteral("saved.json"));
    QVERIFY(window.saveConfigTo(path));
    QVERIFY(!window.isWindowModified());
    QVERIFY(window.windowTitle().startsWith(QLatin1String("saved experiment[*]")));
    QCOMPARE(ExperimentConfig::load(path.toStdString()).toJson(), entered.toJson());

    MainWindow reopened;
    QVERIFY(reopened.openConfigFile(path));
    QVERIFY(!reopened.isWindowModified());
    QCOMPARE(reopened.currentFile(), path);
    QCOMPARE(reopened.form()->config().toJson(), entered.toJson());
    QCOMPARE(child<QLineEdit>(reopened, "name")->text(), QStringLiteral("saved experiment"));
    QCOMPARE(child<QComboBox>(reopened, "datasetKind")->currentIndex(), 2);
    QCOMPARE(child<QLineEdit>(reopened, "datasetPath")->text(), m_home.path());
    QCOMPARE(child<QSpinBox>(reopened, "cpuReplicas")->value(), 2);
    QCOMPARE(child<QSpinBox>(reopened, "batchSize")->value(), 48);
    QCOMPARE(child<QLineEdit>(reopened, "learningRate")->text(), QStringLiteral("0.03"));
    QCOMPARE(child<QSpinBox>(reopened, "epochs")->value(), 12);
    QCOMPARE(child<QLineEdit>(reopened, "seed")->text(), QStringLiteral("42"));
    QCOMPARE(child<QLineEdit>(reopened, "momentum")->text(), QStringLiteral("0.875"));
    QCOMPARE(child<QLineEdit>(reopened, "weightDecay")->text(), QStringLiteral("1e-4"));
    QCOMPARE(child<QComboBox>(reopened, "precision")->currentText(), QStringLiteral("bf16"));
    QCOMPARE(child<QSpinBox>(reopened, "cpuThreads")->value(), 3);
    QCOMPARE(child<QSpinBox>(reopened, "trainLimit")->value(), 500);
    QCOMPARE(child<QSpinBox>(reopened, "testLimit")->value(), 100);
}

void tst_MainWindow::brokenFileLeavesTheFormUnchanged_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("message");
    QTest::newRow("not json") << QByteArray("{\"name\": ") << "not valid JSON";
    QTest::newRow("foreign json") << QByteArray("{\"model_name\": \"bert\"}") << "model_name: unknown key";
    QTest::newRow("wrong type") << QByteArray("{\"batch_size\": \"big\"}") << "batch_size: must be an integer";
    QTest::newRow("future schema") << QByteArray("{\"schema_version\": 2}") << "schema_version: must be 1, got 2";
    QTest::newRow("missing") << QByteArray() << "cannot";
}

void tst_MainWindow::brokenFileLeavesTheFormUnchanged()
{
    QFETCH(QByteArray, content);
    QFETCH(QString, message);
    MainWindow window;
    window.show();
    QVERIFY(window.loadPreset(QStringLiteral("quick-demo")));
    retype(child<QSpinBox>(window, "epochs"), QStringLiteral("3"));
    const std::string before = window.form()->config().toJson();
    QString path = m_home.filePath(QStringLiteral("broken.json"));
    QFile::remove(path);
    if (!content.isEmpty()) {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(content);
    }
    QVERIFY(!window.openConfigFile(path));
    QCOMPARE(window.form()->config().toJson(), before);
    QVERIFY(window.isWindowModified());
    QVERIFY(window.currentFile().isEmpty());
    auto *box = window.findChild<QMessageBox *>(QStringLiteral("errorBox"));
    QVERIFY(box);
    QTRY_VERIFY(box->isVisible());
    QVERIFY2(box->text().contains(message), qPrintable(box->text()));
    QVERIFY(box->text().contains(path));
    box->close();
}

void tst_MainWindow::duplicateMarksAnUnsavedCopy()
{
    MainWindow window;
    window.show();
    const QString path = m_home.filePath(QStringLiteral("original.json"));
    QVERIFY(window.loadPreset(QStringLiteral("quick-demo")));
    QVERIFY(window.saveConfigTo(path));
    QVERIFY(!window.isWindowModified());
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QTest::keyClick(&window, Qt::Key_D, Qt::ControlModifier);
    QCOMPARE(child<QLineEdit>(window, "name")->text(), QStringLiteral("quick-demo copy"));
    QVERIFY(window.isWindowModified());
    QVERIFY(window.currentFile().isEmpty());
    QCOMPARE(ExperimentConfig::load(path.toStdString()).name, std::string("quick-demo"));
}

void tst_MainWindow::unsavedChangesAreOfferedForSaving()
{
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    const QString path = m_home.filePath(QStringLiteral("unsaved.json"));
    QVERIFY(window.loadPreset(QStringLiteral("quick-demo")));
    QVERIFY(window.saveConfigTo(path));
    retype(child<QSpinBox>(window, "epochs"), QStringLiteral("9"));
    QVERIFY(window.isWindowModified());

    // File > New: Cancel keeps the edit, Save writes it, and the form then starts afresh.
    answerNextQuestion(QMessageBox::Cancel);
    QTest::keyClick(&window, Qt::Key_N, Qt::ControlModifier);
    QCOMPARE(child<QSpinBox>(window, "epochs")->value(), 9);
    QVERIFY(window.isWindowModified());
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    answerNextQuestion(QMessageBox::Save);
    QTest::keyClick(&window, Qt::Key_N, Qt::ControlModifier);
    QCOMPARE(ExperimentConfig::load(path.toStdString()).epochs, 9);
    QCOMPARE(child<QLineEdit>(window, "name")->text(), QStringLiteral("experiment"));
    QVERIFY(!window.isWindowModified());

    // Text that is not a number is an unsaved edit, and is never saved as the old value.
    QVERIFY(!window.isWindowModified());
    const std::string saved = ExperimentConfig::load(path.toStdString()).toJson();
    retype(child<QLineEdit>(window, "learningRate"), QStringLiteral("0.05x"));
    QVERIFY(window.isWindowModified());
    QVERIFY(!window.saveConfigTo(path));
    QVERIFY(window.lastError().contains(QLatin1String("learning_rate: must be a number, got \"0.05x\"")));
    QCOMPARE(ExperimentConfig::load(path.toStdString()).toJson(), saved);
    window.findChild<QMessageBox *>(QStringLiteral("errorBox"))->close();
    retype(child<QLineEdit>(window, "learningRate"), QStringLiteral("0.1"));
    QVERIFY(!window.isWindowModified());

    // Closing with changes: Cancel keeps the window open, Discard closes it and leaves the file alone.
    retype(child<QSpinBox>(window, "epochs"), QStringLiteral("4"));
    answerNextQuestion(QMessageBox::Cancel);
    QVERIFY(!window.close());
    QVERIFY(window.isVisible());
    answerNextQuestion(QMessageBox::Discard);
    QVERIFY(window.close());
    QCOMPARE(ExperimentConfig::load(path.toStdString()).epochs, 9);
}

void tst_MainWindow::selectingTwoRunsOverlaysTwoCurves()
{
    // Each with a timing.csv of one bar per epoch: the Time tab shows the first selected run's.
    for (const QString &dir : {fakeRun(QStringLiteral("first"), {0.3, 0.5, 0.6}), fakeRun(QStringLiteral("second"), {0.4, 0.7})}) {
        QByteArray timing = QByteArray(trainlab::RunRecord::timingHeader()) + '\n';
        for (int e = 1; e <= trainlab::readRunSummary(dir.toStdString()).epochsDone; ++e)
            timing += QByteArray::number(e) + ",0,0.1,1.0,0.0,0.1,0.1\n";
        QFile file(dir + QStringLiteral("/timing.csv"));
        QVERIFY(file.open(QIODevice::WriteOnly) && file.write(timing) == timing.size());
    }
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QTableView *table = window.history();
    QCOMPARE(table->model()->rowCount(), 2);
    QCOMPARE(window.chart()->overlayCount(), 0);
    const QRect row0 = table->visualRect(table->model()->index(0, 0));
    const QRect row1 = table->visualRect(table->model()->index(1, 0));
    auto *time = window.findChild<trainlab::TimeView *>(QStringLiteral("timeView"));
    QVERIFY(time);
    QCOMPARE(time->barCount(), 0);
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, row0.center());
    QCOMPARE(window.chart()->overlayCount(), 1);
    const int firstBars = window.historyModel()->summary(0).epochsDone;
    QCOMPARE(time->barCount(), firstBars);
    auto *evaluation = window.findChild<trainlab::EvaluationView *>(QStringLiteral("evaluationView"));
    QVERIFY(evaluation && evaluation->againstDir().isEmpty());
    QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::ControlModifier, row1.center());
    QCOMPARE(window.chart()->overlayCount(), 2);
    QCOMPARE(time->barCount(), firstBars);
    // The Evaluation tab holds the first selected run against the second.
    QCOMPARE(evaluation->runDir(), QString::fromStdString(window.historyModel()->summary(0).dir));
    QCOMPARE(evaluation->againstDir(), QString::fromStdString(window.historyModel()->summary(1).dir));
    QList<int> points{window.chart()->overlayPointCount(0), window.chart()->overlayPointCount(1)};
    std::sort(points.begin(), points.end());
    QCOMPARE(points, (QList<int>{2, 3}));
    // A refresh (as at every run's start and end) keeps the comparison on screen.
    QTest::keyClick(&window, Qt::Key_F5);
    QCOMPARE(window.historyModel()->rowCount(), 2);
    QCOMPARE(window.history()->selectionModel()->selectedRows().size(), 2);
    QCOMPARE(window.chart()->overlayCount(), 2);
    const QStringList names = window.chart()->seriesNames();
    QVERIFY(std::any_of(names.begin(), names.end(), [](const QString &n) { return n.startsWith("first ("); }));
    QVERIFY(std::any_of(names.begin(), names.end(), [](const QString &n) { return n.startsWith("second ("); }));
}

void tst_MainWindow::useRunConfigurationAndDelete()
{
    const QString dir = fakeRun(QStringLiteral("to reuse"), {0.5});
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QTableView *table = window.history();
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(table->model()->index(0, 0)).center());
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(table->model()->index(0, 0)).center());
    QCOMPARE(child<QLineEdit>(window, "name")->text(), QStringLiteral("to reuse"));
    QVERIFY(window.isWindowModified());

    table->setFocus();
    answerNextQuestion(QMessageBox::No);
    QTest::keyClick(table, Qt::Key_Delete);
    QVERIFY(QDir(dir).exists());
    // The offscreen platform does not give the window back its focus after a dialog, as a desktop would.
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    table->setFocus();
    answerNextQuestion(QMessageBox::Yes);
    QTest::keyClick(table, Qt::Key_Delete);
    QVERIFY(!QDir(dir).exists());
    QCOMPARE(table->model()->rowCount(), 0);
    QCOMPARE(window.chart()->overlayCount(), 0);
}

void tst_MainWindow::deleteRunStaysInItsFolder_data()
{
    QTest::addColumn<bool>("link");
    QTest::newRow("run held by a CLI run") << false;
    QTest::newRow("run folder is a symlink") << true;
}

// Delete Run never deletes what a live process holds, nor follows a link out of the runs folder (issue 27).
void tst_MainWindow::deleteRunStaysInItsFolder()
{
    QFETCH(bool, link);
    const QString dir = fakeRun(QStringLiteral("guarded"), {0.5});
    const QString outside = m_home.filePath(QStringLiteral("outside-%1").arg(QFileInfo(m_runsDir).fileName()));
    int fd = -1;
    if (link) {
        QVERIFY(QDir().rename(dir, outside));
        QVERIFY(QFile::link(outside, dir));
    } else {
        fd = ::open(QFile::encodeName(dir).constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        QVERIFY(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0);
    }
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QCOMPARE(window.historyModel()->rowCount(), 1);
    window.history()->selectRow(0);
    auto *deleteRun = window.findChild<QAction *>(QStringLiteral("deleteRunAction"));
    QVERIFY(deleteRun->isEnabled());
    answerNextQuestion(QMessageBox::Yes);
    deleteRun->trigger();
    if (link) {
        QVERIFY(!QFileInfo(dir).isSymLink());
        QVERIFY(QFile::exists(outside + QStringLiteral("/metrics.csv")));
        QVERIFY(QFile::exists(outside + QStringLiteral("/summary.json")));
        QCOMPARE(window.historyModel()->rowCount(), 0);
    } else {
        QVERIFY(QFile::exists(dir + QStringLiteral("/metrics.csv")));
        QVERIFY2(window.lastError().contains(QStringLiteral("in use by a running or resuming process")),
                 qPrintable(window.lastError()));
        QCOMPARE(window.historyModel()->rowCount(), 1);
        ::close(fd);
    }
}

void tst_MainWindow::exportsChartAndMetrics()
{
    fakeRun(QStringLiteral("a,\"quoted\" run"), {0.3, 0.5});
    fakeRun(QStringLiteral("b"), {0.4});
    MainWindow window;
    window.show();
    window.history()->selectAll();
    QCOMPARE(window.chart()->overlayCount(), 2);

    const QString png = m_home.filePath(QStringLiteral("chart.png"));
    QVERIFY(window.exportChart(png));
    const QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() > 100 && image.height() > 100);
    const QString svg = m_home.filePath(QStringLiteral("chart.svg"));
    QVERIFY(window.exportChart(svg));
    QVERIFY(QFileInfo(svg).size() > 1000);

    const QString csv = m_home.filePath(QStringLiteral("metrics.csv"));
    QVERIFY(window.exportMetricsCsv(csv));
    QFile file(csv);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = file.readAll().split('\n');
    QCOMPARE(lines.first(), QByteArray("run,run_name,epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second,learning_rate,grad_norm,"
                                       "data_seconds,compute_seconds,allreduce_seconds,optimizer_seconds,other_seconds,ranks"));
    QCOMPARE(lines.size(), 1 + 3 + 1);   // header, three epochs, the final newline
    QVERIFY(file.fileName().endsWith("metrics.csv"));
    bool quoted = false;
    for (const QByteArray &line : lines)
        quoted |= line.contains(",\"a,\"\"quoted\"\" run\",2,");
    QVERIFY(quoted);

    QVERIFY(!window.exportChart(m_home.filePath(QStringLiteral("missing/chart.png"))));
    QVERIFY(window.lastError().contains(QLatin1String("missing/chart.png: cannot write")));
}

void tst_MainWindow::closingDuringARunExitsCleanly()
{
    auto *window = new MainWindow;
    window->setAttribute(Qt::WA_DeleteOnClose);
    QPointer<MainWindow> guard(window);
    window->show();
    enterShortExperiment(*window, 50, 400);
    QVERIFY(window->saveConfigTo(m_home.filePath(QStringLiteral("closing.json"))));
    QTest::mouseClick(child<QPushButton>(*window, "startButton"), Qt::LeftButton);
    auto *bar = child<QProgressBar>(*window, "batchProgress");
    QTRY_VERIFY_WITH_TIMEOUT(bar->value() >= 1, 60000);

    answerNextQuestion(QMessageBox::No);
    window->close();
    QTest::qWait(300);
    QVERIFY(guard && window->isVisible() && window->isRunning());

    answerNextQuestion(QMessageBox::Yes);
    window->close();
    QTRY_VERIFY_WITH_TIMEOUT(guard.isNull(), 20000);
    const auto runs = trainlab::listRuns(m_runsDir.toStdString());
    QCOMPARE(runs.size(), std::size_t(1));
    QCOMPARE(runs.front().status, std::string("stopped"));
}

void tst_MainWindow::destroyingDuringARunDoesNotHang()
{
    // As at process exit: no event loop turns while the window waits for its training thread.
    auto *window = new MainWindow;
    window->show();
    enterShortExperiment(*window, 50, 400);
    QTest::mouseClick(child<QPushButton>(*window, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(child<QProgressBar>(*window, "batchProgress")->value() >= 1, 60000);
    QElapsedTimer clock;
    clock.start();
    delete window;
    qInfo("window destroyed %lld ms into its run", static_cast<long long>(clock.elapsed()));
    QVERIFY(clock.elapsed() < 10000);
    const auto runs = trainlab::listRuns(m_runsDir.toStdString());
    QCOMPARE(runs.size(), std::size_t(1));
    QCOMPARE(runs.front().status, std::string("stopped"));
}

void tst_MainWindow::settingsRememberRecentFilesAndRunsFolder()
{
    const QString path = m_home.filePath(QStringLiteral("recent.json"));
    const QString chosen = m_home.filePath(QStringLiteral("chosen-runs"));
    {
        MainWindow window;
        window.show();
        QVERIFY(window.saveConfigTo(path));
        window.setRunsDir(chosen);
        QVERIFY(!window.form()->advancedOpen());
        window.form()->setAdvancedOpen(true);
        QCOMPARE(window.history()->horizontalHeader()->sortIndicatorSection(), -1);
        window.history()->sortByColumn(trainlab::RunHistoryModel::BestAcc, Qt::DescendingOrder);
        window.history()->setColumnHidden(trainlab::RunHistoryModel::Devices, true);
        QHeaderView *header = window.history()->horizontalHeader();
        header->moveSection(header->visualIndex(trainlab::RunHistoryModel::Notes), 1);
        QVERIFY(window.close());
    }
    {
        MainWindow window;
        QVERIFY(window.form()->advancedOpen());   // the form's Advanced section opens as it was left
        QCOMPARE(window.history()->horizontalHeader()->sortIndicatorSection(), int(trainlab::RunHistoryModel::BestAcc));
        QCOMPARE(window.history()->horizontalHeader()->sortIndicatorOrder(), Qt::DescendingOrder);
        QVERIFY(window.history()->isColumnHidden(trainlab::RunHistoryModel::Devices));   // the columns as they were left
        QCOMPARE(window.history()->horizontalHeader()->visualIndex(trainlab::RunHistoryModel::Notes), 1);
        QCOMPARE(window.runsDir(), chosen);
        QCOMPARE(window.historyModel()->runsDir(), chosen);
        bool listed = false;
        for (QAction *action : window.findChildren<QAction *>())
            listed |= action->text() == QDir::toNativeSeparators(path);
        QVERIFY(listed);
        // --runs-dir lasts one session and does not replace the remembered folder.
        window.setRunsDir(m_home.filePath(QStringLiteral("one-session")), false);
        QVERIFY(window.close());
    }
    MainWindow window;
    QCOMPARE(window.runsDir(), chosen);
}

// The range test and the runs take turns on the devices: while the test trains nothing starts, a queue started
// meanwhile starts its run once the test ends, and while the queue goes the test waits.
void tst_MainWindow::rangeTestHoldsTheDevices()
{
    MainWindow window;
    window.show();
    enterShortExperiment(window, 1, 40);
    auto *start = child<QPushButton>(window, "startButton");
    QPointer<LrFinderDialog> idle = window.openLrFinder();
    QVERIFY(idle);
    // An idle dialog gives way to one with the form as it is now; one whose test trains comes back.
    retype(child<QSpinBox>(window, "batchSize"), QStringLiteral("10"));
    LrFinderDialog *finder = window.openLrFinder();
    QVERIFY(finder && finder != idle);
    QTRY_VERIFY(!idle);
    finder->start();
    QVERIFY(finder->isRunning() && window.isRangeTestRunning());
    QCOMPARE(window.openLrFinder(), finder);
    QVERIFY(!start->isEnabled());
    window.startRun();
    QVERIFY(!window.isRunning());
    QSignalSpy ended(&window, &MainWindow::runEnded);
    window.queuePanel()->addExperiment(window.form()->config());
    window.queuePanel()->startQueue();
    QVERIFY(!window.isRunning());
    finder->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!finder->isRunning(), 30000);
    QTRY_VERIFY_WITH_TIMEOUT(window.isRunning(), 10000);
    finder->start();
    QVERIFY(!finder->isRunning());
    QVERIFY2(finder->statusText().contains(QLatin1String("A run trains on these devices: stop it first.")), qPrintable(finder->statusText()));
    QTRY_COMPARE_WITH_TIMEOUT(ended.size(), 1, 120000);
    QCOMPARE(ended.first().first().value<trainlab::RunResult>().status, trainlab::RunStatus::Completed);
    QVERIFY(start->isEnabled());
    finder->close();
}

// On a 1280-pixel screen the form keeps to its column and the chart has most of the width.
void tst_MainWindow::chartHasMostOfTheWidth()
{
    MainWindow window;
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const int form = window.form()->width(), chart = window.chart()->width();
    qInfo("form %d px, chart %d px of %d", form, chart, window.width());
    QVERIFY2(chart >= window.width() / 2, qPrintable(QStringLiteral("chart %1 px, form %2 px").arg(chart).arg(form)));
}

// Opened, Advanced's previews make the form wider than collapsed: the panel follows, so no field is cut off.
void tst_MainWindow::advancedFormNeverClipped()
{
    MainWindow window;
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QWidget *viewport = window.form()->parentWidget();
    const int collapsed = window.form()->minimumSizeHint().width();
    window.form()->setAdvancedOpen(true);
    QVERIFY(window.form()->minimumSizeHint().width() > collapsed);
    QTRY_VERIFY2(viewport->width() >= window.form()->minimumSizeHint().width(),
                 qPrintable(QStringLiteral("%1 px shown of %2").arg(viewport->width()).arg(window.form()->minimumSizeHint().width())));
    QVERIFY(window.chart()->width() >= window.width() / 3);
    window.form()->setAdvancedOpen(false);
    QTRY_VERIFY(window.chart()->width() >= window.width() / 2);
}

QTEST_MAIN(tst_MainWindow)
#include "tst_mainwindow.moc"
