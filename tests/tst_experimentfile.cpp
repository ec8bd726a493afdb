#include "ui/experimentfile.h"
#include "ui/experimentform.h"

#include <QFile>
#include <QLineEdit>
#include <QMenu>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using trainlab::ExperimentFile;

class tst_ExperimentFile : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void saveOpenAndModified();
    void badFileIsNamedAndLeavesTheForm();
    void recentFilesKeptNewestFirst();
    void presetLoadsClean();

private:
    QTemporaryDir m_tmp;
};

void tst_ExperimentFile::initTestCase()
{
    qputenv("XDG_CONFIG_HOME", m_tmp.filePath(QStringLiteral("config")).toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("TrainLabTest"));
    QCoreApplication::setApplicationName(QStringLiteral("ExperimentFileTest"));
}

void tst_ExperimentFile::saveOpenAndModified()
{
    QWidget window;
    auto *form = new trainlab::ExperimentForm(&window);
    ExperimentFile file(form, &window);
    file.setClean(trainlab::ExperimentConfig{}, QString());
    QVERIFY(!file.isModified());
    auto *name = form->findChild<QLineEdit *>(QStringLiteral("name"));
    name->setText(QStringLiteral("edited"));
    QVERIFY(file.isModified());
    const QString path = m_tmp.filePath(QStringLiteral("a.json"));
    QSignalSpy changed(&file, &ExperimentFile::changed);
    QVERIFY(file.saveConfigTo(path));
    QVERIFY(!file.isModified());
    QCOMPARE(changed.count(), 1);
    QCOMPARE(file.currentFile(), path);
    name->setText(QStringLiteral("other"));
    QVERIFY(file.openConfigFile(path));
    QCOMPARE(name->text(), QStringLiteral("edited"));
    QVERIFY(!file.isModified());
    trainlab::ExperimentConfig copy = form->config();
    file.loadUnsaved(copy);
    QVERIFY(file.isModified());   // never saved
    QVERIFY(file.currentFile().isEmpty());
}

void tst_ExperimentFile::badFileIsNamedAndLeavesTheForm()
{
    QWidget window;
    auto *form = new trainlab::ExperimentForm(&window);
    ExperimentFile file(form, &window);
    file.setClean(trainlab::ExperimentConfig{}, QString());
    const QString bad = m_tmp.filePath(QStringLiteral("bad.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"batch_size": "many"})");
    f.close();
    QSignalSpy errors(&file, &ExperimentFile::error);
    QVERIFY(!file.openConfigFile(bad));
    QCOMPARE(errors.count(), 1);
    QVERIFY2(errors.first().at(1).toString().contains(QStringLiteral("batch_size")), qPrintable(errors.first().at(1).toString()));
    QVERIFY(file.currentFile().isEmpty());
    QVERIFY(!file.isModified());
}

void tst_ExperimentFile::recentFilesKeptNewestFirst()
{
    QWidget window;
    auto *form = new trainlab::ExperimentForm(&window);
    ExperimentFile file(form, &window);
    QMenu menu;
    file.addActions(&menu);
    file.setClean(trainlab::ExperimentConfig{}, QString());
    const QString a = m_tmp.filePath(QStringLiteral("r1.json")), b = m_tmp.filePath(QStringLiteral("r2.json"));
    QVERIFY(file.saveConfigTo(a));
    QVERIFY(file.saveConfigTo(b));
    QVERIFY(file.saveConfigTo(a));
    QCOMPARE(QSettings().value(QStringLiteral("recentFiles")).toStringList().mid(0, 2), QStringList({a, b}));
}

void tst_ExperimentFile::presetLoadsClean()
{
    QWidget window;
    auto *form = new trainlab::ExperimentForm(&window);
    ExperimentFile file(form, &window);
    QVERIFY(file.loadPreset(QStringLiteral("quick-demo")));
    QCOMPARE(form->config().name, std::string("quick-demo"));
    QVERIFY(!file.isModified());
    QSignalSpy errors(&file, &ExperimentFile::error);
    QVERIFY(!file.loadPreset(QStringLiteral("no-such-preset")));
    QCOMPARE(errors.count(), 1);
    QCOMPARE(form->config().name, std::string("quick-demo"));
}

QTEST_MAIN(tst_ExperimentFile)
#include "tst_experimentfile.moc"
