#include "ui/lrfinderdialog.h"

#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

using trainlab::LrFinderDialog;

// Run > Find Learning Rate…: the range test on a worker, drawn as it comes, its suggestion handed to the form.
class tst_LrFinderDialog : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void runsAndSuggests();
    void badRangeRefused_data();
    void badRangeRefused();
    void closedWhileRunning();
};

namespace {

trainlab::ExperimentConfig tiny()
{
    trainlab::ExperimentConfig c;
    c.name = "finder";
    c.dataset.trainLimit = 30;
    c.dataset.testLimit = 10;
    c.batchSize = 8;
    c.cpuThreads = 2;
    return c;
}

template <typename T>
T *child(const QWidget &w, const char *name)
{
    return w.findChild<T *>(QString::fromLatin1(name));
}

} // namespace

void tst_LrFinderDialog::runsAndSuggests()
{
    LrFinderDialog dialog(tiny());
    child<QLineEdit>(dialog, "minLr")->setText(QStringLiteral("1e-4"));
    child<QLineEdit>(dialog, "maxLr")->setText(QStringLiteral("1"));
    child<QSpinBox>(dialog, "steps")->setValue(12);
    QSignalSpy finished(&dialog, &LrFinderDialog::finished);
    QSignalSpy chosen(&dialog, &LrFinderDialog::learningRateChosen);
    child<QPushButton>(dialog, "startStop")->click();
    QVERIFY(dialog.isRunning());
    QVERIFY(!child<QLineEdit>(dialog, "minLr")->isEnabled());
    QVERIFY(finished.wait(120000));
    QVERIFY(!dialog.isRunning());
    QVERIFY2(dialog.pointCount() > 0 && dialog.pointCount() <= 12, qPrintable(QString::number(dialog.pointCount())));
    const QString status = dialog.statusText();
    QVERIFY2(status.contains(QStringLiteral(" after %1 steps").arg(dialog.pointCount())), qPrintable(status));
    auto *use = child<QPushButton>(dialog, "use");
    QCOMPARE(use->isEnabled(), dialog.suggestedLearningRate() > 0);
    if (dialog.suggestedLearningRate() > 0) {
        QVERIFY2(status.contains(QStringLiteral("suggested learning rate")), qPrintable(status));
        use->click();
        QCOMPARE(chosen.size(), 1);
        QCOMPARE(chosen.front().front().toDouble(), dialog.suggestedLearningRate());
    }
}

void tst_LrFinderDialog::badRangeRefused_data()
{
    QTest::addColumn<QString>("minLr");
    QTest::addColumn<QString>("maxLr");
    QTest::addColumn<QString>("problem");
    QTest::newRow("not a number") << "fast" << "10" << "minimum rate: not a number";
    QTest::newRow("decimal comma") << "1e-5" << "0,5" << "maximum rate: not a number";
    QTest::newRow("reversed") << "1" << "0.1" << "max_lr: must be above min_lr (1)";
    QTest::newRow("zero") << "0" << "1" << "min_lr: must be a number above 0, got 0";
}

void tst_LrFinderDialog::badRangeRefused()
{
    QFETCH(QString, minLr);
    QFETCH(QString, maxLr);
    QFETCH(QString, problem);
    LrFinderDialog dialog(tiny());
    child<QLineEdit>(dialog, "minLr")->setText(minLr);
    child<QLineEdit>(dialog, "maxLr")->setText(maxLr);
    QVERIFY(!child<QPushButton>(dialog, "startStop")->isEnabled());
    QVERIFY2(dialog.statusText().contains(problem), qPrintable(dialog.statusText()));
    dialog.start();
    QVERIFY(!dialog.isRunning());
    child<QLineEdit>(dialog, "minLr")->setText(QStringLiteral("1e-5"));
    child<QLineEdit>(dialog, "maxLr")->setText(QStringLiteral("10"));
    QVERIFY(child<QPushButton>(dialog, "startStop")->isEnabled());
}

// Closed mid-test: the window hides at once, the step in progress ends on the worker, then the dialog deletes itself.
void tst_LrFinderDialog::closedWhileRunning()
{
    auto *dialog = new LrFinderDialog(tiny());
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    QPointer<LrFinderDialog> alive(dialog);
    child<QSpinBox>(*dialog, "steps")->setValue(1000);
    QSignalSpy finished(dialog, &LrFinderDialog::finished);
    dialog->show();
    dialog->start();
    QVERIFY(dialog->isRunning());
    dialog->close();
    QVERIFY(!dialog->isVisible());
    QVERIFY(finished.wait(60000));
    QTRY_VERIFY(alive.isNull());
}

QTEST_MAIN(tst_LrFinderDialog)
#include "tst_lrfinderdialog.moc"
