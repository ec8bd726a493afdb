#include "core/util/sha256.h"

#include <QCryptographicHash>
#include <QTemporaryDir>
#include <QTest>

#include <fstream>

class tst_Sha256 : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void vectors_data();
    void vectors();
    void chunked();
    void file();
    void unreadableFile();
};

void tst_Sha256::vectors_data()
{
    QTest::addColumn<QByteArray>("message");
    QTest::addColumn<QString>("digest");
    // FIPS 180-2 appendix B and the NIST examples.
    QTest::newRow("empty") << QByteArray() << "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    QTest::newRow("abc") << QByteArray("abc") << "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    QTest::newRow("448 bits") << QByteArray("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                              << "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
    QTest::newRow("million a") << QByteArray(1000000, 'a')
                               << "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    QTest::newRow("55 bytes, one block") << QByteArray(55, 'x')
                                         << QString::fromLatin1(QCryptographicHash::hash(QByteArray(55, 'x'), QCryptographicHash::Sha256).toHex());
    QTest::newRow("56 bytes, two blocks") << QByteArray(56, 'x')
                                          << QString::fromLatin1(QCryptographicHash::hash(QByteArray(56, 'x'), QCryptographicHash::Sha256).toHex());
}

void tst_Sha256::vectors()
{
    QFETCH(QByteArray, message);
    QFETCH(QString, digest);
    trainlab::Sha256 hash;
    hash.update(message.constData(), static_cast<std::size_t>(message.size()));
    QCOMPARE(QString::fromStdString(hash.hexDigest()), digest);
}

void tst_Sha256::chunked()
{
    // The same message in uneven pieces crosses the 64-byte buffer at every offset.
    QByteArray message;
    for (int i = 0; i < 1000; ++i)
        message.append(static_cast<char>(i * 7 + 3));
    trainlab::Sha256 whole, pieces;
    whole.update(message.constData(), static_cast<std::size_t>(message.size()));
    for (int at = 0, step = 1; at < message.size(); at += step, step = step % 67 + 1)
        pieces.update(message.constData() + at, static_cast<std::size_t>(std::min<int>(step, message.size() - at)));
    QCOMPARE(pieces.hexDigest(), whole.hexDigest());
}

void tst_Sha256::file()
{
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("abc")).toStdString();
    std::ofstream(path, std::ios::binary) << "abc";
    QCOMPARE(trainlab::sha256File(path), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}

void tst_Sha256::unreadableFile()
{
    try {
        trainlab::sha256File("/nonexistent/trainlab-no-such-file");
        QFAIL("no exception");
    } catch (const std::runtime_error &e) {
        QVERIFY2(std::string(e.what()).find("/nonexistent/trainlab-no-such-file") != std::string::npos, e.what());
    }
}

QTEST_GUILESS_MAIN(tst_Sha256)
#include "tst_sha256.moc"
