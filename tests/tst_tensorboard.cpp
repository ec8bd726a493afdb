#include "core/config.h"
#include "core/runs/runrecord.h"
#include "core/runs/tensorboard.h"
#include "testutil.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using trainlab::EpochMetrics;
using trainlab::ExperimentConfig;
using trainlab::RunRecord;

namespace {

EpochMetrics epoch(int n, double testAcc)
{
    EpochMetrics m;
    m.epoch = n;
    m.trainLoss = 2.0 / n;
    m.trainAcc = 0.25 * n;
    m.testAcc = testAcc;
    m.seconds = 1.5;
    m.imagesPerSecond = 1000.0;
    m.learningRate = 0.125;
    return m;
}

std::vector<std::string> eventFiles(const std::string &runDir)
{
    std::vector<std::string> files;
    for (const auto &e : fs::directory_iterator(runDir + "/tb"))
        files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

// The steps of the scalar events of a run's one events file, in file order.
std::vector<std::int64_t> scalarSteps(const std::string &runDir)
{
    const auto files = eventFiles(runDir);
    if (files.size() != 1)
        return {-static_cast<std::int64_t>(files.size())};
    std::vector<std::int64_t> steps;
    for (const std::string &e : trainlab::readTfRecords(files.front())) {
        if (const auto s = trainlab::eventStep(e); s > 0)
            steps.push_back(s);
    }
    return steps;
}

} // namespace

class tst_TensorBoard : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void crc32cCheckValues_data();
    void crc32cCheckValues();
    void pythonReadsTheFiles();
    void resumeRepeatsNoStep();
    void tornRecordFilledFromTheRecord();
    void switchedOff();
    void blockedFolderIsOnlyAWarning();
    void gradNormOnlyWhereMeasured();

private:
    std::string makeRun(const ExperimentConfig &config, int epochs, const char *status = nullptr);
    QTemporaryDir m_dir;
};

std::string tst_TensorBoard::makeRun(const ExperimentConfig &config, int epochs, const char *status)
{
    RunRecord record(m_dir.filePath(QString::fromLatin1(QTest::currentTestFunction())).toStdString(), config, {"cpu"});
    // A weight histogram with each epoch: values from -1 to 2, four up to 0.5, two above.
    const trainlab::TbHistogram weights{"weights/fc.weight", -1.0, 2.0, 6.0, 1.5, 7.25, {0.5, 2.0}, {4.0, 2.0}};
    for (int e = 1; e <= epochs; ++e)
        record.commitEpoch(epoch(e, 0.25 * e), {}, {weights});
    if (status) {
        trainlab::RunResult r;
        r.status = std::string(status) == "completed" ? trainlab::RunStatus::Completed : trainlab::RunStatus::Failed;
        record.finish(r);
    }
    return record.dir();
}

void tst_TensorBoard::crc32cCheckValues_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<quint32>("crc");
    // The CRC catalogue's check value and RFC 3720's (iSCSI) test vectors: CRC-32C, not zlib's CRC-32.
    QTest::newRow("123456789") << QByteArray("123456789") << quint32(0xE3069283);
    QTest::newRow("32 zeros") << QByteArray(32, '\0') << quint32(0x8A9136AA);
    QTest::newRow("32 x ff") << QByteArray(32, '\xff') << quint32(0x62A8AB43);
    QTest::newRow("empty") << QByteArray() << quint32(0);
}

void tst_TensorBoard::crc32cCheckValues()
{
    QFETCH(QByteArray, bytes);
    QFETCH(quint32, crc);
    QCOMPARE(trainlab::crc32c(bytes.toStdString()), crc);
}

// An independent reader (Debian's python3-protobuf and python3-crc32c, TensorBoard's field numbers) reads what a run
// wrote, and refuses the file with one byte flipped.
void tst_TensorBoard::pythonReadsTheFiles()
{
    SKIP_WITHOUT_SYSTEM_PYTHON("crc32c, google.protobuf", "TRAINLAB_TENSORBOARD_REQUIRED", "python3-crc32c, python3-protobuf");
    ExperimentConfig config;
    config.batchSize = 96;
    config.momentum = 0.9;
    config.nesterov = true;
    config.schedule.kind = "cosine";
    config.augmentation.flip = true;
    const std::string dir = makeRun(config, 2, "completed");
    const auto files = eventFiles(dir);
    QCOMPARE(files.size(), size_t(1));
    QVERIFY(QString::fromStdString(files.front()).contains(QLatin1String("/tb/events.out.tfevents.")));
    auto read = [](const std::string &file, QString *err) {
        QProcess p;
        p.start(QStringLiteral("/usr/bin/python3"), {QStringLiteral(TRAINLAB_SOURCE_DIR "/tests/tensorboard_reader.py"),
                                                     QString::fromStdString(file)});
        p.waitForFinished(60000);
        *err = QString::fromUtf8(p.readAllStandardError());
        return std::make_pair(p.exitCode(), QJsonDocument::fromJson(p.readAllStandardOutput()).object());
    };
    QString err;
    const auto [code, out] = read(files.front(), &err);
    QVERIFY2(code == 0, qPrintable(err));
    QCOMPARE(out[QStringLiteral("file_version")].toArray(), QJsonArray{QStringLiteral("brain.Event:2")});
    const QJsonObject scalars = out[QStringLiteral("scalars")].toObject();
    QCOMPARE(scalars[QStringLiteral("test/accuracy")].toArray(), (QJsonArray{QJsonArray{1, 0.25}, QJsonArray{2, 0.5}}));
    QCOMPARE(scalars[QStringLiteral("train/loss")].toArray(), (QJsonArray{QJsonArray{1, 2.0}, QJsonArray{2, 1.0}}));
    QCOMPARE(scalars[QStringLiteral("learning_rate")].toArray().size(), 2);
    QCOMPARE(scalars[QStringLiteral("speed/images_per_second")].toArray().at(1).toArray().at(1).toDouble(), 1000.0);
    // TensorBoard's HistogramProto, in the same event as the epoch's scalars.
    const QJsonArray histograms = out[QStringLiteral("histograms")].toObject()[QStringLiteral("weights/fc.weight")].toArray();
    QCOMPARE(histograms.size(), 2);
    QCOMPARE(histograms.at(1).toArray(), (QJsonArray{2, -1.0, 2.0, 6.0, 1.5, 7.25, QJsonArray{0.5, 2.0}, QJsonArray{4.0, 2.0}}));
    QCOMPARE(out[QStringLiteral("steps")].toArray().toVariantList().count(2), 1);
    const QJsonObject hparams = out[QStringLiteral("hparams")].toObject();
    QCOMPARE(hparams[QStringLiteral("batch_size")].toDouble(), 96.0);
    QCOMPARE(hparams[QStringLiteral("nesterov")].toBool(), true);
    QCOMPARE(hparams[QStringLiteral("schedule")].toString(), QStringLiteral("cosine"));
    QCOMPARE(hparams[QStringLiteral("augmentation")].toString(), QStringLiteral("flip"));
    QCOMPARE(hparams[QStringLiteral("devices")].toString(), QStringLiteral("cpu"));
    QCOMPARE(out[QStringLiteral("session_end")].toArray(), QJsonArray{1});   // STATUS_SUCCESS

    // One byte flipped inside the second record: both readers name it.
    std::string bytes;
    {
        std::ifstream in(files.front(), std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::size_t second = 16 + trainlab::readTfRecords(files.front()).front().size();
    bytes[second + 14] = static_cast<char>(bytes[second + 14] ^ 0x20);
    const std::string flipped = m_dir.filePath(QStringLiteral("flipped.tfevents")).toStdString();
    std::ofstream(flipped, std::ios::binary) << bytes;
    const auto [badCode, badOut] = read(flipped, &err);
    QCOMPARE(badCode, 1);
    QVERIFY2(err.contains(QStringLiteral("record at byte %1: data CRC mismatch").arg(second)), qPrintable(err));
    try {
        trainlab::readTfRecords(flipped);
        QFAIL("a flipped byte was read");
    } catch (const std::runtime_error &e) {
        QVERIFY2(std::string(e.what()).find("record at byte " + std::to_string(second) + ": the data's CRC does not match")
                     != std::string::npos, e.what());
    }
}

// Killed after epoch 3's events but resumed from epoch 2's checkpoint: the new file holds epochs 1 and 2 once, then
// the rerun epoch 3, and the old file is gone.
void tst_TensorBoard::resumeRepeatsNoStep()
{
    const ExperimentConfig config;
    const std::string dir = makeRun(config, 3);
    QCOMPARE(scalarSteps(dir), (std::vector<std::int64_t>{1, 2, 3}));
    const std::string before = eventFiles(dir).front();
    QTest::qWait(1100);   // the new file's name has a later second
    {
        auto record = RunRecord::reopen(dir, config, {epoch(1, 0.25), epoch(2, 0.5)}, 2);
        QVERIFY(record->takeWarning().empty());
        QCOMPARE(scalarSteps(dir), (std::vector<std::int64_t>{1, 2}));
        record->commitEpoch(epoch(3, 0.875), {});
    }
    QCOMPARE(scalarSteps(dir), (std::vector<std::int64_t>{1, 2, 3}));
    QVERIFY(eventFiles(dir).front() != before);
}

// A crash tore the last record: the records before it are kept, the epochs after come from metrics.
void tst_TensorBoard::tornRecordFilledFromTheRecord()
{
    const ExperimentConfig config;
    const std::string dir = makeRun(config, 3);
    const std::string file = eventFiles(dir).front();
    fs::resize_file(file, fs::file_size(file) - 5);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, trainlab::readTfRecords(file));
    QCOMPARE(trainlab::readTfRecords(file, true).size(), size_t(4));   // file version, session start, epochs 1 and 2
    {
        auto record = RunRecord::reopen(dir, config, {epoch(1, 0.25), epoch(2, 0.5), epoch(3, 0.75)}, 3);
    }
    QCOMPARE(scalarSteps(dir), (std::vector<std::int64_t>{1, 2, 3}));
}

void tst_TensorBoard::switchedOff()
{
    ExperimentConfig config;
    config.tensorboard = false;
    const std::string dir = makeRun(config, 1, "completed");
    QVERIFY(!fs::exists(dir + "/tb"));
}

// A file where the tb folder goes: the run goes on, and says once why there are no TensorBoard files.
void tst_TensorBoard::blockedFolderIsOnlyAWarning()
{
    const ExperimentConfig config;
    const std::string dir = makeRun(config, 1);
    fs::remove_all(dir + "/tb");
    std::ofstream(dir + "/tb") << "not a folder";
    auto record = RunRecord::reopen(dir, config, {epoch(1, 0.25)}, 1);
    const std::string warning = record->takeWarning();
    QVERIFY2(warning.find("TensorBoard files no longer written: " + dir + "/tb: ") == 0, warning.c_str());
    record->commitEpoch(epoch(2, 0.5), {});
    QVERIFY(record->takeWarning().empty());
    QCOMPARE(trainlab::readMetrics(dir).size(), size_t(2));
}

// The epoch's mean gradient norm is a scalar of its own; an epoch without one (0: recorded before it was measured) has none.
void tst_TensorBoard::gradNormOnlyWhereMeasured()
{
    trainlab::EpochMetrics m = epoch(1, 0.5);
    const auto tags = [](const std::vector<trainlab::TbScalar> &scalars) {
        QStringList out;
        for (const auto &s : scalars)
            out << QString::fromStdString(s.tag);
        return out;
    };
    QVERIFY(!tags(trainlab::tbEpochScalars(m)).contains(QStringLiteral("train/grad_norm")));
    m.gradNorm = 3.5;
    const auto scalars = trainlab::tbEpochScalars(m);
    const auto at = tags(scalars).indexOf(QStringLiteral("train/grad_norm"));
    QVERIFY(at >= 0);
    QCOMPARE(scalars[static_cast<std::size_t>(at)].value, 3.5);
}

QTEST_GUILESS_MAIN(tst_TensorBoard)
#include "tst_tensorboard.moc"
