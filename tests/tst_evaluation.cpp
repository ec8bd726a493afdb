#include "core/config.h"
#include "core/eval/evaluation.h"
#include "core/train/checkpoint.h"
#include "core/train/model.h"
#include "core/train/trainer.h"

#include <torch/torch.h>

#include "testutil.h"

#include <QTemporaryDir>
#include <QtTest>

using trainlab::Evaluation;

namespace {

const std::vector<std::string> kThree = {"a", "b", "c"};

// One row of logits per (true, predicted) pair: the predicted class gets `margin` above the others.
void addRow(std::vector<float> &logits, std::vector<std::int64_t> &labels, int truth, int predicted, float margin)
{
    for (int c = 0; c < 3; ++c)
        logits.push_back(c == predicted ? margin : 0.0f);
    labels.push_back(truth);
}

} // namespace

class tst_Evaluation : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void knownMatrix();
    void topThreeAndTies();
    void badInputRefused_data();
    void badInputRefused();
    void jsonRoundTrip();
    void brokenJsonRefused_data();
    void brokenJsonRefused();
    void classNamesFollowTheDataset();
    void handMadeCheckpointGivesItsMatrix();
    void evaluatesARunLikeItsLastEpoch();
    void missingCheckpointNamed();
};

void tst_Evaluation::knownMatrix()
{
    std::vector<float> logits;
    std::vector<std::int64_t> labels;
    // a: 3 right, 1 as b (margin 4). b: 2 right, 2 as c (margins 1 and 3). c: 1 right.
    for (int i = 0; i < 3; ++i)
        addRow(logits, labels, 0, 0, 2.0f);
    addRow(logits, labels, 0, 1, 4.0f);
    addRow(logits, labels, 1, 1, 2.0f);
    addRow(logits, labels, 1, 1, 2.0f);
    addRow(logits, labels, 1, 2, 1.0f);
    addRow(logits, labels, 1, 2, 3.0f);
    addRow(logits, labels, 2, 2, 2.0f);
    const Evaluation e = trainlab::summarizePredictions(logits, labels, kThree, 5, 2);
    const std::vector<std::vector<std::int64_t>> expected = {{3, 1, 0}, {0, 2, 2}, {0, 0, 1}};
    QCOMPARE(e.confusion, expected);
    QCOMPARE(e.samples, std::int64_t(9));
    QCOMPARE(e.top1, 6.0 / 9.0);
    QCOMPARE(e.classes[0].recall, 0.75);
    QCOMPARE(e.classes[1].precision, 2.0 / 3.0);
    QCOMPARE(e.classes[2].precision, 1.0 / 3.0);
    QCOMPARE(e.classes[2].support, std::int64_t(1));
    QCOMPARE(e.classes[2].predicted, std::int64_t(3));
    QCOMPARE(e.mostConfused.size(), size_t(2));
    QCOMPARE(e.mostConfused[0].truth, 1);
    QCOMPARE(e.mostConfused[0].predicted, 2);
    QCOMPARE(e.mostConfused[0].count, std::int64_t(2));
    // The two most confident of the three mistakes: margin 4 (a as b), then margin 3 (b as c).
    QCOMPARE(e.mistakes.size(), size_t(2));
    QCOMPARE(e.mistakes[0].index, std::int64_t(3));
    QCOMPARE(e.mistakes[1].index, std::int64_t(7));
    QVERIFY(qAbs(e.mistakes[0].probability - std::exp(4.0) / (std::exp(4.0) + 2.0)) < 1e-6);
    const std::string text = trainlab::formatEvaluation(e);
    QVERIFY2(text.find("b -> c: 2") != std::string::npos, text.c_str());
}

void tst_Evaluation::topThreeAndTies()
{
    const std::vector<std::string> five = {"0", "1", "2", "3", "4"};
    // Label 4 ranks third (top-3, not top-1); label 0 ranks fourth; a full tie predicts class 0, as argmax does.
    const std::vector<float> logits = {1, 5, 4, 0, 3, /**/ 1, 5, 4, 3, 0, /**/ 2, 2, 2, 2, 2};
    const Evaluation e = trainlab::summarizePredictions(logits, {4, 0, 0}, five);
    QCOMPARE(e.top1, 1.0 / 3.0);
    QCOMPARE(e.top3, 2.0 / 3.0);
    QCOMPARE(e.confusion[0][0], std::int64_t(1));
    QCOMPARE(e.confusion[4][1], std::int64_t(1));
}

void tst_Evaluation::badInputRefused_data()
{
    QTest::addColumn<std::vector<float>>("logits");
    QTest::addColumn<std::vector<std::int64_t>>("labels");
    QTest::addColumn<QString>("message");
    QTest::newRow("short logits") << std::vector<float>{1, 2} << std::vector<std::int64_t>{0} << "logits expected";
    QTest::newRow("label too big") << std::vector<float>{1, 2, 3} << std::vector<std::int64_t>{3} << "label 3 of image 0";
    QTest::newRow("negative label") << std::vector<float>{1, 2, 3} << std::vector<std::int64_t>{-1} << "outside 0..2";
}

void tst_Evaluation::badInputRefused()
{
    QFETCH(std::vector<float>, logits);
    QFETCH(std::vector<std::int64_t>, labels);
    QFETCH(QString, message);
    try {
        trainlab::summarizePredictions(logits, labels, kThree);
        QFAIL("accepted");
    } catch (const std::invalid_argument &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
    }
}

void tst_Evaluation::jsonRoundTrip()
{
    std::vector<float> logits;
    std::vector<std::int64_t> labels;
    addRow(logits, labels, 0, 2, 3.0f);
    addRow(logits, labels, 1, 1, 1.0f);
    Evaluation e = trainlab::summarizePredictions(logits, labels, kThree);
    e.checkpoint = "best.pt";
    e.epoch = 7;
    const Evaluation back = trainlab::evaluationFromJson(trainlab::evaluationJson(e), "evaluation.json");
    QCOMPARE(back.checkpoint, e.checkpoint);
    QCOMPARE(back.epoch, 7);
    QCOMPARE(back.confusion, e.confusion);
    QCOMPARE(back.classNames, e.classNames);
    QCOMPARE(back.top1, e.top1);
    QCOMPARE(back.classes.size(), size_t(3));
    QCOMPARE(back.classes[2].predicted, std::int64_t(1));
    QCOMPARE(back.mistakes.size(), size_t(1));
    QCOMPARE(back.mistakes[0].predicted, 2);
    QCOMPARE(back.mostConfused[0].truth, 0);
}

void tst_Evaluation::brokenJsonRefused_data()
{
    QTest::addColumn<QString>("text");
    QTest::newRow("not json") << "{";
    QTest::newRow("no matrix") << R"({"checkpoint":"best.pt","epoch":1,"samples":1,"top1":1,"top3":1,"class_names":["a"]})";
    QTest::newRow("matrix not square")
        << R"({"checkpoint":"b","epoch":1,"samples":1,"top1":1,"top3":1,"class_names":["a","b"],"confusion":[[1,0]],
              "classes":[],"most_confused":[],"mistakes":[]})";
    QTest::newRow("mistake class outside")
        << R"({"checkpoint":"b","epoch":1,"samples":1,"top1":1,"top3":1,"class_names":["a"],"confusion":[[1]],
              "classes":[],"most_confused":[],"mistakes":[{"index":0,"true":0,"predicted":5,"probability":0.5}]})";
}

void tst_Evaluation::brokenJsonRefused()
{
    QFETCH(QString, text);
    try {
        trainlab::evaluationFromJson(text.toStdString(), "run/evaluation.json");
        QFAIL("accepted");
    } catch (const std::runtime_error &e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(QStringLiteral("run/evaluation.json: not an evaluation")), e.what());
    }
}

void tst_Evaluation::classNamesFollowTheDataset()
{
    trainlab::ExperimentConfig c;
    QCOMPARE(trainlab::classNames(c).at(6), std::string("Shirt"));
    c.dataset.name = "custom";
    QCOMPARE(trainlab::classNames(c).at(6), std::string("6"));
}

// fc's weights zero and its bias ln 9 for class 2, 0 elsewhere: every image is "Pullover" with probability
// 9 / (9 + 9) = 0.5, whatever the image; the sample's 30 balanced test images give a known matrix.
void tst_Evaluation::handMadeCheckpointGivesItsMatrix()
{
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString();
    trainlab::ExperimentConfig c;
    c.dataset.testLimit = 30;
    c.save(run + "/config.json");
    auto net = trainlab::makeResNet18(1, 10);
    auto params = net->named_parameters();
    {
        torch::NoGradGuard noGrad;
        params["fc.weight"].zero_();
        params["fc.bias"].zero_();
        params["fc.bias"][2] = std::log(9.0);
    }
    torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1));
    trainlab::CheckpointInfo info;
    info.epoch = 4;
    for (int epoch = 1; epoch <= 4; ++epoch)
        info.metrics.push_back({epoch, 1.0, 0.1, 0.1, 1.0, 1.0, {}});
    trainlab::saveCheckpoint(run + "/checkpoint.pt", *net, sgd, info);

    const Evaluation e = trainlab::evaluateRun(run);
    QCOMPARE(e.checkpoint, std::string("checkpoint.pt"));   // no best.pt: the last one
    QCOMPARE(e.epoch, 4);
    QCOMPARE(e.samples, std::int64_t(30));
    for (std::size_t truth = 0; truth < 10; ++truth) {
        for (std::size_t predicted = 0; predicted < 10; ++predicted)
            QCOMPARE(e.confusion[truth][predicted], std::int64_t(predicted == 2 ? 3 : 0));
    }
    QCOMPARE(e.top1, 0.1);
    QCOMPARE(e.top3, 0.3);   // the tied zeros rank by class: 2, then 0 and 1
    QCOMPARE(e.classes[2].precision, 0.1);
    QCOMPARE(e.mistakes.size(), size_t(27));
    QVERIFY(qAbs(e.mistakes.front().probability - 0.5) < 1e-5);
    QCOMPARE(e.mistakes.front().predicted, 2);
}

// The evaluation of best.pt gives the test accuracy the run recorded for that epoch, on as many images.
void tst_Evaluation::evaluatesARunLikeItsLastEpoch()
{
    QTemporaryDir runs;
    trainlab::ExperimentConfig c;
    c.name = "evaluated";
    c.dataset.trainLimit = 40;
    c.dataset.testLimit = 30;
    c.batchSize = 20;
    c.learningRate = 0.1;
    c.epochs = 1;
    c.cpuThreads = 2;
    trainlab::RunOptions options;
    options.runsDir = runs.path().toStdString();
    RecordingObserver observer;
    trainlab::StopFlag stop{false};
    const trainlab::RunResult result = trainlab::runExperiment(c, observer, stop, options);
    QCOMPARE(result.status, trainlab::RunStatus::Completed);
    const Evaluation e = trainlab::evaluateRun(result.runDir);
    QCOMPARE(e.checkpoint, std::string("best.pt"));
    QCOMPARE(e.epoch, 1);
    QCOMPARE(e.samples, std::int64_t(30));
    QCOMPARE(e.top1, result.epochs.back().testAcc);
    std::int64_t total = 0;
    for (const auto &row : e.confusion)
        for (const auto count : row)
            total += count;
    QCOMPARE(total, std::int64_t(30));
    QCOMPARE(e.classes.front().name, std::string("T-shirt/top"));
    QCOMPARE(trainlab::evaluateRun(result.runDir, "last").checkpoint, std::string("checkpoint.pt"));
}

void tst_Evaluation::missingCheckpointNamed()
{
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString();
    try {
        trainlab::evaluateRun(run, "best");
        QFAIL("evaluated a folder without a checkpoint");
    } catch (const std::exception &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("best.pt: no such checkpoint")), e.what());
    }
    try {
        trainlab::evaluationCheckpoint(run, "newest");
        QFAIL("took an unknown checkpoint name");
    } catch (const std::invalid_argument &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("best or last")), e.what());
    }
}

QTEST_GUILESS_MAIN(tst_Evaluation)
#include "tst_evaluation.moc"
