#include "core/train/optimizer.h"
#include "core/train/schedule.h"

#include <torch/nn/utils/clip_grad.h>

#include <torch/torch.h>

#include <QTest>

// The fused SGD and AdamW steps against LibTorch's own: same weights, same state, same saved state (issue 22); the
// learning-rate schedules and early stopping (issue 24).
class tst_Optimizer : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void equalsTorchSgd_data();
    void equalsTorchSgd();
    void stateSavesAsTorchSgd();
    void equalsTorchAdamW_data();
    void equalsTorchAdamW();
    void clipEqualsTorchClip_data();
    void clipEqualsTorchClip();
    void normAndBiasLeftUndecayed();
    void scheduleValues_data();
    void scheduleValues();
    void earlyStop_data();
    void earlyStop();
};

namespace {

torch::nn::Sequential smallNet()
{
    torch::manual_seed(7);
    return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).bias(false)),
                                 torch::nn::BatchNorm2d(4), torch::nn::Flatten(), torch::nn::Linear(4 * 6 * 6, 10));
}

// One step of a fixed random batch on the net, with gradients as an all-reduce leaves them.
void backward(torch::nn::Sequential &net, int step)
{
    torch::manual_seed(100 + step);
    const auto x = torch::randn({8, 1, 8, 8});
    const auto y = torch::randint(0, 10, {8});
    net->zero_grad();
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
}

double maxDifference(const std::vector<torch::Tensor> &a, const std::vector<torch::Tensor> &b)
{
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
    return worst;
}

} // namespace

void tst_Optimizer::equalsTorchSgd_data()
{
    QTest::addColumn<double>("momentum");
    QTest::addColumn<double>("weightDecay");
    QTest::addColumn<bool>("nesterov");
    QTest::newRow("the chapter's: no momentum") << 0.0 << 0.0 << false;
    QTest::newRow("momentum 0.9") << 0.9 << 0.0 << false;
    QTest::newRow("momentum 0.9, weight decay 5e-4") << 0.9 << 5e-4 << false;
    QTest::newRow("weight decay alone") << 0.0 << 1e-3 << false;
    QTest::newRow("Nesterov") << 0.9 << 5e-4 << true;
}

void tst_Optimizer::equalsTorchSgd()
{
    QFETCH(double, momentum);
    QFETCH(double, weightDecay);
    QFETCH(bool, nesterov);
    auto reference = smallNet();
    auto fused = smallNet();
    torch::optim::SGDOptions options(0.1);
    options.momentum(momentum).weight_decay(weightDecay).nesterov(nesterov);
    torch::optim::SGD referenceSgd(reference->parameters(), options);
    torch::optim::SGD fusedSgd(fused->parameters(), options);
    for (int step = 0; step < 20; ++step) {
        backward(reference, step);
        backward(fused, step);
        referenceSgd.step();
        trainlab::fusedSgdStep(fusedSgd);
    }
    const double weights = maxDifference(reference->parameters(), fused->parameters());
    QVERIFY2(weights <= 1e-6, std::to_string(weights).c_str());
    // The weights moved: a step that did nothing would also be "equal".
    auto start = smallNet();
    QVERIFY(maxDifference(start->parameters(), fused->parameters()) > 1e-3);
    QCOMPARE(fusedSgd.state().size(), referenceSgd.state().size());
}

void tst_Optimizer::clipEqualsTorchClip_data()
{
    QTest::addColumn<double>("maxNorm");
    QTest::addColumn<bool>("fused");
    QTest::addColumn<bool>("clips");   // whether the norm is ever above maxNorm
    QTest::newRow("clipped, fused SGD") << 0.05 << true << true;
    QTest::newRow("clipped, LibTorch's SGD") << 0.05 << false << true;
    QTest::newRow("a bound never reached") << 1e6 << true << false;
}

// grad_clip_norm: the run's step (stepOptimizer) against LibTorch's clip_grad_norm_ and SGD over 20 steps with momentum.
void tst_Optimizer::clipEqualsTorchClip()
{
    QFETCH(double, maxNorm);
    QFETCH(bool, fused);
    QFETCH(bool, clips);
    trainlab::ExperimentConfig config;
    config.gradClipNorm = maxNorm;
    config.speed.fusedSgd = fused;
    trainlab::ExperimentConfig noClip = config;
    noClip.gradClipNorm = 0;
    auto reference = smallNet();
    auto clipped = smallNet();
    auto unclipped = smallNet();
    torch::optim::SGDOptions options(0.1);
    options.momentum(0.9);
    torch::optim::SGD referenceSgd(reference->parameters(), options);
    torch::optim::SGD clippedSgd(clipped->parameters(), options);
    torch::optim::SGD unclippedSgd(unclipped->parameters(), options);
    double lastNorm = 0;
    for (int step = 0; step < 20; ++step) {
        backward(reference, step);
        backward(clipped, step);
        backward(unclipped, step);
        torch::nn::utils::clip_grad_norm_(reference->parameters(), maxNorm);
        referenceSgd.step();
        trainlab::stepOptimizer(clippedSgd, 0.1, config);
        lastNorm = 0;
        for (const auto &p : clipped->parameters())
            lastNorm += p.grad().pow(2).sum().item<double>();
        trainlab::stepOptimizer(unclippedSgd, 0.1, noClip);
    }
    const double weights = maxDifference(reference->parameters(), clipped->parameters());
    QVERIFY2(weights <= 1e-6, std::to_string(weights).c_str());
    QVERIFY2(std::sqrt(lastNorm) <= maxNorm * (1 + 1e-5), std::to_string(std::sqrt(lastNorm)).c_str());
    const double fromUnclipped = maxDifference(unclipped->parameters(), clipped->parameters());
    QVERIFY2(clips ? fromUnclipped > 1e-3 : fromUnclipped == 0.0, std::to_string(fromUnclipped).c_str());
}

// Checkpoints hold the optimizer's state: saved after fused steps, it loads into LibTorch's SGD and goes on alike.
void tst_Optimizer::stateSavesAsTorchSgd()
{
    auto a = smallNet();
    torch::optim::SGD sgdA(a->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
    for (int step = 0; step < 3; ++step) {
        backward(a, step);
        trainlab::fusedSgdStep(sgdA);
    }
    std::ostringstream saved;
    torch::save(sgdA, saved);
    auto b = smallNet();
    for (std::size_t i = 0; i < b->parameters().size(); ++i)
        b->parameters()[i].data().copy_(a->parameters()[i].data());
    torch::optim::SGD sgdB(b->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
    std::istringstream in(saved.str());
    torch::load(sgdB, in);
    QCOMPARE(sgdB.state().size(), a->parameters().size());
    backward(a, 3);
    backward(b, 3);
    trainlab::fusedSgdStep(sgdA);
    sgdB.step();
    const double d = maxDifference(a->parameters(), b->parameters());
    QVERIFY2(d <= 1e-6, std::to_string(d).c_str());
}

void tst_Optimizer::equalsTorchAdamW_data()
{
    QTest::addColumn<double>("beta1");
    QTest::addColumn<double>("beta2");
    QTest::addColumn<double>("eps");
    QTest::addColumn<double>("weightDecay");
    QTest::addColumn<bool>("lateParameter");   // the last parameter has no gradient in the first step
    QTest::newRow("PyTorch's defaults, weight decay 0.01") << 0.9 << 0.999 << 1e-8 << 0.01 << false;
    QTest::newRow("no weight decay") << 0.9 << 0.999 << 1e-8 << 0.0 << false;
    QTest::newRow("betas 0.8, 0.99, eps 1e-6") << 0.8 << 0.99 << 1e-6 << 0.05 << false;
    // Its step count lags the others': the fused step hands that group to AdamW::step, which counts per parameter.
    QTest::newRow("a parameter first stepped later") << 0.9 << 0.999 << 1e-8 << 0.01 << true;
}

// The run's AdamW (makeOptimizer, stepOptimizer with the fused step) against LibTorch's AdamW over 20 steps, then its
// state saved and loaded into LibTorch's AdamW, which takes the next step alike.
void tst_Optimizer::equalsTorchAdamW()
{
    QFETCH(double, beta1);
    QFETCH(double, beta2);
    QFETCH(double, eps);
    QFETCH(double, weightDecay);
    QFETCH(bool, lateParameter);
    trainlab::ExperimentConfig config;
    config.optimizer = "adamw";
    config.learningRate = 0.01;
    config.adamBeta1 = beta1;
    config.adamBeta2 = beta2;
    config.adamEps = eps;
    config.weightDecay = weightDecay;
    QVERIFY(config.speed.fusedSgd);
    auto reference = smallNet();
    auto fused = smallNet();
    torch::optim::AdamW referenceAdamW(reference->parameters(), torch::optim::AdamWOptions(0.01)
                                                                    .betas(std::make_tuple(beta1, beta2))
                                                                    .eps(eps)
                                                                    .weight_decay(weightDecay));
    const auto fusedAdamW = trainlab::makeOptimizer(*fused, config);
    QVERIFY(dynamic_cast<torch::optim::AdamW *>(fusedAdamW.get()));
    for (int step = 0; step < 20; ++step) {
        backward(reference, step);
        backward(fused, step);
        if (lateParameter && step == 0) {
            reference->parameters().back().mutable_grad() = torch::Tensor();
            fused->parameters().back().mutable_grad() = torch::Tensor();
        }
        referenceAdamW.step();
        trainlab::stepOptimizer(*fusedAdamW, 0.01, config);
    }
    const double weights = maxDifference(reference->parameters(), fused->parameters());
    QVERIFY2(weights <= 1e-6, std::to_string(weights).c_str());
    auto start = smallNet();
    QVERIFY(maxDifference(start->parameters(), fused->parameters()) > 1e-3);
    QCOMPARE(fusedAdamW->state().size(), referenceAdamW.state().size());

    std::ostringstream saved;
    torch::save(*fusedAdamW, saved);
    auto copy = smallNet();
    for (std::size_t i = 0; i < copy->parameters().size(); ++i)
        copy->parameters()[i].data().copy_(fused->parameters()[i].data());
    torch::optim::AdamW loaded(copy->parameters(), torch::optim::AdamWOptions(0.01)
                                                        .betas(std::make_tuple(beta1, beta2))
                                                        .eps(eps)
                                                        .weight_decay(weightDecay));
    std::istringstream in(saved.str());
    torch::load(loaded, in);
    backward(fused, 20);
    backward(copy, 20);
    trainlab::stepOptimizer(*fusedAdamW, 0.01, config);
    loaded.step();
    const double next = maxDifference(fused->parameters(), copy->parameters());
    QVERIFY2(next <= 1e-6, std::to_string(next).c_str());
}

void tst_Optimizer::scheduleValues_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<double>("warmup");
    QTest::addColumn<qint64>("step");
    QTest::addColumn<double>("expected");
    // 10 epochs of 100 steps, learning_rate 0.1, step_epochs 3, step_factor 0.1, pct_start 0.3.
    QTest::newRow("constant") << "constant" << 0.0 << qint64(517) << 0.1;
    QTest::newRow("constant, warm-up step 0") << "constant" << 2.0 << qint64(0) << 0.1 / 200;
    QTest::newRow("constant, warm-up half way") << "constant" << 2.0 << qint64(99) << 0.05;
    QTest::newRow("constant, after warm-up") << "constant" << 2.0 << qint64(200) << 0.1;
    QTest::newRow("step, epoch 3") << "step" << 0.0 << qint64(299) << 0.1;
    QTest::newRow("step, epoch 4") << "step" << 0.0 << qint64(300) << 0.01;
    QTest::newRow("step, epoch 7") << "step" << 0.0 << qint64(600) << 0.001;
    QTest::newRow("cosine, start") << "cosine" << 0.0 << qint64(0) << 0.1;
    QTest::newRow("cosine, middle") << "cosine" << 0.0 << qint64(500) << 0.05;
    QTest::newRow("cosine, after 1 warm-up epoch") << "cosine" << 1.0 << qint64(100) << 0.1;
    QTest::newRow("cosine, middle of the rest") << "cosine" << 1.0 << qint64(550) << 0.05;
    QTest::newRow("one_cycle, start") << "one_cycle" << 0.0 << qint64(0) << 0.1 / 25;
    QTest::newRow("one_cycle, peak") << "one_cycle" << 0.0 << qint64(299) << 0.1;
    QTest::newRow("one_cycle, last") << "one_cycle" << 0.0 << qint64(999) << 0.1 / 25 / 1e4;
    QTest::newRow("past the end stays at the last") << "one_cycle" << 0.0 << qint64(5000) << 0.1 / 25 / 1e4;
}

void tst_Optimizer::scheduleValues()
{
    QFETCH(QString, kind);
    QFETCH(double, warmup);
    QFETCH(qint64, step);
    QFETCH(double, expected);
    trainlab::ExperimentConfig c;
    c.learningRate = 0.1;
    c.epochs = 10;
    c.schedule.kind = kind.toStdString();
    c.schedule.warmupEpochs = warmup;
    c.schedule.stepEpochs = 3;
    QVERIFY(c.validate().empty());
    const double lr = trainlab::learningRateAt(c, step, 100);
    QVERIFY2(std::abs(lr - expected) <= 1e-9 * expected,
             (std::to_string(lr) + " against " + std::to_string(expected)).c_str());
}

void tst_Optimizer::earlyStop_data()
{
    QTest::addColumn<QVector<double>>("accuracies");
    QTest::addColumn<int>("patience");
    QTest::addColumn<double>("minDelta");
    QTest::addColumn<int>("bestEpoch");
    QTest::newRow("off") << QVector<double>{0.5, 0.4, 0.3, 0.2} << 0 << 0.0 << 0;
    QTest::newRow("still rising") << QVector<double>{0.5, 0.6, 0.7} << 1 << 0.0 << 0;
    QTest::newRow("flat for patience") << QVector<double>{0.5, 0.8, 0.7, 0.8} << 2 << 0.0 << 2;
    QTest::newRow("one short of patience") << QVector<double>{0.5, 0.8, 0.7} << 2 << 0.0 << 0;
    QTest::newRow("gains below min_delta") << QVector<double>{0.80, 0.805, 0.809} << 2 << 0.01 << 1;
    QTest::newRow("a gain above min_delta resets") << QVector<double>{0.80, 0.805, 0.82} << 2 << 0.01 << 0;
}

void tst_Optimizer::earlyStop()
{
    QFETCH(QVector<double>, accuracies);
    QFETCH(int, patience);
    QFETCH(double, minDelta);
    QFETCH(int, bestEpoch);
    const std::vector<double> acc(accuracies.begin(), accuracies.end());
    QCOMPARE(trainlab::earlyStopBestEpoch(acc, {patience, minDelta}), bestEpoch);
}

// weight_decay_norm_and_bias false: with no gradient at all, a step is weight decay alone (SGD's and AdamW's
// decoupled one alike), so the kernels and the linear weight shrink by lr * wd and BatchNorm's weight and every bias
// stay; both steps (fused, LibTorch's) of both optimizers agree.
void tst_Optimizer::normAndBiasLeftUndecayed()
{
    trainlab::ExperimentConfig config;
    config.learningRate = 0.5;
    config.weightDecay = 0.1;
    config.weightDecayNormAndBias = false;
    for (const char *optimizer : {"sgd", "adamw"}) {
        for (const bool fused : {false, true}) {
            config.optimizer = optimizer;
            config.speed.fusedSgd = fused;
            auto net = smallNet();
            auto before = smallNet();
            const auto step = trainlab::makeOptimizer(*net, config);
            QCOMPARE(step->param_groups().size(), size_t(2));
            for (auto &p : net->parameters())
                p.mutable_grad() = torch::zeros_like(p);
            trainlab::stepOptimizer(*step, config.learningRate, config);
            const auto after = net->named_parameters();
            for (const auto &p : before->named_parameters()) {
                const double expected = p.value().dim() > 1 ? 1.0 - 0.5 * 0.1 : 1.0;
                QVERIFY2(torch::allclose(after[p.key()], p.value() * expected), (optimizer + (" " + p.key())).c_str());
            }
        }
    }
    config.weightDecayNormAndBias = true;
    auto net = smallNet();
    QCOMPARE(trainlab::makeOptimizer(*net, config)->param_groups().size(), size_t(1));
}

QTEST_GUILESS_MAIN(tst_Optimizer)
#include "tst_optimizer.moc"
