#include "core/data/datasetstore.h"
#include "core/data/idx.h"
#include "core/util/sha256.h"

#include <QDir>
#include <QTemporaryDir>
#include <QTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

const char *const kFiles[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                              "t10k-labels-idx1-ubyte.gz"};

// Sets or clears an environment variable for one scope.
class EnvGuard
{
public:
    EnvGuard(const char *name, const char *value) : m_name(name)
    {
        if (const char *old = std::getenv(name)) {
            m_had = true;
            m_old = old;
        }
        if (value)
            qputenv(name, value);
        else
            qunsetenv(name);
    }
    ~EnvGuard()
    {
        if (m_had)
            qputenv(m_name, m_old.c_str());
        else
            qunsetenv(m_name);
    }

private:
    const char *m_name;
    bool m_had = false;
    std::string m_old;
};

std::string sampleCopy(const QTemporaryDir &tmp, const char *name)
{
    const fs::path dir = tmp.filePath(QString::fromLatin1(name)).toStdString();
    fs::create_directories(dir);
    for (const char *f : kFiles)
        fs::copy_file(fs::path(trainlab::builtinSampleDir()) / f, dir / f, fs::copy_options::overwrite_existing);
    return dir.string();
}

bool anyContains(const std::vector<std::string> &lines, const std::string &text)
{
    for (const auto &l : lines)
        if (l.find(text) != std::string::npos)
            return true;
    return false;
}

} // namespace

class tst_DatasetStore : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void managedDir_data();
    void managedDir();
    void resolve_data();
    void resolve();
    void missingHint();
    void manifest();
    void sampleIsCustom();
    void officialWhenManifestMatches();
    void broken_data();
    void broken();

private:
    QTemporaryDir m_tmp;
};

void tst_DatasetStore::managedDir_data()
{
    QTest::addColumn<QString>("dataDir");
    QTest::addColumn<QString>("xdg");
    QTest::addColumn<QString>("home");
    QTest::addColumn<QString>("expected");
    QTest::newRow("TRAINLAB_DATA_DIR wins") << "/d/data" << "/x" << "/h" << "/d/data";
    QTest::newRow("XDG_DATA_HOME") << "" << "/x" << "/h" << "/x/TrainLab/datasets/fashion-mnist";
    QTest::newRow("HOME") << "" << "" << "/h" << "/h/.local/share/TrainLab/datasets/fashion-mnist";
    QTest::newRow("earlier folder still found") << "" << "@TMP@" << "/h" << "@TMP@/trainlab/datasets/fashion-mnist";
}

void tst_DatasetStore::managedDir()
{
    QFETCH(QString, dataDir);
    QFETCH(QString, xdg);
    QFETCH(QString, home);
    QFETCH(QString, expected);
    if (xdg == QLatin1String("@TMP@")) {
        xdg = m_tmp.filePath(QStringLiteral("xdg-earlier"));
        expected.replace(QStringLiteral("@TMP@"), xdg);
        QVERIFY(QDir().mkpath(expected));
    }
    // An empty value counts as unset.
    EnvGuard a("TRAINLAB_DATA_DIR", dataDir.toUtf8().constData());
    EnvGuard b("XDG_DATA_HOME", xdg.toUtf8().constData());
    EnvGuard c("HOME", home.toUtf8().constData());
    QCOMPARE(QString::fromStdString(trainlab::managedDatasetDir()), expected);
}

void tst_DatasetStore::resolve_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("expected");
    QTest::newRow("builtin") << "builtin:sample" << QString::fromStdString(trainlab::builtinSampleDir());
    QTest::newRow("managed") << "fashion-mnist" << "/managed/here";
    QTest::newRow("folder") << "/some/folder" << "/some/folder";
    QTest::newRow("relative folder") << "data/fmnist" << "data/fmnist";
}

void tst_DatasetStore::resolve()
{
    QFETCH(QString, path);
    QFETCH(QString, expected);
    EnvGuard env("TRAINLAB_DATA_DIR", "/managed/here");
    QCOMPARE(QString::fromStdString(trainlab::resolveDatasetPath(path.toStdString())), expected);
}

void tst_DatasetStore::missingHint()
{
    const std::string empty = m_tmp.filePath(QStringLiteral("empty-managed")).toStdString();
    fs::create_directories(empty);
    {
        EnvGuard env("TRAINLAB_DATA_DIR", empty.c_str());
        const std::string hint = trainlab::datasetMissingHint("fashion-mnist");
        QVERIFY2(hint.find("not downloaded yet") != std::string::npos, hint.c_str());
        QVERIFY2(hint.find(empty) != std::string::npos, hint.c_str());
        QVERIFY2(hint.find("trainlab-cli dataset download") != std::string::npos, hint.c_str());
        QCOMPARE(trainlab::datasetMissingHint("builtin:sample"), std::string());
        QCOMPARE(trainlab::datasetMissingHint("/elsewhere"), std::string());
    }
    const std::string full = sampleCopy(m_tmp, "full-managed");
    EnvGuard env("TRAINLAB_DATA_DIR", full.c_str());
    QCOMPARE(trainlab::datasetMissingHint("fashion-mnist"), std::string());
}

void tst_DatasetStore::manifest()
{
    const auto m = trainlab::fashionMnistManifest();
    QCOMPARE(m.files.size(), std::size_t(4));
    QCOMPARE(m.files[0].name, std::string("train-images-idx3-ubyte.gz"));
    QCOMPARE(m.files[0].size, std::uint64_t(26421880));
    QCOMPARE(m.files[0].sha256, std::string("3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"));
    QCOMPARE(m.files[3].size, std::uint64_t(5148));
    QCOMPARE(m.mirrors.size(), std::size_t(2));
    QCOMPARE(m.mirrors[0], std::string("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"));
}

void tst_DatasetStore::sampleIsCustom()
{
    const std::string dir = trainlab::builtinSampleDir();
    const auto v = trainlab::verifyDataset(dir);
    QVERIFY2(v.valid, v.message.c_str());
    QVERIFY(v.present);
    QVERIFY(!v.official);
    QVERIFY(v.problems.empty());
    QCOMPARE(v.trainCount, std::int64_t(2000));
    QCOMPARE(v.testCount, std::int64_t(500));
    QCOMPARE(v.message, dir + ": custom IDX data, 2,000 train / 500 test");
}

void tst_DatasetStore::officialWhenManifestMatches()
{
    const std::string dir = trainlab::builtinSampleDir();
    trainlab::DatasetManifest m;
    for (const char *f : kFiles) {
        const std::string path = dir + "/" + f;
        m.files.push_back({f, static_cast<std::uint64_t>(fs::file_size(path)), trainlab::sha256File(path)});
    }
    auto v = trainlab::verifyDataset(dir, m);
    QVERIFY2(v.official, v.message.c_str());
    QCOMPARE(v.message, dir + ": official Fashion-MNIST, 2,000 train / 500 test");
    // One digest off and the data is custom again.
    m.files[2].sha256[0] = m.files[2].sha256[0] == '0' ? '1' : '0';
    v = trainlab::verifyDataset(dir, m);
    QVERIFY(v.valid);
    QVERIFY(!v.official);
}

void tst_DatasetStore::broken_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<bool>("present");
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("problem");
    QTest::newRow("empty folder") << "empty" << false << "train-images-idx3-ubyte" << "missing: train-images-idx3-ubyte[.gz]";
    QTest::newRow("no folder") << "none" << false << "" << "no such folder";
    QTest::newRow("truncated gz") << "truncated" << true << "train-images-idx3-ubyte.gz" << "truncated gzip data";
    QTest::newRow("foreign file") << "foreign" << true << "t10k-labels-idx1-ubyte" << "wrong magic number";
    QTest::newRow("label out of range") << "label" << true << "t10k-labels-idx1-ubyte" << "label 12 at index 3 is not below 10";
    QTest::newRow("counts differ") << "counts" << true << "t10k-labels-idx1-ubyte" << "3 labels for 500 images";
}

void tst_DatasetStore::broken()
{
    QFETCH(QString, kind);
    QFETCH(bool, present);
    QFETCH(QString, file);
    QFETCH(QString, problem);
    std::string dir = m_tmp.filePath(kind).toStdString();
    if (kind == QLatin1String("empty")) {
        fs::create_directories(dir);
    } else if (kind != QLatin1String("none")) {
        dir = sampleCopy(m_tmp, kind.toLatin1().constData());
        if (kind == QLatin1String("truncated")) {
            fs::resize_file(dir + "/train-images-idx3-ubyte.gz", fs::file_size(dir + "/train-images-idx3-ubyte.gz") / 2);
        } else {
            // A raw file named like the labels; findDatasetFiles prefers .gz, so that one goes.
            fs::remove(dir + "/t10k-labels-idx1-ubyte.gz");
            std::string bytes;
            if (kind == QLatin1String("foreign"))
                bytes = "this is not an IDX file at all, just some text";
            else if (kind == QLatin1String("label"))
                bytes = std::string("\0\0\x08\x01\0\0\x01\xf4", 8) + std::string(500, '\x01');
            else
                bytes = std::string("\0\0\x08\x01\0\0\0\x03", 8) + std::string(3, '\x01');
            if (kind == QLatin1String("label"))
                bytes[8 + 3] = 12;
            std::ofstream(dir + "/t10k-labels-idx1-ubyte", std::ios::binary) << bytes;
        }
    }
    const auto v = trainlab::verifyDataset(dir);
    QCOMPARE(v.present, present);
    QVERIFY(!v.valid);
    QVERIFY(!v.official);
    QVERIFY2(anyContains(v.problems, problem.toStdString()), v.message.c_str());
    if (!file.isEmpty()) {
        bool named = false;
        for (const auto &p : v.problems)
            named = named || (p.find(file.toStdString()) != std::string::npos && p.find(problem.toStdString()) != std::string::npos);
        QVERIFY2(named, v.message.c_str());
    }
    QVERIFY2(v.message.rfind(dir + ": ", 0) == 0, v.message.c_str());
    QVERIFY2(v.message.find(problem.toStdString()) != std::string::npos, v.message.c_str());
}

QTEST_GUILESS_MAIN(tst_DatasetStore)
#include "tst_datasetstore.moc"
