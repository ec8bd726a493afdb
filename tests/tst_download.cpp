#include "core/data/download.h"
#include "core/util/sha256.h"
#include "httpserver.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <sys/stat.h>

namespace fs = std::filesystem;

namespace {

std::string randomBytes(std::size_t size, unsigned seed)
{
    std::mt19937 rng(seed);
    std::string out(size, '\0');
    for (auto &c : out)
        c = static_cast<char>(rng() & 0xff);
    return out;
}

std::string sha256(const std::string &data)
{
    trainlab::Sha256 hash;
    hash.update(data.data(), data.size());
    return hash.hexDigest();
}

std::string readAll(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::string &data)
{
    std::ofstream(path, std::ios::binary) << data;
}

bool exists(const std::string &path)
{
    std::error_code ec;
    return fs::exists(path, ec);
}

class Recorder : public trainlab::DownloadObserver
{
public:
    void onProgress(const trainlab::DownloadProgress &p) override
    {
        progress.push_back(p);
        if (onEach)
            onEach(p);
    }
    void onLog(const std::string &line) override { logs.push_back(line); }
    bool logged(const std::string &text) const
    {
        return std::any_of(logs.begin(), logs.end(), [&](const std::string &l) { return l.find(text) != std::string::npos; });
    }

    std::vector<trainlab::DownloadProgress> progress;
    std::vector<std::string> logs;
    std::function<void(const trainlab::DownloadProgress &)> onEach;
};

// Four files of random bytes standing in for Fashion-MNIST; the downloader only checks size and SHA-256.
struct Fixture
{
    Fixture()
    {
        const char *names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                               "t10k-labels-idx1-ubyte.gz"};
        const std::size_t sizes[] = {200000, 3000, 70000, 500};
        for (int i = 0; i < 4; ++i) {
            bodies.push_back(randomBytes(sizes[i], 100u + static_cast<unsigned>(i)));
            manifest.files.push_back({names[i], sizes[i], sha256(bodies.back())});
        }
    }
    void serveAll(HttpServer &server, const std::string &prefix) const
    {
        for (std::size_t i = 0; i < bodies.size(); ++i) {
            HttpServer::Route route;
            route.body = bodies[i];
            server.setRoute(prefix + manifest.files[i].name, route);
        }
    }
    std::string name(int i) const { return manifest.files[static_cast<std::size_t>(i)].name; }

    trainlab::DatasetManifest manifest;
    std::vector<std::string> bodies;
};

trainlab::DownloadOptions quick(std::vector<std::string> mirrors)
{
    trainlab::DownloadOptions options;
    options.mirrors = std::move(mirrors);
    options.connectTimeoutSeconds = 5;
    options.stallSeconds = 10;
    return options;
}

} // namespace

class tst_Download : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void success();
    void rejectedContent_data();
    void rejectedContent();
    void badMirrorThenGood_data();
    void badMirrorThenGood();
    void droppedConnectionResumes();
    void existingPartResumes_data();
    void existingPartResumes();
    void cancelWhileStalled();
    void trickleAndDeadline_data();
    void trickleAndDeadline();
    void plantedPartRefused_data();
    void plantedPartRefused();
    void credentialsRedacted();
    void onlyHttpMirrors();
    void unreachableHost();
    void folderCannotBeCreated();
    void presentFilesAreSkipped();

private:
    std::string dir() const { return m_tmp->filePath(QStringLiteral("data")).toStdString(); }
    std::string file(const std::string &name) const { return dir() + "/" + name; }
    void checkInPlace(const Fixture &f)
    {
        for (int i = 0; i < 4; ++i) {
            QVERIFY2(readAll(file(f.name(i))) == f.bodies[static_cast<std::size_t>(i)], f.name(i).c_str());
            QVERIFY2(!exists(file(f.name(i)) + ".part"), f.name(i).c_str());
        }
    }

    std::unique_ptr<QTemporaryDir> m_tmp;
    trainlab::StopFlag m_cancel{false};
};

void tst_Download::initTestCase()
{
    // libcurl honours proxy variables; the loopback server must be reached directly.
    qputenv("no_proxy", "127.0.0.1,localhost");
    qputenv("NO_PROXY", "127.0.0.1,localhost");
}

void tst_Download::init()
{
    m_tmp = std::make_unique<QTemporaryDir>();
    m_cancel = false;
}

void tst_Download::success()
{
    HttpServer server;
    Fixture f;
    f.serveAll(server, "/m/");
    Recorder rec;
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/m/")}));
    QVERIFY2(r.ok, r.error.c_str());
    QVERIFY(!r.cancelled);
    QCOMPARE(r.dir, dir());
    checkInPlace(f);
    QCOMPARE(server.requests().size(), std::size_t(4));
    for (int i = 0; i < 4; ++i) {
        const auto last = std::find_if(rec.progress.rbegin(), rec.progress.rend(),
                                       [&](const trainlab::DownloadProgress &p) { return p.file == f.name(i); });
        QVERIFY(last != rec.progress.rend());
        QCOMPARE(last->bytes, f.manifest.files[static_cast<std::size_t>(i)].size);
        QCOMPARE(last->total, f.manifest.files[static_cast<std::size_t>(i)].size);
        QCOMPARE(last->fileIndex, i + 1);
        QCOMPARE(last->fileCount, 4);
        QVERIFY(last->bytesPerSecond > 0);
    }
}

void tst_Download::rejectedContent_data()
{
    QTest::addColumn<int>("size");
    QTest::addColumn<QString>("reason");
    QTest::newRow("checksum mismatch") << 3000 << "checksum mismatch, expected ";
    QTest::newRow("too short") << 2000 << "size mismatch, expected 3000 bytes, got 2000";
    QTest::newRow("too long") << 5000 << "larger than the expected 3000 bytes";
}

void tst_Download::rejectedContent()
{
    QFETCH(int, size);
    QFETCH(QString, reason);
    HttpServer server;
    Fixture f;
    f.serveAll(server, "/bad/");
    f.serveAll(server, "/good/");
    HttpServer::Route wrong;
    wrong.body = randomBytes(static_cast<std::size_t>(size), 7);
    server.setRoute("/bad/" + f.name(1), wrong);
    Recorder rec;
    auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/bad/")}));
    QVERIFY(!r.ok);
    const std::string url = server.url("/bad/") + f.name(1);
    QVERIFY2(r.error.find(f.name(1) + " from " + url + ": " + reason.toStdString()) != std::string::npos, r.error.c_str());
    if (reason.startsWith(QStringLiteral("checksum")))
        QVERIFY2(r.error.find("expected " + f.manifest.files[1].sha256 + ", got " + sha256(wrong.body)) != std::string::npos,
                 r.error.c_str());
    QVERIFY2(r.error.find("trainlab-cli dataset verify " + dir()) != std::string::npos, r.error.c_str());
    QVERIFY(!exists(file(f.name(1))));
    QVERIFY(!exists(file(f.name(1)) + ".part"));
    QVERIFY(exists(file(f.name(0))));

    // The next mirror is tried after a bad file.
    r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/bad/"), server.url("/good/")}));
    QVERIFY2(r.ok, r.error.c_str());
    checkInPlace(f);
}

void tst_Download::badMirrorThenGood_data()
{
    QTest::addColumn<int>("status");
    QTest::newRow("404") << 404;
    QTest::newRow("500") << 500;
}

void tst_Download::badMirrorThenGood()
{
    QFETCH(int, status);
    HttpServer server;
    Fixture f;
    f.serveAll(server, "/two/");
    HttpServer::Route error;
    error.status = status;
    for (int i = 0; i < 4; ++i)
        server.setRoute("/one/" + f.name(i), error);
    Recorder rec;
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel,
                                             quick({server.url("/one/"), server.url("/two")}));
    QVERIFY2(r.ok, r.error.c_str());
    checkInPlace(f);
    const auto requests = server.requests();
    QCOMPARE(requests.size(), std::size_t(8));
    QCOMPARE(requests[0].path, "/one/" + f.name(0));
    QCOMPARE(requests[1].path, "/two/" + f.name(0));
    QVERIFY(rec.logged(f.name(0) + " from " + server.url("/one/") + f.name(0) + ": HTTP " + std::to_string(status)));
}

void tst_Download::droppedConnectionResumes()
{
    HttpServer server;
    Fixture f;
    f.serveAll(server, "/m/");
    HttpServer::Route dropping;
    dropping.body = f.bodies[0];
    dropping.dropAfter = 80000;
    server.setRoute("/m/" + f.name(0), dropping);
    Recorder rec;
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/m/")}));
    QVERIFY2(r.ok, r.error.c_str());
    checkInPlace(f);
    std::vector<HttpServer::Request> first;
    for (const auto &req : server.requests())
        if (req.path == "/m/" + f.name(0))
            first.push_back(req);
    QCOMPARE(first.size(), std::size_t(2));
    QCOMPARE(first[0].rangeStart, -1LL);
    QCOMPARE(first[1].rangeStart, 80000LL);
    QVERIFY(rec.logged("resuming at byte 80000 (retry 1 of 3)"));
}

void tst_Download::existingPartResumes_data()
{
    QTest::addColumn<bool>("serverIgnoresRange");
    QTest::addColumn<bool>("partIsPrefix");
    QTest::newRow("206 continues the part") << false << true;
    QTest::newRow("200 restarts from zero") << true << false;
}

void tst_Download::existingPartResumes()
{
    QFETCH(bool, serverIgnoresRange);
    QFETCH(bool, partIsPrefix);
    HttpServer server;
    Fixture f;
    f.serveAll(server, "/m/");
    HttpServer::Route route;
    route.body = f.bodies[2];
    route.ignoreRange = serverIgnoresRange;
    server.setRoute("/m/" + f.name(2), route);
    fs::create_directories(dir());
    writeAll(file(f.name(2)) + ".part", partIsPrefix ? f.bodies[2].substr(0, 5000) : randomBytes(5000, 99));
    Recorder rec;
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/m/")}));
    QVERIFY2(r.ok, r.error.c_str());
    checkInPlace(f);
    for (const auto &req : server.requests())
        QCOMPARE(req.rangeStart, req.path == "/m/" + f.name(2) ? 5000LL : -1LL);
}

void tst_Download::cancelWhileStalled()
{
    HttpServer server;
    Fixture f;
    HttpServer::Route stalling;
    stalling.body = f.bodies[0];
    stalling.stallAfter = 1000;
    server.setRoute("/m/" + f.name(0), stalling);
    Recorder rec;
    QElapsedTimer sinceCancel;
    std::thread canceller([&] {
        while (server.requests().empty())
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        sinceCancel.start();
        m_cancel = true;
    });
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/m/")}));
    const qint64 elapsed = sinceCancel.elapsed();
    canceller.join();
    QVERIFY2(elapsed < 2000, std::to_string(elapsed).c_str());
    QVERIFY(!r.ok);
    QVERIFY(r.cancelled);
    QVERIFY2(r.error.find("cancelled") != std::string::npos, r.error.c_str());
    QVERIFY(!exists(file(f.name(0))));
    QCOMPARE(readAll(file(f.name(0)) + ".part"), f.bodies[0].substr(0, 1000));
}

void tst_Download::trickleAndDeadline_data()
{
    QTest::addColumn<int>("bytesPerSecond");
    QTest::addColumn<int>("minimum");
    QTest::addColumn<int>("deadline");
    QTest::addColumn<QString>("expected");
    QTest::newRow("below the minimum average") << 300 << 2000 << 3600 << "below the minimum of 2000";
    QTest::newRow("past the deadline per file") << 20000 << 10 << 2 << "not done after 2 s, the limit per file";
}

// A mirror that trickles just above the stall limit fails in seconds, not months (issue 27).
void tst_Download::trickleAndDeadline()
{
    QFETCH(int, bytesPerSecond);
    QFETCH(int, minimum);
    QFETCH(int, deadline);
    QFETCH(QString, expected);
    HttpServer server;
    Fixture f;
    HttpServer::Route slow;
    slow.body = f.bodies[0];
    slow.trickleBytesPerSecond = bytesPerSecond;
    server.setRoute("/m/" + f.name(0), slow);
    Recorder rec;
    auto options = quick({server.url("/m/")});
    options.stallSeconds = 1;
    options.minAverageBytesPerSecond = minimum;
    options.deadlineSeconds = deadline;
    QElapsedTimer timer;
    timer.start();
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, options);
    QVERIFY2(timer.elapsed() < 15000, std::to_string(timer.elapsed()).c_str());
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find(expected.toStdString()) != std::string::npos, r.error.c_str());
}

void tst_Download::plantedPartRefused_data()
{
    QTest::addColumn<bool>("fifo");
    QTest::newRow("symlink to a file outside") << false;
    QTest::newRow("FIFO") << true;
}

// NAME.part planted in the data folder: nothing outside is emptied or written, nothing blocks.
void tst_Download::plantedPartRefused()
{
    QFETCH(bool, fifo);
    HttpServer server;
    Fixture f;
    f.serveAll(server, "/m/");
    fs::create_directories(dir());
    const std::string part = file(f.name(0)) + ".part";
    const std::string outside = dir() + "-outside.txt";
    writeAll(outside, "seventeen bytes!!");
    if (fifo)
        QCOMPARE(::mkfifo(part.c_str(), 0600), 0);
    else
        fs::create_symlink(outside, part);
    Recorder rec;
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/m/")}));
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find(part + ": ") == 0, r.error.c_str());
    QVERIFY2(r.error.find("remove it and download again") != std::string::npos, r.error.c_str());
    QCOMPARE(readAll(outside), std::string("seventeen bytes!!"));
    QVERIFY(!rec.logged("resuming at byte"));
    QVERIFY(server.requests().empty());
}

void tst_Download::credentialsRedacted()
{
    Fixture f;
    const std::string mirror = "http://alice:s3cret@127.0.0.1:" + std::to_string(HttpServer::closedPort()) + "/m/";
    Recorder rec;
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({mirror}));
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("http://***@127.0.0.1:") != std::string::npos, r.error.c_str());
    QVERIFY(r.error.find("s3cret") == std::string::npos);
    for (const auto &line : rec.logs)
        QVERIFY2(line.find("s3cret") == std::string::npos, line.c_str());
    QVERIFY(rec.logged("***@127.0.0.1"));
}

void tst_Download::onlyHttpMirrors()
{
    Fixture f;
    const std::string secret = dir() + "-secret";
    fs::create_directories(secret);
    writeAll(secret + "/" + f.name(0), f.bodies[0]);
    Recorder rec;
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({"file://" + secret + "/"}));
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("file://: not allowed") != std::string::npos, r.error.c_str());
    QVERIFY(!exists(file(f.name(0))));
}

void tst_Download::unreachableHost()
{
    Fixture f;
    const std::string a = "http://127.0.0.1:" + std::to_string(HttpServer::closedPort()) + "/a/";
    const std::string b = "http://127.0.0.1:" + std::to_string(HttpServer::closedPort()) + "/b/";
    Recorder rec;
    QElapsedTimer timer;
    timer.start();
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({a, b}));
    QVERIFY2(timer.elapsed() < 5000, std::to_string(timer.elapsed()).c_str());
    QVERIFY(!r.ok);
    QVERIFY(!r.cancelled);
    QVERIFY2(r.error.rfind(f.name(0) + ": could not download it from any mirror", 0) == 0, r.error.c_str());
    for (const std::string &mirror : {a, b}) {
        const std::size_t at = r.error.find(f.name(0) + " from " + mirror + f.name(0) + ": ");
        QVERIFY2(at != std::string::npos, r.error.c_str());
        QVERIFY2(r.error.find("Connection refused", at) < r.error.find('\n', at), r.error.c_str());
    }
    QVERIFY2(r.error.find("put the four files in " + dir() + ", then run: trainlab-cli dataset verify " + dir())
                 != std::string::npos, r.error.c_str());
    QVERIFY(!exists(file(f.name(0))));
}

void tst_Download::folderCannotBeCreated()
{
    // Under a regular file mkdir fails even for root, who ignores permission bits.
    const std::string blocker = m_tmp->filePath(QStringLiteral("plain-file")).toStdString();
    writeAll(blocker, "x");
    const std::string target = blocker + "/data";
    HttpServer server;
    Fixture f;
    f.serveAll(server, "/m/");
    Recorder rec;
    const auto r = trainlab::downloadDataset(target, f.manifest, rec, m_cancel, quick({server.url("/m/")}));
    QVERIFY(!r.ok);
    QVERIFY2(r.error.find("cannot create the folder " + target) != std::string::npos, r.error.c_str());
    QVERIFY(server.requests().empty());
}

void tst_Download::presentFilesAreSkipped()
{
    HttpServer server;
    Fixture f;
    f.serveAll(server, "/m/");
    fs::create_directories(dir());
    for (int i = 0; i < 4; ++i)
        writeAll(file(f.name(i)), f.bodies[static_cast<std::size_t>(i)]);
    // One file is present but wrong: only it is fetched again.
    writeAll(file(f.name(3)), randomBytes(500, 1));
    Recorder rec;
    const auto r = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/m/")}));
    QVERIFY2(r.ok, r.error.c_str());
    checkInPlace(f);
    const auto requests = server.requests();
    QCOMPARE(requests.size(), std::size_t(1));
    QCOMPARE(requests[0].path, "/m/" + f.name(3));
    QVERIFY(rec.logged(f.name(0) + ": already here, checksum ok"));
    const auto again = trainlab::downloadDataset(dir(), f.manifest, rec, m_cancel, quick({server.url("/m/")}));
    QVERIFY2(again.ok, again.error.c_str());
    QCOMPARE(server.requests().size(), std::size_t(1));
}

QTEST_GUILESS_MAIN(tst_Download)
#include "tst_download.moc"
