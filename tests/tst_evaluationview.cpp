#include "ui/classifydialog.h"
#include "ui/evaluationview.h"

#include "core/train/trainer.h"
#include "core/util/atomicfile.h"

#include "testutil.h"

#include <QAction>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QPixmap>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

using trainlab::EvaluationView;

namespace {

QString summaryText(const EvaluationView &view)
{
    return view.findChild<QLabel *>(QStringLiteral("evaluationSummary"))->text();
}

} // namespace

class tst_EvaluationView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void nothingSelected();
    void showsTheRunsEvaluation();
    void heldAgainstASecondRun();
    void brokenFileExplained();
    void evaluatesOnAWorker();
    void exportsAndClassifiesOnWorkers();

private:
    // One short run on the sample, trained on first use and shared by the tests that need a model.
    QString trainedRun();
    QTemporaryDir m_runs;
    QString m_runDir;
};

QString tst_EvaluationView::trainedRun()
{
    if (!m_runDir.isEmpty())
        return m_runDir;
    trainlab::ExperimentConfig c;
    c.name = "evaluated";
    c.dataset.trainLimit = 20;
    c.dataset.testLimit = 20;
    c.batchSize = 10;
    c.epochs = 1;
    c.cpuThreads = 2;
    trainlab::RunOptions options;
    options.runsDir = m_runs.path().toStdString();
    RecordingObserver observer;
    trainlab::StopFlag stop{false};
    const trainlab::RunResult result = trainlab::runExperiment(c, observer, stop, options);
    if (result.status == trainlab::RunStatus::Completed)
        m_runDir = QString::fromStdString(result.runDir);
    return m_runDir;
}

void tst_EvaluationView::nothingSelected()
{
    EvaluationView view;
    QVERIFY(!view.findChild<QPushButton *>(QStringLiteral("evaluateButton"))->isEnabled());
    QVERIFY(!view.evaluate());
    QCOMPARE(view.matrix()->rowCount(), 0);
    QTemporaryDir run;
    view.setRunDir(run.path());
    QVERIFY(view.findChild<QPushButton *>(QStringLiteral("evaluateButton"))->isEnabled());
    QVERIFY2(summaryText(view).contains(QStringLiteral("has no evaluation yet")), qPrintable(summaryText(view)));
}

void tst_EvaluationView::showsTheRunsEvaluation()
{
    // a: 3 right; b: 2 right, 2 taken for c; c: 1 right.
    const std::vector<float> logits = {1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1};
    trainlab::Evaluation e = trainlab::summarizePredictions(logits, {0, 0, 0, 1, 1, 1, 1, 2}, {"a", "b", "c"});
    e.checkpoint = "best.pt";
    e.epoch = 3;
    // 8 test images of 2 x 2 pixels, image i all of value 10 * i.
    std::string images;
    for (int i = 0; i < 8; ++i)
        images += std::string(4, static_cast<char>(10 * i));
    trainlab::attachMistakeImages(e, reinterpret_cast<const std::uint8_t *>(images.data()), 8, 2, 2);
    QTemporaryDir run;
    trainlab::writeFileAtomic(QDir(run.path()).filePath(QStringLiteral("evaluation.json")).toStdString(),
                              trainlab::evaluationJson(e));
    EvaluationView view;
    view.setRunDir(run.path());
    QVERIFY(view.evaluation().has_value());
    QTableWidget *m = view.matrix();
    QCOMPARE(m->rowCount(), 3);
    QCOMPARE(m->columnCount(), 3);
    QCOMPARE(m->horizontalHeaderItem(2)->text(), QStringLiteral("2"));
    QCOMPARE(m->verticalHeaderItem(2)->text(), QStringLiteral("2 c"));
    QCOMPARE(m->item(1, 2)->text(), QStringLiteral("2"));
    QCOMPARE(m->item(1, 2)->toolTip(), QStringLiteral("true b, predicted c: 2 of 4 (50.0%); click to see these mistakes"));
    QCOMPARE(m->item(0, 0)->text(), QStringLiteral("3"));
    // Deeper colour for a larger share of the true class.
    QVERIFY(m->item(0, 0)->background().color().alphaF() > m->item(1, 2)->background().color().alphaF());
    const QString summary = summaryText(view);
    QVERIFY2(summary.contains(QStringLiteral("best.pt (epoch 3), 8 test images: top-1 75.0%")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("b → c (2)")), qPrintable(summary));
    auto *chart = view.findChild<QChartView *>(QStringLiteral("classChart"))->chart();
    auto *bars = qobject_cast<QBarSeries *>(chart->series().value(0));
    QVERIFY(bars);
    QCOMPARE(bars->barSets().size(), 2);
    QCOMPARE(bars->barSets().at(0)->at(1), 0.5);      // b's accuracy
    QCOMPARE(bars->barSets().at(1)->at(2), 1.0 / 3);  // c's precision

    // The gallery: both mistakes (b taken for c), their own pixels; a cell of the matrix filters it.
    QListWidget *gallery = view.gallery();
    QCOMPARE(gallery->count(), 2);
    QCOMPARE(gallery->item(0)->icon().pixmap(QSize(6, 6)).toImage().pixelColor(1, 1).red(), 50);
    QVERIFY2(gallery->item(0)->text().startsWith(QStringLiteral("b → c")), qPrintable(gallery->item(0)->text()));
    QVERIFY2(gallery->item(1)->toolTip().startsWith(QStringLiteral("test image #6: true b, predicted c")),
             qPrintable(gallery->item(1)->toolTip()));
    const auto visible = [gallery] {
        int n = 0;
        for (int i = 0; i < gallery->count(); ++i)
            n += gallery->item(i)->isHidden() ? 0 : 1;
        return n;
    };
    Q_EMIT m->cellClicked(0, 1);
    QCOMPARE(visible(), 0);
    const QString label = view.findChild<QLabel *>(QStringLiteral("galleryLabel"))->text();
    QCOMPARE(label, QStringLiteral("a taken for b: 0 of 0 shown"));
    Q_EMIT m->cellClicked(1, 2);
    QCOMPARE(visible(), 2);
    view.filterGallery(2, 0);
    QCOMPARE(visible(), 0);
    Q_EMIT m->cellClicked(2, 2);   // the diagonal: all again
    QCOMPARE(visible(), 2);

    // Row-normalised: percent of the true class.
    view.setRowNormalized(true);
    QCOMPARE(m->item(1, 2)->text(), QStringLiteral("50"));
    QCOMPARE(m->item(0, 0)->text(), QStringLiteral("100"));
    view.setRowNormalized(false);
    QCOMPARE(m->item(1, 2)->text(), QStringLiteral("2"));

    // Exports: PNG, SVG (with the counts as text), the per-class table as CSV.
    QTemporaryDir out;
    QString error;
    const QString png = out.filePath(QStringLiteral("m.png")), svg = out.filePath(QStringLiteral("m.svg")),
                  csv = out.filePath(QStringLiteral("c.csv"));
    QVERIFY2(view.saveMatrix(png, &error), qPrintable(error));
    QImage written(png);
    QVERIFY(!written.isNull());
    QVERIFY(written.width() > 300 && written.height() > 200);
    QVERIFY2(view.saveMatrix(svg, &error), qPrintable(error));
    QFile svgFile(svg);
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    const QByteArray svgText = svgFile.readAll();
    QVERIFY(svgText.contains("<svg"));
    QVERIFY(svgText.contains(">2 c<"));
    QVERIFY2(view.savePerClassCsv(csv, &error), qPrintable(error));
    QFile csvFile(csv);
    QVERIFY(csvFile.open(QIODevice::ReadOnly));
    QCOMPARE(csvFile.readAll(), QByteArray("class,name,support,predicted,correct,accuracy,precision\n"
                                           "0,\"a\",3,3,3,1.000000,1.000000\n"
                                           "1,\"b\",4,2,2,0.500000,1.000000\n"
                                           "2,\"c\",1,3,1,1.000000,0.333333\n"));
    QVERIFY(!view.saveMatrix(out.filePath(QStringLiteral("missing/m.png")), &error));
    QVERIFY2(error.contains(QStringLiteral("missing/m.png: cannot write")), qPrintable(error));

    view.setRunDir(QString());
    QCOMPARE(gallery->count(), 0);
    QCOMPARE(m->rowCount(), 0);
    QVERIFY(!view.evaluation().has_value());
}

// Two runs selected: the second's accuracy per class beside the first's, and the summary says what changed; one
// without an evaluation, or of another test set, is named instead.
void tst_EvaluationView::heldAgainstASecondRun()
{
    const auto write = [](const QTemporaryDir &dir, const std::vector<std::int64_t> &labels, const std::vector<float> &logits) {
        trainlab::Evaluation e = trainlab::summarizePredictions(logits, labels, {"a", "b"});
        e.checkpoint = "best.pt";
        trainlab::writeFileAtomic(QDir(dir.path()).filePath(QStringLiteral("evaluation.json")).toStdString(),
                                  trainlab::evaluationJson(e));
    };
    // Here: a 2 of 2, b 1 of 2. There: a 1 of 2, b 2 of 2.
    QTemporaryDir here, there, other, bare;
    write(here, {0, 0, 1, 1}, {1, 0, 1, 0, 0, 1, 1, 0});
    write(there, {0, 0, 1, 1}, {1, 0, 0, 1, 0, 1, 0, 1});
    write(other, {0, 1}, {1, 0, 0, 1});
    EvaluationView view;
    view.setRunDir(here.path(), there.path());
    QVERIFY(view.diff().has_value());
    QCOMPARE(view.diff()->classes[1].there, 1.0);
    const QString summary = summaryText(view);
    QVERIFY2(summary.contains(QStringLiteral("Against %1 (there, the grey bars): top-1 75.0% there, 75.0% here; most "
                                             "changed: a 50.0% → 100.0%, b 100.0% → 50.0%.")
                                  .arg(QFileInfo(there.path()).fileName())),
             qPrintable(summary));
    auto *chart = view.findChild<QChartView *>(QStringLiteral("classChart"))->chart();
    const auto sets = qobject_cast<QBarSeries *>(chart->series().at(0))->barSets();
    QCOMPARE(sets.size(), 3);
    QCOMPARE(sets.at(1)->label(), QStringLiteral("accuracy there"));
    QCOMPARE(sets.at(1)->at(0), 0.5);
    // One run again: no comparison left behind.
    view.setRunDir(here.path());
    QVERIFY(!view.diff().has_value());
    QCOMPARE(qobject_cast<QBarSeries *>(chart->series().at(0))->barSets().size(), 2);
    view.setRunDir(here.path(), other.path());
    QVERIFY(!view.diff().has_value());
    QVERIFY2(summaryText(view).contains(QStringLiteral("not comparable: not the same test set (4 and 2 test images)")),
             qPrintable(summaryText(view)));
    view.setRunDir(here.path(), bare.path());
    QVERIFY2(summaryText(view).contains(QStringLiteral("it has no evaluation yet")), qPrintable(summaryText(view)));
    QVERIFY(view.evaluation().has_value());
}

void tst_EvaluationView::brokenFileExplained()
{
    QTemporaryDir run;
    trainlab::writeFileAtomic(QDir(run.path()).filePath(QStringLiteral("evaluation.json")).toStdString(), "{");
    EvaluationView view;
    view.setRunDir(run.path());
    QVERIFY(!view.evaluation().has_value());
    QVERIFY2(summaryText(view).contains(QStringLiteral("evaluation.json: not an evaluation")), qPrintable(summaryText(view)));
    QVERIFY(view.findChild<QPushButton *>(QStringLiteral("evaluateButton"))->isEnabled());
}

// The button's work runs on a thread: the call returns at once, the result arrives later and is kept.
void tst_EvaluationView::evaluatesOnAWorker()
{
    const QString dir = trainedRun();
    QVERIFY(!dir.isEmpty());
    EvaluationView view;
    QSignalSpy done(&view, &EvaluationView::evaluated);
    view.setRunDir(dir);
    // The run left its own evaluation.json: shown at once, the gallery with it.
    QVERIFY(view.evaluation().has_value());
    QCOMPARE(view.evaluation()->checkpoint, std::string("best.pt"));
    QCOMPARE(view.gallery()->count(), int(view.evaluation()->mistakes.size()));
    QFile::remove(QDir(dir).filePath(QStringLiteral("evaluation.json")));
    view.reload();
    QVERIFY(!view.evaluation().has_value());
    // History's "Evaluate Model" is the same work as the button.
    view.evaluateAction()->trigger();
    QVERIFY(view.isEvaluating());
    QVERIFY(!view.evaluate());   // one at a time
    QVERIFY(done.wait(timeLimitMs(60000)));
    QCOMPARE(done.first().first().toString(), dir);
    QVERIFY(!view.isEvaluating());
    QVERIFY(view.evaluation().has_value());
    QCOMPARE(view.evaluation()->samples, std::int64_t(20));
    QCOMPARE(view.matrix()->rowCount(), 10);
    QVERIFY(QFile::exists(QDir(dir).filePath(QStringLiteral("evaluation.json"))));
    // Read back from the file, as for a run selected later.
    EvaluationView later;
    later.setRunDir(dir);
    QCOMPARE(later.evaluation()->confusion, view.evaluation()->confusion);
}

void tst_EvaluationView::exportsAndClassifiesOnWorkers()
{
    const QString dir = trainedRun();
    QVERIFY(!dir.isEmpty());
    EvaluationView view;
    QVERIFY(!view.openClassifyDialog());   // no run selected
    view.setRunDir(dir);
    QTemporaryDir out;
    const QString pth = out.filePath(QStringLiteral("model.pth"));
    QSignalSpy status(&view, &EvaluationView::status);
    QVERIFY(view.exportModel(pth));
    QVERIFY(!view.findChild<QPushButton *>(QStringLiteral("exportButton"))->isEnabled());
    QVERIFY(status.wait(timeLimitMs(30000)));
    QVERIFY2(status.first().first().toString().startsWith(QStringLiteral("Exported best.pt (epoch 1)")),
             qPrintable(status.first().first().toString()));
    QVERIFY(QFileInfo(pth).size() > 40'000'000);
    // By the name's suffix: ONNX's protobuf, opset 13, its weights as large as the state_dict's.
    const QString onnx = out.filePath(QStringLiteral("model.ONNX"));
    QVERIFY(view.exportModel(onnx));
    QVERIFY(status.wait(timeLimitMs(30000)));
    QVERIFY2(status.last().first().toString().contains(QStringLiteral("an ONNX model")), qPrintable(status.last().first().toString()));
    QFile onnxFile(onnx);
    QVERIFY(onnxFile.open(QIODevice::ReadOnly));
    const QByteArray onnxBytes = onnxFile.readAll();
    QVERIFY(onnxBytes.startsWith(QByteArray("\x08\x07\x12\x08TrainLab", 12)));   // ir_version 7, producer_name
    QVERIFY(onnxBytes.size() > 40'000'000);
    QVERIFY(view.exportModel(out.filePath(QStringLiteral("missing/model.pth"))));
    QVERIFY(status.wait(timeLimitMs(30000)));
    QVERIFY2(status.last().first().toString().startsWith(QStringLiteral("Export failed: ")), qPrintable(status.last().first().toString()));

    trainlab::ClassifyDialog *dialog = view.openClassifyDialog();
    QVERIFY(dialog);
    QSignalSpy classified(dialog, &trainlab::ClassifyDialog::classified);
    const QString notes = out.filePath(QStringLiteral("notes.txt"));
    trainlab::writeFileAtomic(notes.toStdString(), "not a picture");
    QVERIFY(dialog->classify({QStringLiteral(TRAINLAB_TEST_DATA "/pullover.png"), notes}));
    QVERIFY(!dialog->classify({notes}));    // one at a time
    QVERIFY(classified.wait(timeLimitMs(30000)));
    QTableWidget *table = dialog->table();
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("pullover.png"));
    QVERIFY(!table->item(0, 0)->data(Qt::DecorationRole).value<QPixmap>().isNull());
    QVERIFY2(table->item(0, 2)->text().endsWith(QLatin1Char('%')), qPrintable(table->item(0, 2)->text()));
    QCOMPARE(table->item(0, 5)->text(), QStringLiteral("Light background: negated"));
    QVERIFY2(table->item(1, 5)->text().contains(QStringLiteral("notes.txt: not an image")), qPrintable(table->item(1, 5)->text()));
    QVERIFY(!table->item(1, 2));
    const QString line = dialog->findChild<QLabel *>(QStringLiteral("classifyStatus"))->text();
    QVERIFY2(line.contains(QStringLiteral("best.pt (epoch 1): 1 classified, 1 refused")), qPrintable(line));
}

QTEST_MAIN(tst_EvaluationView)
#include "tst_evaluationview.moc"
