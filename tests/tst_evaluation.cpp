#include "core/config.h"
#include "core/eval/classify.h"
#include "core/eval/evaluation.h"
#include "core/eval/export.h"
#include "core/data/dataset.h"
#include "core/train/checkpoint.h"
#include "core/train/model.h"
#include "core/train/trainer.h"

#include <torch/torch.h>

#include "testutil.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <fstream>

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

// The hand-made model of handMadeCheckpointGivesItsMatrix: every image is "Pullover" with probability 0.5.
void writePulloverRun(const std::string &run)
{
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
        info.metrics.push_back({epoch, 1.0, 0.1, 0.1, 1.0, 1.0, {}, 0.0, {}});
    trainlab::saveCheckpoint(run + "/checkpoint.pt", *net, sgd, info);
}

std::string testData(const char *name)
{
    return std::string(TRAINLAB_TEST_DATA) + "/" + name;
}

std::string readAll(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::string &bytes)
{
    std::ofstream(path, std::ios::binary) << bytes;
}

// A model whose BatchNorm statistics moved away from their defaults, so that every buffer matters.
torch::nn::Sequential trainedLookingModel()
{
    torch::manual_seed(7);
    auto net = trainlab::makeResNet18(1, 10);
    trainlab::initD2lWeights(*net);
    torch::NoGradGuard noGrad;
    net->train();
    for (int i = 0; i < 3; ++i)
        net->forward(torch::rand({8, 1, 28, 28}));
    net->eval();
    return net;
}

} // namespace

class tst_Evaluation : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void knownMatrix();
    void diffAgainstAnotherRun();
    void topThreeAndTies();
    void badInputRefused_data();
    void badInputRefused();
    void jsonRoundTrip();
    void mistakesCoverEveryCell();
    void brokenJsonRefused_data();
    void brokenJsonRefused();
    void classNamesFollowTheDataset();
    void handMadeCheckpointGivesItsMatrix();
    void evaluatesARunLikeItsLastEpoch_data();
    void evaluatesARunLikeItsLastEpoch();
    void missingCheckpointNamed();
    void pytorchKeys_data();
    void pytorchKeys();
    void exportHoldsEveryTensor();
    void exportWritesTheRunsWeights();
    void pythonLoadsTheExport();
    void onnxRunsLikeTheModel();
    void imagesDecoded_data();
    void imagesDecoded();
    void badImagesRefusedByName_data();
    void badImagesRefusedByName();
    void fashionInputUndoesAProductPhoto();
    void classifiesWithTheRunsModel();
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
    const Evaluation e = trainlab::summarizePredictions(logits, labels, kThree, 5, 2, 0);
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

// Two models on the same six images of three classes: what each class gained, and the confusions that changed most.
void tst_Evaluation::diffAgainstAnotherRun()
{
    std::vector<float> logits;
    std::vector<std::int64_t> labels;
    // Here: a 2 of 2 right; b 1 of 2 (one as c); c 0 of 2 (both as a).
    addRow(logits, labels, 0, 0, 2.0f);
    addRow(logits, labels, 0, 0, 2.0f);
    addRow(logits, labels, 1, 1, 2.0f);
    addRow(logits, labels, 1, 2, 2.0f);
    addRow(logits, labels, 2, 0, 2.0f);
    addRow(logits, labels, 2, 0, 2.0f);
    const Evaluation here = trainlab::summarizePredictions(logits, labels, kThree);
    logits.clear();
    labels.clear();
    // There: a 1 of 2 (one as b); b 2 of 2; c 1 of 2 (one as a).
    addRow(logits, labels, 0, 0, 2.0f);
    addRow(logits, labels, 0, 1, 2.0f);
    addRow(logits, labels, 1, 1, 2.0f);
    addRow(logits, labels, 1, 1, 2.0f);
    addRow(logits, labels, 2, 2, 2.0f);
    addRow(logits, labels, 2, 0, 2.0f);
    const Evaluation there = trainlab::summarizePredictions(logits, labels, kThree);
    const trainlab::EvaluationDiff d = trainlab::diffEvaluations(here, there);
    QCOMPARE(d.samples, std::int64_t(6));
    QCOMPARE(d.top1Here, 3.0 / 6.0);
    QCOMPARE(d.top1There, 4.0 / 6.0);
    QCOMPARE(d.classes.size(), std::size_t(3));
    QCOMPARE(d.classes[0].here, 1.0);
    QCOMPARE(d.classes[0].there, 0.5);
    QCOMPARE(d.classes[2].here, 0.0);
    QCOMPARE(d.classes[2].there, 0.5);
    // c -> a changed by one image (2 here, 1 there) but is the larger cell; a -> b and b -> c by one each.
    QCOMPARE(d.pairs.size(), std::size_t(3));
    QCOMPARE(d.pairs[0].truth, 2);
    QCOMPARE(d.pairs[0].predicted, 0);
    QCOMPARE(d.pairs[0].here, std::int64_t(2));
    QCOMPARE(d.pairs[0].there, std::int64_t(1));
    QCOMPARE(trainlab::diffEvaluations(here, there, 1).pairs.size(), std::size_t(1));
    QVERIFY(trainlab::diffEvaluations(here, here).pairs.empty());
    const QString text = QString::fromStdString(trainlab::formatEvaluationDiff(d, "new", "old"));
    QVERIFY2(text.startsWith("against old, the same 6 test images: top-1 0.5000 here, 0.6667 there (-0.1667)"), qPrintable(text));
    QVERIFY2(text.contains("\na              1.000  0.500  +0.500\n"), qPrintable(text));
    QVERIFY2(text.contains("  c -> a: 2, 1 (+1)\n"), qPrintable(text));
    // Not the same test set: other classes, other sizes, other images per class.
    Evaluation fewer = there;
    fewer.samples = 5;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, trainlab::diffEvaluations(here, fewer));
    Evaluation renamed = there;
    renamed.classNames[2] = "z";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, trainlab::diffEvaluations(here, renamed));
    Evaluation moved = there;
    moved.classes[0].support = 3;
    moved.classes[1].support = 1;
    try {
        trainlab::diffEvaluations(here, moved);
        QFAIL("a test set with other class sizes was compared");
    } catch (const std::invalid_argument &e) {
        QCOMPARE(std::string(e.what()), std::string("not the same test set (a: 2 and 3 test images)"));
    }
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
    QCOMPARE(back.imageHeight, 0);
    QVERIFY(back.mistakes[0].pixels.empty());

    // The mistakes' images travel inside the file, byte for byte (every byte value, a 2 x 3 image).
    const std::string images = std::string("\x00\xff\x80\x01\x7f\xfe", 6) + std::string("\x10\x20\x30\x40\x50\x60", 6);
    trainlab::attachMistakeImages(e, reinterpret_cast<const std::uint8_t *>(images.data()), 2, 2, 3);
    QCOMPARE(e.mistakes[0].pixels, images.substr(0, 6));
    const Evaluation withImages = trainlab::evaluationFromJson(trainlab::evaluationJson(e), "evaluation.json");
    QCOMPARE(withImages.imageHeight, 2);
    QCOMPARE(withImages.imageWidth, 3);
    QCOMPARE(withImages.mistakes[0].pixels, images.substr(0, 6));
    e.mistakes[0].index = 2;
    QVERIFY_THROWS_EXCEPTION(std::out_of_range,
                             trainlab::attachMistakeImages(e, reinterpret_cast<const std::uint8_t *>(images.data()), 2, 2, 3));
}

void tst_Evaluation::mistakesCoverEveryCell()
{
    std::vector<float> logits;
    std::vector<std::int64_t> labels;
    // Five confident a-as-b mistakes, then one weak b-as-c: the top 2 alone would leave cell (b, c) empty.
    for (int i = 0; i < 5; ++i)
        addRow(logits, labels, 0, 1, 5.0f + static_cast<float>(i));
    addRow(logits, labels, 1, 2, 0.5f);
    const Evaluation e = trainlab::summarizePredictions(logits, labels, kThree, 5, 2, 1);
    QCOMPARE(e.mistakes.size(), size_t(3));
    QCOMPARE(e.mistakes[0].index, std::int64_t(4));
    QCOMPARE(e.mistakes[1].index, std::int64_t(3));
    QCOMPARE(e.mistakes[2].index, std::int64_t(5));
    QCOMPARE(trainlab::summarizePredictions(logits, labels, kThree, 5, 2, 3).mistakes.size(), size_t(4));
    QCOMPARE(trainlab::summarizePredictions(logits, labels, kThree, 5, 0, 0).mistakes.size(), size_t(0));
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
    QTest::newRow("image not base64")
        << R"({"checkpoint":"b","epoch":1,"samples":1,"top1":1,"top3":1,"class_names":["a","b"],"confusion":[[0,1],[0,0]],
              "classes":[],"most_confused":[],"image_height":1,"image_width":2,
              "mistakes":[{"index":0,"true":0,"predicted":1,"probability":0.5,"pixels":"A*=="}]})";
    QTest::newRow("image of the wrong size")
        << R"({"checkpoint":"b","epoch":1,"samples":1,"top1":1,"top3":1,"class_names":["a","b"],"confusion":[[0,1],[0,0]],
              "classes":[],"most_confused":[],"image_height":2,"image_width":2,
              "mistakes":[{"index":0,"true":0,"predicted":1,"probability":0.5,"pixels":"AAE="}]})";
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
    writePulloverRun(run);

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
void tst_Evaluation::evaluatesARunLikeItsLastEpoch_data()
{
    QTest::addColumn<QStringList>("devices");
    QTest::addColumn<double>("ema");   // ema_decay
    QTest::newRow("1 replica") << QStringList{"cpu"} << 0.0;
    // Each replica evaluates half the test set: evaluation.json still holds every image's answer.
    QTest::newRow("2 replicas") << QStringList{"cpu", "cpu"} << 0.0;
    // The run evaluated its weights' average: so does a second pass over its checkpoint.
    QTest::newRow("1 replica, weight average") << QStringList{"cpu"} << 0.5;
}

void tst_Evaluation::evaluatesARunLikeItsLastEpoch()
{
    QFETCH(QStringList, devices);
    QFETCH(double, ema);
#ifdef TRAINLAB_SANITIZED
    // About 15 s under ASan; the slots and the summary run in the 1-replica row, the collective in tst_trainer's.
    if (devices.size() > 1)
        QSKIP("the 2-replica row runs in the main build");
#endif
    QTemporaryDir runs;
    trainlab::ExperimentConfig c;
    c.name = "evaluated";
    c.dataset.trainLimit = 40;
    c.dataset.testLimit = 30;
    c.batchSize = 20;
    c.learningRate = 0.1;
    c.epochs = 1;
    c.cpuThreads = 2;
    c.emaDecay = ema;
    c.devices.clear();
    for (const QString &d : devices)
        c.devices.push_back(d.toStdString());
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
    if (ema > 0) {
        // The checkpoint keeps both: the trained weights to resume from, the average to evaluate.
        auto trained = trainlab::makeResNet18(1, 10), averaged = trainlab::makeResNet18(1, 10);
        trainlab::loadCheckpoint(result.runDir + "/best.pt", *trained);
        trainlab::loadEvaluatedWeights(result.runDir + "/best.pt", *averaged);
        QVERIFY(!torch::equal(trained->parameters().back(), averaged->parameters().back()));
    }

    // The run wrote its own from its last evaluation pass: the same answers as a second pass over the checkpoint.
    const std::string file = result.runDir + "/" + trainlab::kEvaluationFile;
    QVERIFY2(QFile::exists(QString::fromStdString(file)), file.c_str());
    const Evaluation saved = trainlab::evaluationFromJson(readAll(file), file);
    QCOMPARE(saved.checkpoint, e.checkpoint);
    QCOMPARE(saved.epoch, e.epoch);
    QCOMPARE(saved.samples, e.samples);
    QCOMPARE(saved.confusion, e.confusion);
    QCOMPARE(saved.mistakes.size(), e.mistakes.size());
    QVERIFY(!saved.mistakes.empty());
    const trainlab::DataBundle data = trainlab::loadData(c.dataset, c.model.numClasses);
    QCOMPARE(saved.imageHeight, int(data.test.images.size(1)));
    for (std::size_t i = 0; i < saved.mistakes.size(); ++i) {
        QCOMPARE(saved.mistakes[i].index, e.mistakes[i].index);
        const torch::Tensor image = data.test.images[saved.mistakes[i].index].contiguous();
        QCOMPARE(saved.mistakes[i].pixels, std::string(reinterpret_cast<const char *>(image.data_ptr<std::uint8_t>()),
                                                       static_cast<std::size_t>(image.numel())));
    }
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

void tst_Evaluation::pytorchKeys_data()
{
    QTest::addColumn<QString>("trainlab");
    QTest::addColumn<QString>("pytorch");
    QTest::newRow("stem conv") << "conv.weight" << "0.weight";
    QTest::newRow("stem bn") << "bn.num_batches_tracked" << "1.num_batches_tracked";
    QTest::newRow("block") << "resnet_block1_0.conv1.weight" << "resnet_block1.0.conv1.weight";
    QTest::newRow("projection") << "resnet_block4_0.conv3.bias" << "resnet_block4.0.conv3.bias";
    QTest::newRow("block bn") << "resnet_block3_1.bn2.running_var" << "resnet_block3.1.bn2.running_var";
    QTest::newRow("classifier") << "fc.bias" << "fc.1.bias";
    QTest::newRow("no block 5") << "resnet_block5_0.conv1.weight" << "";
    QTest::newRow("no third residual") << "resnet_block1_2.conv1.weight" << "";
    QTest::newRow("pool has none") << "global_avg_pool.weight" << "";
    QTest::newRow("nested too deep") << "fc.weight.x" << "";
}

void tst_Evaluation::pytorchKeys()
{
    QFETCH(QString, trainlab);
    QFETCH(QString, pytorch);
    try {
        const std::string key = trainlab::pytorchKey(trainlab.toStdString());
        QVERIFY2(!pytorch.isEmpty(), key.c_str());
        QCOMPARE(QString::fromStdString(key), pytorch);
    } catch (const std::invalid_argument &e) {
        QVERIFY2(pytorch.isEmpty(), e.what());
        QVERIFY2(QString::fromUtf8(e.what()).contains(trainlab), e.what());
    }
}

// Every parameter and buffer comes back from the file under its PyTorch name, equal, in state_dict() order,
// without the TorchScript type tag that torch.load(weights_only=True) refuses.
void tst_Evaluation::exportHoldsEveryTensor()
{
    auto net = trainedLookingModel();
    const std::string bytes = trainlab::pytorchStateDict(*net);
    QVERIFY(bytes.find("restore_type_tag") == std::string::npos);
    const c10::IValue loaded = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    QVERIFY(loaded.isGenericDict());
    const auto dict = loaded.toGenericDict();
    QCOMPARE(dict.size(), net->parameters().size() + net->buffers().size());
    std::vector<std::string> keys;
    for (const auto &entry : dict)
        keys.push_back(entry.key().toStringRef());
    const std::vector<std::string> first = {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                            "1.running_var", "1.num_batches_tracked", "resnet_block1.0.conv1.weight"};
    QVERIFY(std::equal(first.begin(), first.end(), keys.begin()));
    QCOMPARE(keys.back(), std::string("fc.1.bias"));
    std::map<std::string, torch::Tensor> own;
    for (const auto &p : net->named_parameters())
        own[trainlab::pytorchKey(p.key())] = p.value();
    for (const auto &b : net->named_buffers())
        own[trainlab::pytorchKey(b.key())] = b.value();
    for (const auto &entry : dict) {
        const torch::Tensor t = entry.value().toTensor();
        const torch::Tensor &mine = own.at(entry.key().toStringRef());
        QVERIFY2(t.scalar_type() == mine.scalar_type() && t.equal(mine), entry.key().toStringRef().c_str());
    }
    QCOMPARE(dict.at("1.num_batches_tracked").toTensor().item<std::int64_t>(), std::int64_t(3));
}

void tst_Evaluation::exportWritesTheRunsWeights()
{
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString();
    writePulloverRun(run);
    const trainlab::ExportResult r = trainlab::exportPyTorch(run, "", run + "/model.pth");
    QCOMPARE(r.checkpoint, std::string("checkpoint.pt"));
    QCOMPARE(r.epoch, 4);
    const std::string bytes = readAll(run + "/model.pth");
    QCOMPARE(static_cast<std::int64_t>(bytes.size()), r.bytes);
    const auto dict = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toGenericDict();
    QCOMPARE(r.tensors, dict.size());
    QCOMPARE(dict.at("fc.1.bias").toTensor()[2].item<float>(), static_cast<float>(std::log(9.0)));
    try {
        trainlab::exportPyTorch(run, "", run + "/no/such/folder/model.pth");
        QFAIL("wrote into a folder that does not exist");
    } catch (const std::exception &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("no/such/folder/model.pth")), e.what());
    }
    // The same checkpoint as ONNX, saying where it came from and what its outputs are.
    const trainlab::ExportResult o = trainlab::exportOnnx(run + "/", "", run + "/model.onnx");
    QCOMPARE(o.checkpoint, std::string("checkpoint.pt"));
    const std::string onnx = readAll(run + "/model.onnx");
    QCOMPARE(static_cast<std::int64_t>(onnx.size()), o.bytes);
    const std::string source = std::filesystem::path(run).filename().string() + ", checkpoint.pt (epoch 4)";
    QVERIFY(onnx.find(source) != std::string::npos);
    QVERIFY(onnx.find("T-shirt/top,Trouser,Pullover") != std::string::npos);
    // A module it has no ONNX form for is refused by name, not written wrong.
    torch::nn::Sequential other;
    other->push_back("dropout", torch::nn::Dropout(0.5));
    try {
        trainlab::onnxModel(*other, 1, {});
        QFAIL("wrote a module without an ONNX form");
    } catch (const std::invalid_argument &e) {
        QVERIFY2(std::string(e.what()).find("\"dropout\"") != std::string::npos, e.what());
    }
}

namespace {

// Runs tests/<script> EXPORTED CHECK.pt with Debian's python3, CHECK.pt holding the first `count` test images of the
// sample and net's logits for them; returns the script's exit code and output.
std::pair<int, QString> pythonCheck(const char *script, const std::string &exported, torch::nn::Sequential &net, int count)
{
    const trainlab::DataBundle data = trainlab::loadData(trainlab::ExperimentConfig().dataset, 10);
    const torch::Tensor images = trainlab::toInput(data.test.images.slice(0, 0, count));
    torch::NoGradGuard noGrad;
    c10::Dict<std::string, at::Tensor> check;
    check.insert("images", images.contiguous());
    check.insert("logits", net->forward(images).contiguous());
    const std::vector<char> checkBytes = torch::pickle_save(check);
    const std::string checkPath = exported + ".check.pt";
    writeAll(checkPath, std::string(checkBytes.begin(), checkBytes.end()));
    QProcess python;
    python.setProcessChannelMode(QProcess::MergedChannels);
    python.start(QStringLiteral("/usr/bin/python3"), {QStringLiteral(TRAINLAB_SOURCE_DIR "/tests/") + QLatin1String(script),
                                                     QString::fromStdString(exported), QString::fromStdString(checkPath)});
    if (!python.waitForFinished(120000))
        python.kill();
    python.waitForFinished();
    const QString out = QString::fromUtf8(python.readAll());
    qInfo("%s", qPrintable(out.trimmed()));
    return {python.exitStatus() == QProcess::NormalExit ? python.exitCode() : -1, out};
}

} // namespace

// The exported file in Debian's PyTorch: bench/reference.py's model takes it strictly and gives TrainLab's logits.
void tst_Evaluation::pythonLoadsTheExport()
{
    SKIP_WHEN_SANITIZED();
    SKIP_WITHOUT_SYSTEM_PYTHON("torch", "TRAINLAB_PYTORCH_REQUIRED", "python3-torch");
    QTemporaryDir dir;
    auto net = trainedLookingModel();
    const std::string state = dir.filePath(QStringLiteral("state.pth")).toStdString();
    writeAll(state, trainlab::pytorchStateDict(*net));
    const auto [code, out] = pythonCheck("pytorch_roundtrip.py", state, net, 100);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains(QStringLiteral("100 images")), qPrintable(out));
}

// The ONNX export, checked by Debian's python3-onnx (schemas, shapes) and run node by node with PyTorch's ops.
void tst_Evaluation::onnxRunsLikeTheModel()
{
    SKIP_WHEN_SANITIZED();
    SKIP_WITHOUT_SYSTEM_PYTHON("torch, onnx", "TRAINLAB_PYTORCH_REQUIRED", "python3-torch, python3-onnx");
    QTemporaryDir dir;
    auto net = trainedLookingModel();
    trainlab::OnnxInfo info;
    info.classNames = trainlab::classNames(trainlab::ExperimentConfig());
    info.source = "a test";
    const std::string model = dir.filePath(QStringLiteral("model.onnx")).toStdString();
    writeAll(model, trainlab::onnxModel(*net, 1, info));
    const auto [code, out] = pythonCheck("onnx_roundtrip.py", model, net, 50);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains(QStringLiteral("50 images")), qPrintable(out));
}

void tst_Evaluation::imagesDecoded_data()
{
    QTest::addColumn<QString>("file");
    QTest::newRow("png") << "pullover.png";
    QTest::newRow("jpeg") << "pullover.jpg";
    QTest::newRow("bmp") << "pullover.bmp";
    QTest::newRow("pgm") << "pullover.pgm";
}

// The same picture in four formats: a Fashion-MNIST pullover, 4x larger and negated, on a white margin.
void tst_Evaluation::imagesDecoded()
{
    QFETCH(QString, file);
    const trainlab::GrayImage image = trainlab::readImageFile(testData(qPrintable(file)));
    QCOMPARE(image.width, 120);
    QCOMPARE(image.height, 140);
    QVERIFY(image.pixels.front() > 245);        // the white margin
    QVERIFY(trainlab::looksInverted(image));
    const trainlab::GrayImage reference = trainlab::readImageFile(testData("pullover.png"));
    double diff = 0.0;
    for (std::size_t i = 0; i < image.pixels.size(); ++i)
        diff += std::abs(int(image.pixels[i]) - int(reference.pixels[i]));
    QVERIFY2(diff / double(image.pixels.size()) < 3.0, qPrintable(QString::number(diff / double(image.pixels.size()))));
}

void tst_Evaluation::badImagesRefusedByName_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("message");
    QFile png(QString::fromStdString(testData("pullover.png")));
    QVERIFY(png.open(QIODevice::ReadOnly));
    const QByteArray real = png.readAll();
    QByteArray huge = real;
    // IHDR's width and height (big-endian, bytes 16-23): 20000 x 20000, refused before any pixel is decoded.
    const char size[] = {0, 0, 0x4e, 0x20, 0, 0, 0x4e, 0x20};
    huge.replace(16, 8, QByteArray(size, 8));
    QTest::newRow("text") << QByteArray("shirt, size M\n") << "not an image TrainLab can read";
    QTest::newRow("empty") << QByteArray() << "an empty file, not an image";
    QTest::newRow("truncated png") << real.left(real.size() / 2) << "cannot decode the image";
    QTest::newRow("too many pixels") << huge << "20000 x 20000 pixels is more than";
}

void tst_Evaluation::badImagesRefusedByName()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("photo.png")).toStdString();
    writeAll(path, bytes.toStdString());
    try {
        trainlab::readImageFile(path);
        QFAIL("decoded a file that is no usable image");
    } catch (const std::runtime_error &e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(QString::fromStdString(path) + ": "), e.what());
        QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
    }
}

// Negated, trimmed to the object and scaled back to 28 rows, the photo is the test image it was made from.
void tst_Evaluation::fashionInputUndoesAProductPhoto()
{
    const trainlab::GrayImage photo = trainlab::readImageFile(testData("pullover.png"));
    const trainlab::GrayImage input = trainlab::fashionInput(photo, true);
    QCOMPARE(input.width, 28);
    QCOMPARE(input.height, 28);
    trainlab::ExperimentConfig c;
    const trainlab::DataBundle data = trainlab::loadData(c.dataset, 10);
    const torch::Tensor original = data.test.images[2].contiguous();
    QCOMPARE(data.test.labels[2].item<std::int64_t>(), std::int64_t(2));   // a pullover
    const auto *expected = original.data_ptr<std::uint8_t>();
    double diff = 0.0;
    for (std::size_t i = 0; i < 28 * 28; ++i)
        diff += std::abs(int(input.pixels[i]) - int(expected[i]));
    QVERIFY2(diff / (28 * 28) < 6.0, qPrintable(QString::number(diff / (28 * 28))));
    const trainlab::GrayImage kept = trainlab::fashionInput(photo, false);
    QVERIFY(kept.pixels.front() > 245);         // not negated: the background stays white
}

void tst_Evaluation::classifiesWithTheRunsModel()
{
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString();
    writePulloverRun(run);
    const std::string notes = run + "/notes.txt";
    writeAll(notes, "not a picture");
    const trainlab::ClassifyResult r
        = trainlab::classifyImages(run, "", {testData("pullover.png"), notes, testData("pullover.jpg")});
    QCOMPARE(r.checkpoint, std::string("checkpoint.pt"));
    QCOMPARE(r.images.size(), size_t(3));
    const trainlab::Classification &png = r.images[0];
    QVERIFY(png.error.empty());
    QVERIFY(png.looksInverted && png.inverted);
    QCOMPARE(png.top.size(), size_t(3));
    QCOMPARE(png.top[0].first, 2);
    QVERIFY(qAbs(png.top[0].second - 0.5) < 1e-5);
    QCOMPARE(png.top[1].first, 0);              // the tied rest rank by class
    QVERIFY(qAbs(png.top[1].second - 0.5 / 9) < 1e-5);
    QVERIFY2(QString::fromStdString(r.images[1].error).contains(QStringLiteral("notes.txt: not an image")), r.images[1].error.c_str());
    QVERIFY(r.images[1].top.empty());
    QCOMPARE(r.images[2].top[0].first, 2);
    const std::string text = trainlab::formatClassification(r);
    QVERIFY2(QString::fromStdString(text).contains(QStringLiteral("50.0%  Pullover")), text.c_str());
    QVERIFY2(QString::fromStdString(text).contains(QStringLiteral("refused: ")), text.c_str());
    const trainlab::ClassifyResult kept = trainlab::classifyImages(run, "", {testData("pullover.png")}, trainlab::InvertMode::No);
    QVERIFY(kept.images[0].looksInverted && !kept.images[0].inverted);
}

QTEST_GUILESS_MAIN(tst_Evaluation)
#include "tst_evaluation.moc"
