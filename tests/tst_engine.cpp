#include "core/train/engine.h"
#include "core/train/lrfinder.h"
#include "core/train/model.h"
#include "core/train/winograd.h"
#include "core/train/precision.h"

#include "testutil.h"

#include <torch/torch.h>

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QTest>

#include <algorithm>
#include <thread>

using trainlab::ExperimentConfig;

Q_DECLARE_METATYPE(trainlab::RunOptions::FaultPoint)

namespace {

trainlab::DataBundle syntheticData(std::int64_t train, std::int64_t test)
{
    torch::manual_seed(123);
    trainlab::DataBundle d;
    d.train.images = torch::randint(0, 256, {train, 28, 28}, torch::kInt64).to(torch::kUInt8);
    d.train.labels = torch::randint(0, 10, {train}, torch::kInt64);
    d.test.images = torch::randint(0, 256, {test, 28, 28}, torch::kInt64).to(torch::kUInt8);
    d.test.labels = torch::randint(0, 10, {test}, torch::kInt64);
    return d;
}

// Each class lights its own two rows over noise, so a small model learns it in a few epochs.
trainlab::DataBundle learnableData(std::int64_t train, std::int64_t test)
{
    trainlab::DataBundle d = syntheticData(train, test);
    for (auto *part : {&d.train, &d.test}) {
        part->images = part->images.div(4, "floor");
        for (std::int64_t i = 0; i < part->size(); ++i) {
            const std::int64_t c = part->labels[i].item<std::int64_t>();
            part->images[i].slice(0, 2 * c, 2 * c + 2).fill_(255);
        }
    }
    return d;
}

torch::nn::Sequential smallModel()
{
    return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 32), torch::nn::ReLU(),
                                 torch::nn::Linear(32, 10));
}

// 4-D weights with one input channel, 3×3 and a strided 1×1, and no BatchNorm: ResNet-18's BatchNorm over a
// handful of images makes its updates differ by a few percent between NCHW and NHWC kernels in PyTorch itself.
torch::nn::Sequential convModel()
{
    namespace nn = torch::nn;
    return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::ReLU(),
                          nn::Conv2d(nn::Conv2dOptions(8, 16, 1).stride(2)), nn::ReLU(), nn::Flatten(),
                          nn::Linear(16 * 14 * 14, 10));
}

// BatchNorm's running statistics move with every training forward.
torch::nn::Sequential normModel()
{
    namespace nn = torch::nn;
    return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(), nn::Flatten(),
                          nn::Linear(8 * 28 * 28, 10));
}

torch::nn::Sequential resnet()
{
    auto m = trainlab::makeResNet18(1, 10);
    trainlab::initD2lWeights(*m);
    return m;
}

// What a test changes from an ordinary run.
struct Knobs
{
    const trainlab::StopFlag *stop = nullptr;
    int controlLag = 0;
    double learningRate = 0.1;
    int faultRank = -1;
    long faultStep = -1;
    trainlab::RunOptions::FaultPoint faultPoint = trainlab::RunOptions::FaultPoint::Step;
    std::string precision = "fp32";
    trainlab::SpeedConfig speed{};
    trainlab::ScheduleConfig schedule{};
    double gradClipNorm = 0.0;
    double emaDecay = 0.0;
};

// Counts the dtypes flowing through it, to see autocast at work inside each replica's thread.
struct DtypeProbeImpl : torch::nn::Module
{
    explicit DtypeProbeImpl(std::shared_ptr<std::atomic<int>> bf16, std::shared_ptr<std::atomic<int>> other)
        : m_bf16(std::move(bf16)), m_other(std::move(other))
    {}
    torch::Tensor forward(torch::Tensor x)
    {
        ++*(x.scalar_type() == torch::kBFloat16 ? m_bf16 : m_other);
        return x;
    }
    std::shared_ptr<std::atomic<int>> m_bf16, m_other;
};
TORCH_MODULE(DtypeProbe);

trainlab::EngineResult train(int replicas, std::function<torch::nn::Sequential()> model, trainlab::DataBundle data,
                             int epochs, std::int64_t batch, RecordingObserver &observer, const Knobs &knobs = {})
{
    trainlab::EngineSetup setup;
    setup.config.devices = std::vector<std::string>(static_cast<size_t>(replicas), "cpu");
    setup.config.epochs = epochs;
    setup.config.batchSize = batch;
    setup.config.learningRate = knobs.learningRate;
    setup.config.momentum = 0.9;
    setup.config.collectiveTimeoutSeconds = 30;
    setup.data = std::move(data);
    setup.makeModel = std::move(model);
    setup.options.faultRank = knobs.faultRank;
    setup.options.faultStep = knobs.faultStep;
    setup.options.faultPoint = knobs.faultPoint;
    setup.options.controlLag = knobs.controlLag;
    setup.config.precision = knobs.precision;
    setup.config.speed = knobs.speed;
    setup.config.schedule = knobs.schedule;
    setup.config.gradClipNorm = knobs.gradClipNorm;
    setup.config.emaDecay = knobs.emaDecay;
    static const trainlab::StopFlag never{false};
    return trainlab::runEngine(std::move(setup), observer, knobs.stop ? *knobs.stop : never);
}

// An experiment on the first images of the built-in sample, on the CPU's two threads.
trainlab::ExperimentConfig sampleConfig(std::int64_t train, std::int64_t test, std::int64_t batch)
{
    trainlab::ExperimentConfig c;
    c.dataset.trainLimit = train;
    c.dataset.testLimit = test;
    c.batchSize = batch;
    c.cpuThreads = 2;
    return c;
}

double maxRelativeDifference(torch::nn::Module &a, torch::nn::Module &b)
{
    double worst = 0;
    auto pa = a.parameters(), pb = b.parameters();
    for (size_t i = 0; i < pa.size(); ++i) {
        const double diff = (pa[i] - pb[i]).abs().max().item<double>();
        const double scale = pa[i].abs().max().item<double>();
        worst = std::max(worst, diff / std::max(scale, 1e-12));
    }
    return worst;
}

} // namespace

class tst_Engine : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void replicasMatchOneReplica_data();
    void replicasMatchOneReplica();
    void weightAverageFollowsTheSteps();
    void resnetTwoReplicas();
    void stopMidEpoch_data();
    void stopMidEpoch();
    void failureInOneReplica_data();
    void failureInOneReplica();
    void divergingLossFails();
    void precisionInEveryReplica_data();
    void precisionInEveryReplica();
    void failureOutsideAStep_data();
    void failureOutsideAStep();
    void failureInOptimizerStep_data();
    void failureInOptimizerStep();
    void bf16FollowsFp32_data();
    void bf16FollowsFp32();
    void bf16SeesChangedWeights();
    void speedSwitchesKeepTheWeights_data();
    void speedSwitchesKeepTheWeights();
    void warmUpChangesNothing_data();
    void warmUpChangesNothing();
    void memoryLayouts_data();
    void memoryLayouts();
    void winogradRun();
    void scheduleReachesTheOptimizer();
    void lrFinderRuns();
    void lrFinderTakesTheRunsShares();
    void lrFinderSuggestion_data();
    void lrFinderSuggestion();
};

namespace {

// Lag 1 is what a CUDA world uses (the host reads a step's control slots one step later).
void addLagRows()
{
    QTest::addColumn<int>("lag");
    QTest::newRow("read at once") << 0;
    QTest::newRow("lagged read") << 1;
}

} // namespace

void tst_Engine::replicasMatchOneReplica_data()
{
    QTest::addColumn<int>("replicas");
    QTest::addColumn<qint64>("batch");
    QTest::addColumn<int>("lag");
    QTest::addColumn<double>("clip");   // grad_clip_norm
    QTest::newRow("2 replicas") << 2 << qint64(24) << 0 << 0.0;
    QTest::newRow("3 replicas") << 3 << qint64(24) << 0 << 0.0;
    QTest::newRow("3 replicas, uneven batch") << 3 << qint64(25) << 0 << 0.0;
    QTest::newRow("1 replica, lagged read") << 1 << qint64(24) << 1 << 0.0;
    QTest::newRow("2 replicas, lagged read") << 2 << qint64(24) << 1 << 0.0;
    QTest::newRow("3 replicas, uneven batch, lagged read") << 3 << qint64(25) << 1 << 0.0;
    // Clipping follows the all-reduce: every replica scales the averaged gradient, as one replica would.
    QTest::newRow("3 replicas, uneven batch, clipped") << 3 << qint64(25) << 0 << 0.05;
}

void tst_Engine::replicasMatchOneReplica()
{
    QFETCH(int, replicas);
    QFETCH(qint64, batch);
    QFETCH(int, lag);
    QFETCH(double, clip);
    const auto data = syntheticData(100, 30);
    RecordingObserver one, many;
    Knobs knobs;
    knobs.gradClipNorm = clip;
    auto single = train(1, smallModel, data, 2, batch, one, knobs);
    knobs.controlLag = lag;
    auto multi = train(replicas, smallModel, data, 2, batch, many, knobs);
    QCOMPARE(toString(single.result.status), "completed");
    QCOMPARE(toString(multi.result.status), "completed");
    QCOMPARE(multi.replicas.size(), size_t(replicas));
    const double diff = maxRelativeDifference(*single.replicas[0], *multi.replicas[0]);
    QVERIFY2(diff < 1e-5, std::to_string(diff).c_str());
    for (int r = 1; r < replicas; ++r)
        QCOMPARE(trainlab::weightsDigest(*multi.replicas[0]), trainlab::weightsDigest(*multi.replicas[size_t(r)]));
    // The untrained model differs from both, so the comparison above is not vacuous.
    torch::manual_seed(0);
    auto untrained = smallModel();
    QVERIFY(maxRelativeDifference(*single.replicas[0], *untrained) > 1e-3);
    // Epoch 2's log line on what clipping did: rank 0's, of the all-reduced gradient, as one replica's.
    const QRegularExpression clipLine(QStringLiteral("^epoch 2: gradient norm before clipping: mean ([0-9.e+-]+), largest ([0-9.e+-]+); "
                                                     "clipped to 0.05 in 100% of the 4 steps$"));
    const auto clipLog = [&](const RecordingObserver &o) {
        QList<QRegularExpressionMatch> found;
        for (const std::string &line : o.logs) {
            if (line.find("gradient norm") != std::string::npos)
                found << clipLine.match(QString::fromStdString(line));
        }
        return found;
    };
    const auto oneClip = clipLog(one), manyClip = clipLog(many);
    QCOMPARE(oneClip.size(), clip > 0 ? 2 : 0);
    QCOMPARE(manyClip.size(), oneClip.size());
    // Every run's epochs carry the averaged gradient's norm, the same on one replica as on several.
    for (size_t e = 0; e < one.epochs.size(); ++e) {
        QVERIFY(one.epochs[e].gradNorm > 0);
        QVERIFY(qAbs(many.epochs[e].gradNorm - one.epochs[e].gradNorm) <= 0.01 * one.epochs[e].gradNorm);
    }
    if (clip > 0) {
        QVERIFY2(oneClip[1].hasMatch() && manyClip[1].hasMatch(), qPrintable(manyClip[1].captured(0)));
        const double mean = oneClip[1].captured(1).toDouble(), largest = oneClip[1].captured(2).toDouble();
        QVERIFY(mean > 0.05 && mean <= largest);
        QVERIFY(qAbs(manyClip[1].captured(1).toDouble() - mean) <= 0.01 * mean);
        QVERIFY(qAbs(many.epochs[1].gradNorm - mean) <= 0.01 * mean);   // and the epoch's record (TensorBoard)
        RecordingObserver unclipped;
        auto plain = train(1, smallModel, data, 2, batch, unclipped);
        QVERIFY(maxRelativeDifference(*single.replicas[0], *plain.replicas[0]) > 1e-3);
    }
    QCOMPARE(many.started.worldSize, replicas);
    QCOMPARE(many.epochs.size(), one.epochs.size());
    for (size_t e = 0; e < one.epochs.size(); ++e) {
        QVERIFY(qAbs(one.epochs[e].testAcc - many.epochs[e].testAcc) < 1e-9);
        QVERIFY(qAbs(one.epochs[e].trainAcc - many.epochs[e].trainAcc) < 1e-9);
        QVERIFY(qAbs(one.epochs[e].trainLoss - many.epochs[e].trainLoss) < 1e-4 * one.epochs[e].trainLoss);
    }
    // Every batch of the epoch was counted, the last one reported.
    QCOMPARE(many.batches.back().batch, many.batches.back().batches);
}

void tst_Engine::resnetTwoReplicas()
{
    trainlab::DatasetConfig sample;
    sample.trainLimit = 64;
    sample.testLimit = 41;
    auto data = trainlab::loadData(sample, 10);
    RecordingObserver o;
    auto run = train(2, resnet, data, 1, 32, o);
    QCOMPARE(toString(run.result.status), "completed");
    auto &a = *run.replicas[0];
    auto &b = *run.replicas[1];
    QCOMPARE(trainlab::weightsDigest(a), trainlab::weightsDigest(b));
    const auto ba = a.named_buffers();
    QVERIFY(ba["bn.running_mean"].abs().sum().item<double>() > 0);
    // Single-replica evaluation of the same weights gives the sharded accuracy.
    torch::NoGradGuard noGrad;
    a.eval();
    auto *seq = dynamic_cast<torch::nn::SequentialImpl *>(&a);
    QVERIFY(seq);
    const auto logits = seq->forward(trainlab::toInput(data.test.images));
    const double acc = logits.argmax(1).eq(data.test.labels).sum().item<double>() / 41.0;
    QCOMPARE(run.result.epochs.at(0).testAcc, acc);
}

// With ema_decay the engine evaluates d * average + (1 - d) * weights, updated after every step with d warmed up as
// min(decay, (1 + t) / (10 + t)). One step per epoch, so the average follows from the weights before and after each.
void tst_Engine::weightAverageFollowsTheSteps()
{
    const auto data = learnableData(24, 40);
    Knobs knobs;
    knobs.emaDecay = 0.9;
    RecordingObserver first, second, pair;
    auto one = train(1, smallModel, data, 1, 24, first, knobs);
    auto two = train(1, smallModel, data, 2, 24, second, knobs);
    QCOMPARE(toString(two.result.status), "completed");
    QCOMPARE(two.averages.size(), size_t(1));
    torch::manual_seed(0);   // the engine's master, seeded with the config's seed
    auto start = smallModel();
    const double d0 = 0.1, d1 = 2.0 / 11.0;
    const auto p0 = start->parameters(), p1 = one.replicas[0]->parameters(), p2 = two.replicas[0]->parameters();
    const auto after1 = one.averages[0]->parameters(), after2 = two.averages[0]->parameters();
    for (size_t i = 0; i < p0.size(); ++i) {
        const torch::Tensor expected1 = d0 * p0[i] + (1 - d0) * p1[i];
        QVERIFY(torch::allclose(after1[i], expected1, 1e-5, 1e-7));
        QVERIFY(torch::allclose(after2[i], d1 * expected1 + (1 - d1) * p2[i], 1e-5, 1e-7));
    }
    QVERIFY(maxRelativeDifference(*two.replicas[0], *two.averages[0]) > 1e-3);   // not vacuous
    QCOMPARE(std::count(second.logs.begin(), second.logs.end(),
                        "weight average: decay 0.9 after every step; the test accuracy is the average's"), 1);
    // Two replicas keep the same average as one.
    auto multi = train(2, smallModel, data, 2, 24, pair, knobs);
    QCOMPARE(toString(multi.result.status), "completed");
    QCOMPARE(multi.averages.size(), size_t(2));
    const double diff = maxRelativeDifference(*two.averages[0], *multi.averages[1]);
    QVERIFY2(diff < 1e-5, std::to_string(diff).c_str());
    QVERIFY(train(1, smallModel, data, 1, 24, first).averages.empty());   // off by default
    // The test accuracy is the average's.
    torch::NoGradGuard noGrad;
    const auto logits = two.averages[0]->forward(trainlab::toInput(data.test.images));
    QCOMPARE(second.epochs.back().testAcc, logits.argmax(1).eq(data.test.labels).sum().item<double>() / 40.0);
}

void tst_Engine::stopMidEpoch_data()
{
    addLagRows();
}

void tst_Engine::stopMidEpoch()
{
    QFETCH(int, lag);
    const auto data = syntheticData(4000, 20);
    RecordingObserver o;
    trainlab::StopFlag stop{false};
    trainlab::EngineResult run;
    const auto slow = [] {
        return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 512), torch::nn::ReLU(),
                                     torch::nn::Linear(512, 10));
    };
    std::thread worker([&] { run = train(2, slow, data, 20, 8, o, {&stop, lag}); });
    QTRY_VERIFY_WITH_TIMEOUT(o.batchCount.load() >= 2, 30000);
    QElapsedTimer timer;
    timer.start();
    stop = true;
    worker.join();
    QVERIFY2(timer.elapsed() < 5000, std::to_string(timer.elapsed()).c_str());
    QCOMPARE(toString(run.result.status), "stopped");
    QCOMPARE(trainlab::weightsDigest(*run.replicas[0]), trainlab::weightsDigest(*run.replicas[1]));
}

void tst_Engine::failureInOneReplica_data()
{
    addLagRows();
}

void tst_Engine::failureInOneReplica()
{
    QFETCH(int, lag);
    const auto data = syntheticData(100, 20);
    RecordingObserver o;
    QElapsedTimer timer;
    timer.start();
    auto run = train(3, smallModel, data, 2, 24, o, {nullptr, lag, 0.1, 2, 3});
    QVERIFY(timer.elapsed() < 20000);
    QCOMPARE(toString(run.result.status), "failed");
    QVERIFY2(run.result.error.find("rank 2 (cpu): injected failure at step 3") != std::string::npos,
             run.result.error.c_str());
}

void tst_Engine::divergingLossFails()
{
    const auto data = syntheticData(200, 20);
    std::string messages[2];
    for (int lag : {0, 1}) {
        RecordingObserver o;
        // No ReLU to go dead: with this step size the logits overflow float on the second batch.
        const auto linear = [] { return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 10)); };
        auto run = train(2, linear, data, 1, 20, o, {nullptr, lag, 1e38});
        QCOMPARE(toString(run.result.status), "failed");
        const std::string &error = run.result.error;
        QVERIFY2(error.rfind("the loss became ", 0) == 0 && error.find("try a lower learning_rate") != std::string::npos,
                 error.c_str());
        QCOMPARE(trainlab::weightsDigest(*run.replicas[0]), trainlab::weightsDigest(*run.replicas[1]));
        messages[lag] = error;
    }
    // The batch named is the one whose loss diverged, whether the host read it at once or a step later.
    QCOMPARE(messages[1], messages[0]);
}

void tst_Engine::failureOutsideAStep_data()
{
    using Point = trainlab::RunOptions::FaultPoint;
    QTest::addColumn<int>("replicas");
    QTest::addColumn<Point>("point");
    QTest::addColumn<int>("rank");
    QTest::addColumn<int>("lag");
    QTest::addColumn<QString>("error");
    QTest::addColumn<int>("epochsDone");
    QTest::newRow("setup, rank 1 of 3") << 3 << Point::Setup << 1 << 0 << "rank 1 (cpu): injected failure in setup" << 0;
    QTest::newRow("setup, rank 0 of 2") << 2 << Point::Setup << 0 << 0 << "rank 0 (cpu): injected failure in setup" << 0;
    QTest::newRow("setup, 1 replica") << 1 << Point::Setup << 0 << 0 << "rank 0 (cpu): injected failure in setup" << 0;
    QTest::newRow("evaluation, rank 1 of 2")
        << 2 << Point::Evaluate << 1 << 0 << "rank 1 (cpu): injected failure in the evaluation of epoch 1" << 0;
    QTest::newRow("end of epoch, rank 0 of 2")
        << 2 << Point::EpochEnd << 0 << 0 << "rank 0 (cpu): injected failure at the end of epoch 1" << 1;
    QTest::newRow("end of epoch, rank 1 of 3, lagged read")
        << 3 << Point::EpochEnd << 1 << 1 << "rank 1 (cpu): injected failure at the end of epoch 1" << 1;
}

// A rank failing where no gradient all-reduce carries its error still fails the whole run at once,
// well inside the 30 s collective timeout the others would otherwise wait out.
void tst_Engine::failureOutsideAStep()
{
    QFETCH(int, replicas);
    QFETCH(trainlab::RunOptions::FaultPoint, point);
    QFETCH(int, rank);
    QFETCH(int, lag);
    QFETCH(QString, error);
    QFETCH(int, epochsDone);
    const auto data = syntheticData(100, 20);
    RecordingObserver o;
    QElapsedTimer timer;
    timer.start();
    auto run = train(replicas, smallModel, data, 2, 24, o, {nullptr, lag, 0.1, rank, 1, point});
    QVERIFY2(timer.elapsed() < 15000, std::to_string(timer.elapsed()).c_str());
    QCOMPARE(toString(run.result.status), "failed");
    QVERIFY2(run.result.error.find(error.toStdString()) != std::string::npos, run.result.error.c_str());
    QCOMPARE(int(run.result.epochs.size()), epochsDone);
}

void tst_Engine::failureInOptimizerStep_data()
{
    QTest::addColumn<int>("replicas");
    QTest::addColumn<int>("rank");
    QTest::addColumn<int>("step");
    QTest::addColumn<int>("lag");
    // 100 images in batches of 24: steps 0..4 are epoch 1, step 4 its last.
    QTest::newRow("mid-epoch, rank 1 of 2") << 2 << 1 << 1 << 0;
    QTest::newRow("mid-epoch, rank 0 of 3, lagged read") << 3 << 0 << 2 << 1;
    QTest::newRow("last step of the epoch, rank 1 of 2") << 2 << 1 << 4 << 0;
    QTest::newRow("last step of the epoch, rank 2 of 3, lagged read") << 3 << 2 << 4 << 1;
    QTest::newRow("last step of the epoch, 1 replica") << 1 << 0 << 4 << 0;
}

// optimizer.step() runs after the step's slots were summed (issue 13, item 2: an out-of-memory there);
// its failure still reaches every rank through the next slots, or evaluation's, without a hang.
void tst_Engine::failureInOptimizerStep()
{
    QFETCH(int, replicas);
    QFETCH(int, rank);
    QFETCH(int, step);
    QFETCH(int, lag);
    const auto data = syntheticData(100, 20);
    RecordingObserver o;
    QElapsedTimer timer;
    timer.start();
    auto run = train(replicas, smallModel, data, 2, 24, o,
                     {nullptr, lag, 0.1, rank, step, trainlab::RunOptions::FaultPoint::OptimizerStep});
    QVERIFY2(timer.elapsed() < 15000, std::to_string(timer.elapsed()).c_str());
    QCOMPARE(toString(run.result.status), "failed");
    const std::string error = "rank " + std::to_string(rank) + " (cpu): injected failure in the optimizer step " + std::to_string(step);
    QVERIFY2(run.result.error.find(error) != std::string::npos, run.result.error.c_str());
    QVERIFY(run.result.epochs.empty());
}

void tst_Engine::precisionInEveryReplica_data()
{
    QTest::addColumn<QString>("precision");
    QTest::newRow("fp32") << "fp32";
    QTest::newRow("bf16") << "bf16";
}

// Autocast is thread-local: every replica's thread, not only the caller's, must switch it on.
void tst_Engine::precisionInEveryReplica()
{
    QFETCH(QString, precision);
    auto bf16 = std::make_shared<std::atomic<int>>(0), other = std::make_shared<std::atomic<int>>(0);
    const auto probed = [&] {
        return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 32), DtypeProbe(bf16, other),
                                     torch::nn::ReLU(), torch::nn::Linear(32, 10));
    };
    RecordingObserver o;
    Knobs knobs;
    knobs.precision = precision.toStdString();
    auto run = train(3, probed, syntheticData(60, 30), 1, 24, o, knobs);
    QCOMPARE(toString(run.result.status), "completed");
    // 3 steps x 3 replicas in training, and one forward per replica's shard in evaluation.
    if (precision == "bf16") {
        QCOMPARE(other->load(), 0);
        QVERIFY2(bf16->load() >= 12, std::to_string(bf16->load()).c_str());
    } else {
        QCOMPARE(bf16->load(), 0);
        QVERIFY2(other->load() >= 12, std::to_string(other->load()).c_str());
    }
    QCOMPARE(trainlab::weightsDigest(*run.replicas[0]), trainlab::weightsDigest(*run.replicas[2]));
}

void tst_Engine::bf16FollowsFp32_data()
{
    QTest::addColumn<int>("replicas");
    QTest::newRow("1 replica") << 1;
    QTest::newRow("2 replicas") << 2;
}

// bf16 must train the same weights fp32 does: with autocast's weight cache on, every step after the
// first ran on step 1's weights and the loss stayed near its start while fp32's fell.
void tst_Engine::bf16FollowsFp32()
{
    QFETCH(int, replicas);
    const auto data = learnableData(400, 100);
    std::vector<std::vector<trainlab::EpochMetrics>> curves;
    for (const char *precision : {"fp32", "bf16"}) {
        RecordingObserver o;
        Knobs knobs;
        knobs.precision = precision;
        knobs.learningRate = 0.05;
        auto run = train(replicas, smallModel, data, 3, 40, o, knobs);
        QCOMPARE(toString(run.result.status), "completed");
        curves.push_back(run.result.epochs);
    }
    const auto &fp32 = curves[0], &bf16 = curves[1];
    QVERIFY2(fp32.back().trainLoss < 0.5 * fp32.front().trainLoss, std::to_string(fp32.back().trainLoss).c_str());
    for (std::size_t e = 0; e < fp32.size(); ++e) {
        const std::string what = "epoch " + std::to_string(e + 1) + ": fp32 loss " + std::to_string(fp32[e].trainLoss)
                                 + ", bf16 loss " + std::to_string(bf16[e].trainLoss);
        QVERIFY2(std::abs(bf16[e].trainLoss - fp32[e].trainLoss) < 0.1 * fp32[e].trainLoss + 0.02, what.c_str());
        QVERIFY2(std::abs(bf16[e].testAcc - fp32[e].testAcc) <= 0.05, what.c_str());
    }
}

// The thread's bf16 autocast sees an in-place weight update (what optimizer.step() does) at the next forward.
void tst_Engine::bf16SeesChangedWeights()
{
    torch::manual_seed(3);
    torch::nn::Linear layer(16, 4);
    const torch::Tensor x = torch::rand({2, 16});
    trainlab::setThreadPrecision(torch::kCPU, "bf16");
    const torch::Tensor before = layer->forward(x).to(torch::kFloat32);
    {
        torch::NoGradGuard noGrad;
        layer->weight.add_(1.0);
    }
    const torch::Tensor after = layer->forward(x).to(torch::kFloat32);
    const bool isBf16 = layer->forward(x).scalar_type() == torch::kBFloat16;
    trainlab::setThreadPrecision(torch::kCPU, "fp32");
    QVERIFY(isBf16);
    QVERIFY2((after - before).abs().max().item<double>() > 1.0, "bf16 forward still used the old weights");
    QCOMPARE(layer->forward(x).scalar_type(), torch::kFloat32);
}

void tst_Engine::speedSwitchesKeepTheWeights_data()
{
    QTest::addColumn<int>("replicas");
    QTest::addColumn<QString>("channelsLast");
    QTest::addColumn<bool>("fusedSgd");
    QTest::newRow("channels_last on") << 1 << "on" << true;
    QTest::newRow("channels_last on, 2 replicas") << 2 << "on" << true;
    QTest::newRow("SGD loop") << 1 << "off" << false;
}

// A speed switch changes how a step runs, never what it computes: the weights after two epochs of four steps
// (momentum) equal the default path's within float rounding.
void tst_Engine::speedSwitchesKeepTheWeights()
{
    QFETCH(int, replicas);
    QFETCH(QString, channelsLast);
    QFETCH(bool, fusedSgd);
    const auto data = syntheticData(64, 24);
    Knobs plain, changed;
    plain.learningRate = changed.learningRate = 0.05;
    plain.speed.channelsLast = "off";
    changed.speed.channelsLast = channelsLast.toStdString();
    changed.speed.fusedSgd = fusedSgd;
    RecordingObserver a, b;
    auto base = train(1, convModel, data, 2, 16, a, plain);
    auto other = train(replicas, convModel, data, 2, 16, b, changed);
    QCOMPARE(toString(base.result.status), "completed");
    QCOMPARE(toString(other.result.status), "completed");
    const auto stem = other.replicas[0]->named_parameters()["0.weight"];
    QCOMPARE(stem.stride(1) == 1, channelsLast == "on");
    const double diff = maxRelativeDifference(*base.replicas[0], *other.replicas[0]);
    QVERIFY2(diff < 1e-5, std::to_string(diff).c_str());
    torch::manual_seed(0);
    QVERIFY(maxRelativeDifference(*base.replicas[0], *convModel()) > 1e-3);
    QVERIFY(qAbs(a.epochs.at(0).trainLoss - b.epochs.at(0).trainLoss) < 1e-4 * a.epochs.at(0).trainLoss);
    QCOMPARE(a.epochs.at(0).testAcc, b.epochs.at(0).testAcc);
}

void tst_Engine::warmUpChangesNothing_data()
{
    QTest::addColumn<int>("replicas");
    QTest::addColumn<int>("lag");
    QTest::newRow("1 replica") << 1 << 0;
    QTest::newRow("3 replicas, uneven shares, lagged read") << 3 << 1;
}

// The warm-up runs the step's shapes (16 images, then the last 6) and an evaluation batch before epoch 1, and
// evaluation pads its last chunk (9 of 25 test images) to the training shape: the weights stay bit for bit those of
// a run without it (BatchNorm's statistics put back, the gradients zeroed), and so do the accuracies.
void tst_Engine::warmUpChangesNothing()
{
    QFETCH(int, replicas);
    QFETCH(int, lag);
    const auto data = syntheticData(70, 25);
    Knobs cold, warm;
    cold.controlLag = warm.controlLag = lag;
    cold.speed.warmup = "off";
    warm.speed.warmup = "on";
    RecordingObserver a, b;
    auto base = train(replicas, normModel, data, 2, 16, a, cold);
    auto warmed = train(replicas, normModel, data, 2, 16, b, warm);
    QCOMPARE(toString(warmed.result.status), "completed");
    QCOMPARE(trainlab::weightsDigest(*warmed.replicas[0]), trainlab::weightsDigest(*base.replicas[0]));
    for (size_t e = 0; e < 2; ++e) {
        QCOMPARE(b.epochs.at(e).trainLoss, a.epochs.at(e).trainLoss);
        QCOMPARE(b.epochs.at(e).testAcc, a.epochs.at(e).testAcc);
    }
    const QString shapes = replicas == 1 ? QStringLiteral("steps of 16 and 6 images") : QStringLiteral("steps of 6 and 2 images");
    auto said = [](const RecordingObserver &o, const QString &text) {
        return std::any_of(o.logs.begin(), o.logs.end(), [&](const std::string &l) { return QString::fromStdString(l).contains(text); });
    };
    QVERIFY2(said(b, QStringLiteral("warm-up: ") + shapes), qPrintable(shapes));
    QVERIFY(!said(a, QStringLiteral("warm-up:")));
    // Epoch 1 carries the slowest replica's warm-up: rank 0's, the one logged, or more; no other epoch, no cold run.
    const double warmup = b.epochs.at(0).warmupSeconds;
    QVERIFY(warmup > 0);
    double logged = -1.0;
    for (const std::string &l : b.logs) {
        const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("warm-up: .* in ([0-9.]+) s")).match(QString::fromStdString(l));
        if (m.hasMatch())
            logged = m.captured(1).toDouble();
    }
    QVERIFY(logged >= 0);
    QVERIFY2(warmup >= logged - 0.005, qPrintable(QStringLiteral("%1 < %2").arg(warmup).arg(logged)));
    if (replicas == 1)
        QCOMPARE(QString::number(warmup, 'f', 2), QString::number(logged, 'f', 2));
    QCOMPARE(b.epochs.at(1).warmupSeconds, 0.0);
    QCOMPARE(a.epochs.at(0).warmupSeconds, 0.0);
}

// Epoch 2 at a step schedule's factor 1e-12 leaves the weights where epoch 1 put them: the schedule's rate is the
// one each step uses (momentum included, as the update is lr times the buffer).
void tst_Engine::scheduleReachesTheOptimizer()
{
    const auto data = syntheticData(64, 24);
    Knobs dropping;
    dropping.schedule.kind = "step";
    dropping.schedule.stepEpochs = 1;
    dropping.schedule.stepFactor = 1e-12;
    RecordingObserver a, b, c;
    auto oneEpoch = train(1, smallModel, data, 1, 16, a);
    auto dropped = train(1, smallModel, data, 2, 16, b, dropping);
    auto constant = train(1, smallModel, data, 2, 16, c);
    QCOMPARE(toString(dropped.result.status), "completed");
    QVERIFY2(maxRelativeDifference(*oneEpoch.replicas[0], *dropped.replicas[0]) < 1e-6,
             std::to_string(maxRelativeDifference(*oneEpoch.replicas[0], *dropped.replicas[0])).c_str());
    QVERIFY(maxRelativeDifference(*oneEpoch.replicas[0], *constant.replicas[0]) > 1e-3);
    QVERIFY(std::any_of(b.logs.begin(), b.logs.end(), [](const std::string &l) { return l.find("epoch 2: learning rate 1e-13") == 0; }));
}

void tst_Engine::memoryLayouts_data()
{
    QTest::addColumn<int>("layout");
    QTest::addColumn<bool>("lastStageNhwc");
    QTest::newRow("on") << int(trainlab::MemoryLayout::Nhwc) << true;
    QTest::newRow("on but resnet_block4") << int(trainlab::MemoryLayout::NhwcButLastStage) << false;
}

// The stem (one input channel) and the 1×1 shortcuts get NHWC strides too, which contiguous(ChannelsLast) leaves
// NCHW-looking; resnet_block4 stays NCHW where asked, from its input on; the output and gradients are the NCHW
// model's; a checkpoint of these weights loads into a plain model as the same values, and Nchw puts them back.
void tst_Engine::memoryLayouts()
{
    QFETCH(int, layout);
    QFETCH(bool, lastStageNhwc);
    torch::manual_seed(0);
    auto model = resnet();
    torch::manual_seed(0);
    auto plain = resnet();
    const std::string before = trainlab::weightsDigest(*model);
    QCOMPARE(trainlab::weightsDigest(*plain), before);
    trainlab::toMemoryLayout(*model, trainlab::MemoryLayout(layout));
    auto params = model->named_parameters();
    for (const auto &p : params) {
        const bool nhwc = p.key().rfind("resnet_block4", 0) != 0 || lastStageNhwc;
        if (p.value().dim() == 4)
            QVERIFY2(p.value().is_contiguous(nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous), p.key().c_str());
    }
    QCOMPARE(params["conv.weight"].size(1), 1);
    const auto image = trainlab::channelsLast(torch::zeros({2, 1, 28, 28}));
    QCOMPARE(image.stride(1), 1);
    QCOMPARE(image.stride(3), 1);
    QCOMPARE(trainlab::weightsDigest(*model), before);

    // Running statistics: BatchNorm over 8 images divides by the d2l stem's tiny spread, which makes float rounding
    // (kernels differ by layout) a 2 % difference in the stem's gradient.
    model->eval();
    plain->eval();
    torch::manual_seed(5);
    const torch::Tensor x = torch::rand({8, 1, 28, 28});
    const torch::Tensor y = torch::randint(0, 10, {8}, torch::kInt64);
    // Layer by layer, to see the layout resnet_block4 hands on.
    torch::Tensor out = trainlab::channelsLast(x);
    const auto names = model->named_children().keys();
    std::size_t i = 0;
    for (auto &layer : *model) {
        out = layer.forward(out);
        if (names.at(i++) == "resnet_block4_0")
            QCOMPARE(out.stride(1) == 1, lastStageNhwc);
    }
    QCOMPARE(i, names.size());
    torch::nn::functional::cross_entropy(out, y).backward();
    const torch::Tensor expected = plain->forward(x);
    torch::nn::functional::cross_entropy(expected, y).backward();
    QVERIFY2(torch::allclose(out, expected, 1e-4, 1e-4 * expected.abs().max().item<double>()), "the output differs from the NCHW model's");
    auto plainParams = plain->named_parameters();
    for (const auto &p : params) {
        const auto &g = p.value().grad(), &e = plainParams[p.key()].grad();
        QVERIFY2(torch::allclose(g, e, 1e-4, 1e-4 * e.abs().max().item<double>()), p.key().c_str());
    }

    std::ostringstream bytes;
    torch::serialize::OutputArchive archive;
    model->save(archive);
    archive.save_to(bytes);
    auto loaded = resnet();
    torch::serialize::InputArchive in;
    const std::string saved = bytes.str();
    in.load_from(saved.data(), saved.size());
    loaded->load(in);
    QCOMPARE(trainlab::weightsDigest(*loaded), before);
    trainlab::toMemoryLayout(*model, trainlab::MemoryLayout::Nchw);
    for (const auto &p : model->named_parameters())
        QVERIFY2(p.value().is_contiguous(), p.key().c_str());
}

// speed.winograd reaches the residual blocks of a CPU fp32 run and the log: the weights after two steps are not
// the LibTorch path's bit for bit, and the epoch's loss is the same within 1e-3 (the weights themselves spread by
// up to 16 %: BatchNorm over 8 images amplifies rounding; tst_model checks the gradients in eval mode).
void tst_Engine::winogradRun()
{
    if (!trainlab::winogradAvailable())
        QSKIP(trainlab::winogradUnavailableReason().c_str());
    const auto data = syntheticData(16, 8);
    Knobs on, off;
    off.speed.winograd = false;
    RecordingObserver a, b;
    auto plain = train(1, resnet, data, 1, 8, a, off);
    auto wino = train(1, resnet, data, 1, 8, b, on);
    QCOMPARE(toString(wino.result.status), "completed");
    const auto said = [](const RecordingObserver &o, const std::string &text) {
        return std::any_of(o.logs.begin(), o.logs.end(), [&](const std::string &l) { return l.rfind("speed: ", 0) == 0 && l.find(text) != std::string::npos; });
    };
    QVERIFY(said(b, "; Winograd convolutions"));
    QVERIFY(said(a, "; LibTorch's convolutions"));
    QVERIFY(wino.weightsDigest != plain.weightsDigest);
    const double loss = a.epochs.at(0).trainLoss;
    QVERIFY2(qAbs(b.epochs.at(0).trainLoss - loss) < 1e-3 * loss, std::to_string(b.epochs.at(0).trainLoss - loss).c_str());
    // A 1.7 % spread from channels_last alone; Winograd's rounding (1e-6 where LibTorch's is 2e-7) spreads further.
    const double diff = maxRelativeDifference(*plain.replicas[0], *wino.replicas[0]);
    QVERIFY2(diff < 0.3, std::to_string(diff).c_str());
}

// The range test: geometric rates from min to max, the loss smoothed with bias correction, a stop, a divergence,
// bad options named.
void tst_Engine::lrFinderRuns()
{
#ifdef TRAINLAB_SANITIZED
    // Its data is the built-in sample, read by instrumented code: 10 s and more under ASan for a plain index loop.
    QSKIP("the range test runs in the main build");
#endif
    trainlab::ExperimentConfig c = sampleConfig(30, 10, 8);
    trainlab::LrFinderOptions o;
    o.minLr = 1e-4;
    o.maxLr = 1e-2;
    o.steps = 10;
    trainlab::StopFlag stop{false};
    int reported = 0;
    const auto r = trainlab::findLearningRate(c, o, stop, [&](const trainlab::LrFinderPoint &) { ++reported; });
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.points.size(), size_t(10));
    QCOMPARE(reported, 10);
    QVERIFY(!r.diverged && !r.stopped);
    QCOMPARE(r.points.front().learningRate, 1e-4);
    QVERIFY(std::abs(r.points.back().learningRate - 1e-2) < 1e-12);
    QVERIFY(std::abs(r.points[5].learningRate / r.points[4].learningRate - std::pow(100.0, 1.0 / 9)) < 1e-9);
    QCOMPARE(r.points[0].smoothed, r.points[0].loss);
    const double second = (0.98 * 0.02 * r.points[0].loss + 0.02 * r.points[1].loss) / (1 - 0.98 * 0.98);
    QVERIFY(std::abs(r.points[1].smoothed - second) < 1e-9);
    QVERIFY(r.points[0].loss > 1.5 && r.points[0].loss < 3.5);   // ln 10 = 2.3 for an untrained 10-class model
    QVERIFY(trainlab::lrFinderCsv(r).rfind("step,learning_rate,loss,smoothed_loss\n1,0.0001,", 0) == 0);

    stop = true;
    const auto stopped = trainlab::findLearningRate(c, o, stop);
    QVERIFY(stopped.stopped && stopped.points.empty() && stopped.error.empty());

    o.steps = 3;
    o.minLr = 0;
    const auto bad = trainlab::findLearningRate(c, o, stop);
    QVERIFY2(bad.error.find("min_lr: must be a number above 0, got 0") != std::string::npos, bad.error.c_str());
    QVERIFY2(bad.error.find("steps: must be from 10 to 100000, got 3") != std::string::npos, bad.error.c_str());

    stop = false;
    o.minLr = 1e-4;
    // Rates up to 1e6 blow the loss up well before the last step.
    o.maxLr = 1e6;
    o.steps = 20;
    const auto blown = trainlab::findLearningRate(c, o, stop);
    QVERIFY2(blown.error.empty(), blown.error.c_str());
    QVERIFY(blown.diverged);
    QVERIFY2(blown.points.size() < 16, std::to_string(blown.points.size()).c_str());
}

// With two devices the test's first loss is the two-replica run's first step: BatchNorm over each device's share,
// not over the whole batch (the loss a single device gives, which differs).
void tst_Engine::lrFinderTakesTheRunsShares()
{
#ifdef TRAINLAB_SANITIZED
    QSKIP("the range test runs in the main build");
#endif
    trainlab::ExperimentConfig c = sampleConfig(16, 8, 16);
    trainlab::LrFinderOptions o;
    o.steps = 10;
    trainlab::StopFlag stop{false};
    const auto firstLoss = [&](std::vector<std::string> devices) {
        c.devices = std::move(devices);
        stop = false;
        const auto r = trainlab::findLearningRate(c, o, stop, [&](const trainlab::LrFinderPoint &) { stop = true; });
        return r.points.empty() ? -1.0 : r.points.front().loss;
    };
    const double two = firstLoss({"cpu", "cpu"}), one = firstLoss({"cpu"});
    RecordingObserver observer;
    auto run = train(2, resnet, trainlab::loadData(c.dataset, 10), 1, 16, observer);
    QCOMPARE(toString(run.result.status), "completed");
    const double runLoss = observer.epochs.at(0).trainLoss;   // one step: the loss before its update
    QVERIFY2(qAbs(two - runLoss) < 1e-4 * runLoss, qPrintable(QStringLiteral("%1 against %2").arg(two).arg(runLoss)));
    QVERIFY2(qAbs(one - runLoss) > 1e-3 * runLoss, qPrintable(QStringLiteral("%1 against %2").arg(one).arg(runLoss)));
}

void tst_Engine::lrFinderSuggestion_data()
{
    QTest::addColumn<QVector<double>>("smoothed");   // at rates 1e-5, 1e-4, ...
    QTest::addColumn<double>("lowest");
    QTest::addColumn<double>("suggested");
    QTest::newRow("falls then rises") << QVector<double>{2.3, 2.3, 2.2, 2.0, 1.5, 1.0, 0.8, 1.2, 2.0, 5.0} << 10.0 << 1.0;
    QTest::newRow("lowest at the last rate") << QVector<double>{2.3, 2.2, 2.1, 2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 1.3} << 1e4 << 1e3;
    QTest::newRow("only rises") << QVector<double>{1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9} << 1e-5 << 0.0;
    QTest::newRow("too few steps") << QVector<double>{2.3, 2.0, 1.0, 3.0} << 0.0 << 0.0;
}

void tst_Engine::lrFinderSuggestion()
{
    QFETCH(QVector<double>, smoothed);
    QFETCH(double, lowest);
    QFETCH(double, suggested);
    trainlab::LrFinderResult r;
    for (int i = 0; i < smoothed.size(); ++i)
        r.points.push_back({i + 1, 1e-5 * std::pow(10.0, i), smoothed[i], smoothed[i]});
    trainlab::suggestLearningRate(r);
    QVERIFY2(std::abs(r.lowestLossLr - lowest) <= 1e-9 * lowest, std::to_string(r.lowestLossLr).c_str());
    QVERIFY2(std::abs(r.suggestedLr - suggested) <= 1e-9 * suggested, std::to_string(r.suggestedLr).c_str());
}

QTEST_GUILESS_MAIN(tst_Engine)
#include "tst_engine.moc"
