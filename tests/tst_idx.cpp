#include "core/data/augment.h"
#include "core/data/dataset.h"
#include "core/data/idx.h"

#include <torch/torch.h>
#include <zlib.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>

using trainlab::DataError;

namespace {

std::string header(std::uint32_t magic, std::vector<std::uint32_t> dims)
{
    std::string out;
    auto put = [&](std::uint32_t v) {
        for (int s = 24; s >= 0; s -= 8)
            out += static_cast<char>((v >> s) & 0xff);
    };
    put(magic);
    for (auto d : dims)
        put(d);
    return out;
}

void writeRaw(const std::string &path, const std::string &data)
{
    std::ofstream(path, std::ios::binary) << data;
}

void writeGz(const std::string &path, const std::string &data)
{
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
    gzclose(f);
}

std::string images(std::uint32_t n, std::uint32_t rows = 28, std::uint32_t cols = 28)
{
    std::string pixels(n * rows * cols, '\0');
    for (std::size_t i = 0; i < pixels.size(); ++i)
        pixels[i] = static_cast<char>(i % 251);
    return header(2051, {n, rows, cols}) + pixels;
}

std::string labels(std::uint32_t n, int classes = 10)
{
    std::string body;
    for (std::uint32_t i = 0; i < n; ++i)
        body += static_cast<char>(i % classes);
    return header(2049, {n}) + body;
}

} // namespace

class tst_Idx : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void readsGood_data();
    void readsGood();
    void rejects_data();
    void rejects();
    void loadDataChecksPairs();
    void builtinSample();
    void balancedSubset();
    void permutation();
    void augmentationDraws();
    void augmentationPixels_data();
    void augmentationPixels();
    void inspect();
    void notRegularFiles_data();
    void notRegularFiles();
    void gzipBombStopsEarly();
    void trailingBytesAfterTheGzipStream_data();
    void trailingBytesAfterTheGzipStream();

private:
    QTemporaryDir m_dir;
    std::string path(const char *name) { return m_dir.filePath(name).toStdString(); }
};

void tst_Idx::readsGood_data()
{
    QTest::addColumn<bool>("gzip");
    QTest::newRow("raw") << false;
    QTest::newRow("gzip") << true;
}

void tst_Idx::readsGood()
{
    QFETCH(bool, gzip);
    const std::string file = path(gzip ? "good.gz" : "good");
    (gzip ? writeGz : writeRaw)(file, images(3, 4, 5));
    const auto img = trainlab::readIdxImages(file);
    QCOMPARE(img.count, std::int64_t(3));
    QCOMPARE(img.rows, std::int64_t(4));
    QCOMPARE(img.cols, std::int64_t(5));
    QCOMPARE(img.pixels.size(), size_t(60));
    QCOMPARE(int(img.pixels[59]), 59);
    const std::string lab = path(gzip ? "lab.gz" : "lab");
    (gzip ? writeGz : writeRaw)(lab, labels(7));
    const auto l = trainlab::readIdxLabels(lab);
    QCOMPARE(l.size(), size_t(7));
    QCOMPARE(int(l[6]), 6);
}

void tst_Idx::rejects_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<bool>("gzip");
    QTest::addColumn<bool>("isImages");
    QTest::addColumn<QString>("message");
    const std::string good = images(4);
    QTest::newRow("truncated") << QByteArray::fromStdString(good.substr(0, good.size() - 10)) << false << true << "truncated";
    QTest::newRow("truncated gz") << QByteArray::fromStdString(good.substr(0, good.size() - 100)) << true << true << "truncated";
    QTest::newRow("extra bytes") << QByteArray::fromStdString(good + "xx") << false << true << "2 bytes more than its header says";
    QTest::newRow("wrong magic") << QByteArray::fromStdString(labels(4)) << false << true << "wrong magic number 2049, expected 2051";
    QTest::newRow("labels magic") << QByteArray::fromStdString(good) << false << false << "wrong magic number 2051, expected 2049";
    QTest::newRow("short header") << QByteArray("\0\0\x08", 3) << false << true << "too short for an IDX header";
    QTest::newRow("zero size") << QByteArray::fromStdString(header(2051, {1, 0, 28})) << false << true << "bad image size";
    QByteArray corrupt("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-not-deflate-data", 34);
    QTest::newRow("corrupt gzip") << corrupt << false << true << "corrupt gzip data";
    QTest::newRow("extra gz data") << QByteArray::fromStdString(good + std::string(1000, 'x')) << true << true
                                   << "more data than its header says (3136 bytes)";
    QTest::newRow("too large images") << QByteArray::fromStdString(header(2051, {1, 600, 600})) << false << true
                                      << "images of 600x600 pixels are larger than TrainLab's ResNet-18 trains (at most 512x512)";
    QTest::newRow("beyond memory") << QByteArray::fromStdString(header(2051, {4000000000u, 512, 512})) << false << true
                                   << "MB of memory to load, more than half of this machine's";
}

void tst_Idx::rejects()
{
    QFETCH(QByteArray, content);
    QFETCH(bool, gzip);
    QFETCH(bool, isImages);
    QFETCH(QString, message);
    const std::string file = path("bad.idx");
    (gzip ? writeGz : writeRaw)(file, content.toStdString());
    try {
        if (isImages)
            trainlab::readIdxImages(file);
        else
            trainlab::readIdxLabels(file);
        QFAIL("expected DataError");
    } catch (const DataError &e) {
        const std::string what = e.what();
        QVERIFY2(what.rfind(file + ": ", 0) == 0, what.c_str());
        QVERIFY2(what.find(message.toStdString()) != std::string::npos, what.c_str());
    }
}

void tst_Idx::loadDataChecksPairs()
{
    QTemporaryDir dir;
    auto at = [&](const char *n) { return dir.filePath(n).toStdString(); };
    writeGz(at("train-images-idx3-ubyte.gz"), images(20));
    writeGz(at("train-labels-idx1-ubyte.gz"), labels(19));
    writeRaw(at("t10k-images-idx3-ubyte"), images(10));
    writeRaw(at("t10k-labels-idx1-ubyte"), labels(10));
    trainlab::DatasetConfig config;
    config.path = dir.path().toStdString();
    QVERIFY_THROWS_EXCEPTION(DataError, trainlab::loadData(config, 10));
    try {
        trainlab::loadData(config, 10);
    } catch (const DataError &e) {
        QVERIFY2(std::string(e.what()).find("holds 19 labels but") != std::string::npos, e.what());
    }
    writeGz(at("train-labels-idx1-ubyte.gz"), labels(20, 12));
    try {
        trainlab::loadData(config, 10);
        QFAIL("expected DataError");
    } catch (const DataError &e) {
        QVERIFY2(std::string(e.what()).find("label 10 at index 10 is not below num_classes 10") != std::string::npos, e.what());
    }
    writeGz(at("train-labels-idx1-ubyte.gz"), labels(20));
    const auto data = trainlab::loadData(config, 10);
    QCOMPARE(data.train.size(), std::int64_t(20));
    QCOMPARE(data.test.size(), std::int64_t(10));
    QCOMPARE(data.train.images.scalar_type(), torch::kUInt8);
    std::remove(at("t10k-labels-idx1-ubyte").c_str());
    try {
        trainlab::loadData(config, 10);
        QFAIL("expected DataError");
    } catch (const DataError &e) {
        QVERIFY2(std::string(e.what()).find("missing t10k-labels-idx1-ubyte") != std::string::npos, e.what());
    }
}

void tst_Idx::builtinSample()
{
    trainlab::DatasetConfig config;
    const auto data = trainlab::loadData(config, 10);
    QCOMPARE(data.train.size(), std::int64_t(2000));
    QCOMPARE(data.test.size(), std::int64_t(500));
    const auto counts = torch::bincount(data.train.labels, {}, 10);
    QVERIFY(torch::all(counts == 200).item<bool>());
    const auto x = trainlab::toInput(data.train.images.slice(0, 0, 8));
    QCOMPARE(x.sizes().vec(), (std::vector<std::int64_t>{8, 1, 28, 28}));
    QVERIFY(x.min().item<float>() >= 0.0f);
    QVERIFY(x.max().item<float>() <= 1.0f);
    QVERIFY(x.max().item<float>() > 0.5f);
}

void tst_Idx::balancedSubset()
{
    trainlab::DatasetConfig config;
    config.trainLimit = 105;
    config.testLimit = 30;
    const auto data = trainlab::loadData(config, 10);
    QCOMPARE(data.train.size(), std::int64_t(105));
    const auto counts = torch::bincount(data.train.labels, {}, 10);
    QCOMPARE(counts.max().item<std::int64_t>() - counts.min().item<std::int64_t>(), std::int64_t(1));
    const auto again = trainlab::loadData(config, 10);
    QVERIFY(torch::equal(data.train.images, again.train.images));
}

void tst_Idx::permutation()
{
    const auto a = trainlab::epochPermutation(1000, 7, 1);
    QCOMPARE(a, trainlab::epochPermutation(1000, 7, 1));
    QVERIFY(a != trainlab::epochPermutation(1000, 7, 2));
    QVERIFY(a != trainlab::epochPermutation(1000, 8, 1));
    auto sorted = a;
    std::sort(sorted.begin(), sorted.end());
    for (std::int64_t i = 0; i < 1000; ++i)
        QCOMPARE(sorted[static_cast<size_t>(i)], i);
}

// The draws repeat for (seed, step), change with either, stay in bounds and come at the configured rates.
void tst_Idx::augmentationDraws()
{
    trainlab::AugmentationConfig config;
    QVERIFY(trainlab::drawAugmentation(config, 1, 0, 64, 28, 28).empty());
    config.flip = true;
    config.cropPadding = 4;
    config.erasing = 0.25;
    const auto a = trainlab::drawAugmentation(config, 7, 12, 4000, 28, 28);
    QCOMPARE(a.size(), size_t(4000));
    const auto same = [](const std::vector<trainlab::AugmentDraw> &x, const std::vector<trainlab::AugmentDraw> &y) {
        return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const auto &p, const auto &q) {
            return p.dy == q.dy && p.dx == q.dx && p.flip == q.flip && p.eraseTop == q.eraseTop
                   && p.eraseBottom == q.eraseBottom && p.eraseLeft == q.eraseLeft && p.eraseRight == q.eraseRight;
        });
    };
    QVERIFY(same(a, trainlab::drawAugmentation(config, 7, 12, 4000, 28, 28)));
    QVERIFY(!same(a, trainlab::drawAugmentation(config, 7, 13, 4000, 28, 28)));
    QVERIFY(!same(a, trainlab::drawAugmentation(config, 8, 12, 4000, 28, 28)));
    int flips = 0, erased = 0, shifts[9] = {};
    for (const auto &d : a) {
        QVERIFY(d.dy >= -4 && d.dy <= 4 && d.dx >= -4 && d.dx <= 4);
        ++shifts[d.dy + 4];
        flips += d.flip;
        if (d.eraseBottom > d.eraseTop) {
            ++erased;
            const auto area = (d.eraseBottom - d.eraseTop) * (d.eraseRight - d.eraseLeft);
            QVERIFY(d.eraseTop >= 0 && d.eraseBottom <= 28 && d.eraseLeft >= 0 && d.eraseRight <= 28);
            QVERIFY2(area >= 8 && area <= 290, qPrintable(QString::number(area)));
        }
    }
    QVERIFY2(flips > 1800 && flips < 2200, qPrintable(QString::number(flips)));
    QVERIFY2(erased > 850 && erased < 1150, qPrintable(QString::number(erased)));
    for (int s : shifts)
        QVERIFY2(s > 350 && s < 550, qPrintable(QString::number(s)));
}

void tst_Idx::augmentationPixels_data()
{
    QTest::addColumn<bool>("flip");
    QTest::addColumn<int>("padding");
    QTest::addColumn<double>("erasing");
    QTest::newRow("crop") << false << 4 << 0.0;
    QTest::newRow("flip") << true << 0 << 0.0;
    QTest::newRow("erasing") << false << 0 << 1.0;
    QTest::newRow("all three") << true << 3 << 0.5;
}

// Each pixel against a per-pixel reading of the draws; a batch altered whole equals its two replicas' halves.
void tst_Idx::augmentationPixels()
{
    QFETCH(bool, flip);
    QFETCH(int, padding);
    QFETCH(double, erasing);
    trainlab::AugmentationConfig config;
    config.flip = flip;
    config.cropPadding = padding;
    config.erasing = erasing;
    const std::int64_t n = 12, h = 28, w = 28;
    torch::manual_seed(3);
    const torch::Tensor x = torch::rand({n, 1, h, w}) + 0.5;   // no pixel is 0, so a zero is a filled or erased one
    const auto draws = trainlab::drawAugmentation(config, 5, 40, n, h, w);
    const torch::Tensor out = trainlab::applyAugmentation(x, draws, 0);
    auto in = x.accessor<float, 4>();
    auto got = out.accessor<float, 4>();
    int changed = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        const auto &d = draws[static_cast<size_t>(k)];
        changed += d.dy != 0 || d.dx != 0 || d.flip || d.eraseBottom > d.eraseTop;
        for (std::int64_t i = 0; i < h; ++i) {
            for (std::int64_t j = 0; j < w; ++j) {
                const std::int64_t si = i + d.dy, sj = (d.flip ? w - 1 - j : j) + d.dx;
                const bool erased = i >= d.eraseTop && i < d.eraseBottom && j >= d.eraseLeft && j < d.eraseRight;
                const float want = erased || si < 0 || si >= h || sj < 0 || sj >= w ? 0.0f : in[k][0][si][sj];
                if (got[k][0][i][j] != want)
                    QFAIL(qPrintable(QStringLiteral("image %1 pixel (%2, %3): %4, expected %5").arg(k).arg(i).arg(j)
                                         .arg(got[k][0][i][j]).arg(want)));
            }
        }
    }
    QVERIFY(changed > n / 3);
    const torch::Tensor halves = torch::cat({trainlab::applyAugmentation(x.slice(0, 0, 5), draws, 0),
                                             trainlab::applyAugmentation(x.slice(0, 5, n), draws, 5)});
    QVERIFY(torch::equal(halves, out));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, trainlab::applyAugmentation(x, draws, 1));
}

void tst_Idx::inspect()
{
    const auto sample = trainlab::inspectDataset("builtin:sample");
    QVERIFY(sample.ok);
    QCOMPARE(sample.message, std::string("2,000 train / 500 test found"));
    QTemporaryDir empty;
    const auto none = trainlab::inspectDataset(empty.path().toStdString());
    QVERIFY(!none.ok);
    QVERIFY(none.message.find("missing: train-images-idx3-ubyte[.gz]") == 0);
}

void tst_Idx::notRegularFiles_data()
{
    QTest::addColumn<QString>("kind");
    QTest::newRow("fifo") << "fifo";
    QTest::newRow("directory") << "directory";
    QTest::newRow("device") << "device";
}

// Each would block or never end if opened: refused at once, by name, in the reader and in inspect.
void tst_Idx::notRegularFiles()
{
    QFETCH(QString, kind);
    QTemporaryDir dir;
    const std::string images = dir.filePath("train-images-idx3-ubyte").toStdString();
    if (kind == "fifo")
        QCOMPARE(::mkfifo(images.c_str(), 0600), 0);
    else if (kind == "directory")
        QVERIFY(QDir().mkdir(QString::fromStdString(images)));
    else
        QVERIFY(QFile::link(QStringLiteral("/dev/zero"), QString::fromStdString(images)));
    writeRaw(dir.filePath("train-labels-idx1-ubyte").toStdString(), labels(4));
    writeRaw(dir.filePath("t10k-images-idx3-ubyte").toStdString(), ::images(4));
    writeRaw(dir.filePath("t10k-labels-idx1-ubyte").toStdString(), labels(4));
    QElapsedTimer clock;
    clock.start();
    try {
        trainlab::readIdxImages(images);
        QFAIL("expected DataError");
    } catch (const DataError &e) {
        QCOMPARE(std::string(e.what()), images + ": not a regular file");
    }
    const auto status = trainlab::inspectDataset(dir.path().toStdString());
    QVERIFY(!status.ok);
    QCOMPARE(status.message, images + ": not a regular file");
    QVERIFY(clock.elapsed() < 5000);
}

// A small .gz whose header says 200 images but which inflates to 64 MB: refused after the announced bytes.
void tst_Idx::trailingBytesAfterTheGzipStream_data()
{
    QTest::addColumn<QByteArray>("tail");
    QTest::addColumn<QString>("message");
    QTest::newRow("none") << QByteArray() << QString();
    QTest::newRow("garbage") << QByteArray("junk!") << "5 bytes of trailing data after the gzip stream";
    QTest::newRow("zeros") << QByteArray(3000, '\0') << "3000 bytes of trailing data after the gzip stream";
}

void tst_Idx::trailingBytesAfterTheGzipStream()
{
    // gzread skips what follows a gzip member; the reader must not.
    QFETCH(QByteArray, tail);
    QFETCH(QString, message);
    const std::string file = path("tail.gz");
    writeGz(file, labels(9));
    {
        std::ofstream out(file, std::ios::binary | std::ios::app);
        out.write(tail.constData(), tail.size());
    }
    try {
        QCOMPARE(trainlab::readIdxLabels(file).size(), std::size_t(9));
        QVERIFY2(message.isEmpty(), "the trailing bytes were accepted");
    } catch (const DataError &e) {
        QVERIFY2(!message.isEmpty() && QString::fromUtf8(e.what()).endsWith(message), e.what());
    }
}

void tst_Idx::gzipBombStopsEarly()
{
    const std::string file = path("bomb.gz");
    gzFile f = gzopen(file.c_str(), "wb9");
    const std::string head = header(2051, {200, 28, 28});
    gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
    const std::string zeros(1 << 20, '\0');
    for (int i = 0; i < 64; ++i)
        gzwrite(f, zeros.data(), static_cast<unsigned>(zeros.size()));
    gzclose(f);
    QVERIFY(QFileInfo(QString::fromStdString(file)).size() < 1 << 20);
    struct rusage before {};
    ::getrusage(RUSAGE_SELF, &before);
    try {
        trainlab::readIdxImages(file);
        QFAIL("expected DataError");
    } catch (const DataError &e) {
        QVERIFY2(std::string(e.what()).find("more data than its header says (156800 bytes)") != std::string::npos, e.what());
    }
    struct rusage after {};
    ::getrusage(RUSAGE_SELF, &after);
    // Peak memory grew by far less than the 64 MB the file inflates to.
    QVERIFY2(after.ru_maxrss - before.ru_maxrss < 16 * 1024, std::to_string(after.ru_maxrss - before.ru_maxrss).c_str());
}

QTEST_APPLESS_MAIN(tst_Idx)
#include "tst_idx.moc"
