#include "core/config.h"
#include "core/train/checkpoint.h"
#include "core/train/engine.h"
#include "core/train/hugepageallocator.h"
#include "core/train/model.h"
#include "core/train/precision.h"
#include "core/train/winograd.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

class tst_Model : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void parameterCount_data();
    void parameterCount();
    void outputShape();
    void d2lInit();
    void initSchemes_data();
    void initSchemes();
    void checkpointRoundTrip();
    void brokenCheckpoint();
    void olderCheckpointConfigStillMatches();
    void largeTensorsOnHugePages();
    void winogradConvolution_data();
    void winogradConvolution();
    void winogradDeclines();
    void winogradInTheModel();
    void weightHistogramsCountEveryValue();
};

void tst_Model::parameterCount_data()
{
    QTest::addColumn<int>("inChannels");
    QTest::addColumn<int>("classes");
    QTest::addColumn<qint64>("expected");
    QTest::newRow("d2l") << 1 << 10 << qint64(11175818);
    // Only the stem conv (3x3x(in)x64) and the head (512 x classes + classes) depend on the shape.
    QTest::newRow("rgb 100") << 3 << 100 << qint64(11175818 + 2 * 9 * 64 + 90 * 513);
}

void tst_Model::parameterCount()
{
    QFETCH(int, inChannels);
    QFETCH(int, classes);
    QFETCH(qint64, expected);
    auto net = trainlab::makeResNet18(inChannels, classes);
    QCOMPARE(trainlab::parameterCount(*net), expected);
}

void tst_Model::outputShape()
{
    auto net = trainlab::makeResNet18(1, 10);
    net->eval();
    torch::NoGradGuard noGrad;
    const auto y = net->forward(torch::rand({2, 1, 28, 28}));
    QCOMPARE(y.sizes().vec(), (std::vector<std::int64_t>{2, 10}));
}

void tst_Model::d2lInit()
{
    torch::manual_seed(0);
    auto net = trainlab::makeResNet18(1, 10);
    trainlab::initD2lWeights(*net);
    const auto params = net->named_parameters();
    const auto std = params["fc.weight"].std().item<double>();
    QVERIFY2(std > 0.008 && std < 0.012, std::to_string(std).c_str());
    const auto stem = params["conv.weight"].std().item<double>();
    QVERIFY2(stem > 0.008 && stem < 0.012, std::to_string(stem).c_str());
    QCOMPARE(params["bn.weight"].mean().item<double>(), 1.0);
    // d2l's Residual convs are lazy: init_weights skips them and they keep Kaiming-uniform, std 1/sqrt(3 fan_in).
    for (const char *name : {"resnet_block1_0.conv1.weight", "resnet_block2_0.conv3.weight", "resnet_block4_1.conv2.weight"}) {
        const torch::Tensor w = params[name];
        const double fanIn = static_cast<double>(w[0].numel());
        const double expected = 1.0 / std::sqrt(3.0 * fanIn), got = w.std().item<double>();
        QVERIFY2(std::abs(got - expected) < 0.1 * expected, (std::string(name) + ": std " + std::to_string(got)).c_str());
    }
}

void tst_Model::initSchemes_data()
{
    QTest::addColumn<QString>("scheme");
    QTest::addColumn<double>("stem");
    QTest::addColumn<double>("blockConv");
    QTest::addColumn<double>("shortcut");
    QTest::addColumn<double>("fc");
    // Expected weight std per layer: N(0, 0.01); Kaiming-uniform with a = sqrt(5), 1/sqrt(3 fan_in); sqrt(2 / fan_out).
    const auto uniform = [](double fanIn) { return 1.0 / std::sqrt(3.0 * fanIn); };
    const auto fanOut = [](double out) { return std::sqrt(2.0 / out); };
    QTest::newRow("d2l") << "d2l" << 0.01 << uniform(64 * 9) << uniform(64) << 0.01;
    QTest::newRow("pytorch") << "pytorch" << uniform(9) << uniform(64 * 9) << uniform(64) << uniform(512);
    QTest::newRow("kaiming") << "kaiming" << fanOut(64 * 9) << fanOut(64 * 9) << fanOut(128) << uniform(512);
}

void tst_Model::initSchemes()
{
    QFETCH(QString, scheme);
    torch::manual_seed(3);
    auto net = trainlab::makeResNet18(1, 10);
    trainlab::initWeights(*net, scheme.toStdString());
    const auto params = net->named_parameters();
    const char *names[] = {"conv.weight", "resnet_block1_0.conv1.weight", "resnet_block2_0.conv3.weight", "fc.weight"};
    QFETCH(double, stem);
    QFETCH(double, blockConv);
    QFETCH(double, shortcut);
    QFETCH(double, fc);
    const double wanted[] = {stem, blockConv, shortcut, fc};
    for (std::size_t i = 0; i < 4; ++i) {
        const double got = params[names[i]].std().item<double>();
        QVERIFY2(std::abs(got - wanted[i]) < 0.1 * wanted[i],
                 (std::string(names[i]) + ": std " + std::to_string(got) + ", expected " + std::to_string(wanted[i])).c_str());
    }
    QCOMPARE(params["resnet_block1_0.bn2.weight"].mean().item<double>(), 1.0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, trainlab::initWeights(*net, "xavier"));
}

void tst_Model::checkpointRoundTrip()
{
    torch::manual_seed(1);
    auto net = trainlab::makeResNet18(1, 10);
    trainlab::initD2lWeights(*net);
    torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    const auto x = torch::rand({4, 1, 28, 28});
    const auto loss = net->forward(x).sum();
    loss.backward();
    sgd.step();
    QTemporaryDir dir;
    const std::string path = dir.filePath("checkpoint.pt").toStdString();
    trainlab::CheckpointInfo info;
    info.epoch = 3;
    info.seed = 1;
    info.config = "{\"name\":\"x\"}";
    info.metrics = {{1, 2.0, 0.1, 0.2, 3.0, 4.0, {}, 0.05, {}}, {2, 1.5, 0.3, 0.4, 3.0, 4.0, {}, 0.1, {}},
                    {3, 1.0, 0.5, 0.6, 3.0, 4.0, {}, 0.025, {}, 0.0, 6.5}};
    trainlab::saveCheckpoint(path, *net, sgd, info);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"checkpoint.pt"});

    torch::manual_seed(99);
    auto fresh = trainlab::makeResNet18(1, 10);
    torch::optim::SGD freshSgd(fresh->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    const trainlab::CheckpointInfo back = trainlab::loadCheckpoint(path, *fresh, &freshSgd);
    QCOMPARE(back.epoch, 3);
    QCOMPARE(back.seed, std::uint64_t(1));
    QCOMPARE(back.config, info.config);
    QCOMPARE(back.metrics.size(), size_t(3));
    QCOMPARE(back.metrics[2].testAcc, 0.6);
    // The learning rate of each epoch too: a run resumed after a kill before its metrics.csv row keeps it.
    QCOMPARE(back.metrics[2].learningRate, 0.025);
    QCOMPARE(back.metrics[2].gradNorm, 6.5);
    // The momentum buffers came back too: one more identical step keeps the two nets equal.
    for (auto *n : {&net, &fresh}) {
        (*n)->train();
        (*n)->zero_grad(false);
        (*n)->forward(x).sum().backward();
    }
    sgd.step();
    freshSgd.step();
    net->eval();
    fresh->eval();
    torch::NoGradGuard noGrad;
    QVERIFY(torch::equal(net->forward(x), fresh->forward(x)));
}

void tst_Model::brokenCheckpoint()
{
    QTemporaryDir dir;
    const std::string path = dir.filePath("broken.pt").toStdString();
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not a checkpoint");
    f.close();
    auto net = trainlab::makeResNet18(1, 10);
    try {
        trainlab::loadCheckpoint(path, *net);
        QFAIL("expected an error");
    } catch (const std::runtime_error &e) {
        QVERIFY2(std::string(e.what()).find(path + ": not a TrainLab checkpoint") == 0, e.what());
    }
}

// A checkpoint written before schedules, label smoothing, Nesterov, early stopping and augmentation existed lacks their keys; at
// their defaults it is bound to the same experiment, so such a run still resumes. A changed value still differs.
void tst_Model::olderCheckpointConfigStillMatches()
{
    const std::string bound = trainlab::checkpointConfigJson(trainlab::ExperimentConfig{}.toJson());
    auto older = nlohmann::json::parse(bound);
    for (const char *key : {"nesterov", "label_smoothing", "schedule", "early_stopping", "augmentation"})
        QVERIFY(older.erase(key) == 1);
    QVERIFY(older["model"].erase("init") == 1);
    QVERIFY(older.dump() != bound);
    QCOMPARE(trainlab::currentBoundConfig(older.dump()), bound);
    older["momentum"] = 0.5;
    QVERIFY(trainlab::currentBoundConfig(older.dump()) != bound);
    QCOMPARE(trainlab::configDifferences(trainlab::currentBoundConfig(older.dump()), bound), std::vector<std::string>{"momentum"});
}

// The flags the kernel keeps for the mapping that holds address, from /proc/self/smaps ("" when not found).
static QByteArray mappingFlags(quintptr address)
{
    QFile smaps("/proc/self/smaps");
    if (!smaps.open(QIODevice::ReadOnly))
        return {};
    bool inside = false;
    for (const QByteArray &line : smaps.readAll().split('\n')) {
        const int dash = line.indexOf('-');
        const int space = line.indexOf(' ');
        if (dash > 0 && space > dash && !line.startsWith("VmFlags")) {
            bool ok1 = false, ok2 = false;
            const quintptr from = line.left(dash).toULongLong(&ok1, 16);
            const quintptr to = line.mid(dash + 1, space - dash - 1).toULongLong(&ok2, 16);
            if (ok1 && ok2)
                inside = address >= from && address < to;
        } else if (inside && line.startsWith("VmFlags:")) {
            return line.mid(8).trimmed();
        }
    }
    return {};
}

void tst_Model::largeTensorsOnHugePages()
{
    if (qEnvironmentVariable("TRAINLAB_HUGEPAGES") == "0")
        QSKIP("TRAINLAB_HUGEPAGES=0 keeps LibTorch's allocator");
    QVERIFY(trainlab::useHugePagesForLargeTensors());
    QVERIFY(trainlab::useHugePagesForLargeTensors());
    QVERIFY(trainlab::hostMemoryDescription().find("on transparent huge pages") != std::string::npos);
    const torch::Tensor large = torch::ones({3, 1 << 20});
    const auto address = reinterpret_cast<quintptr>(large.data_ptr());
    QCOMPARE(address % (2u << 20), quintptr(0));
    if (QFile::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
        const QByteArray flags = mappingFlags(address);
        QVERIFY2(flags.split(' ').contains("hg"), flags.constData());
    }
    const torch::Tensor small = torch::ones({16});
    QCOMPARE((large.sum() + small.sum()).item<double>(), 3.0 * (1 << 20) + 16);
    // oneDNN's convolutions allocate through the raw interface.
    const torch::Tensor images = torch::ones({8, 16, 64, 64});
    const torch::Tensor out = torch::conv2d(images, torch::ones({32, 16, 3, 3}), {}, 1, 1);
    QCOMPARE(out.index({0, 0, 10, 10}).item<double>(), 16.0 * 9);
}

namespace {

double relativeError(const torch::Tensor &got, const torch::Tensor &expected)
{
    return (got - expected).norm().item<double>() / expected.norm().item<double>();
}

} // namespace

void tst_Model::winogradConvolution_data()
{
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("size");
    QTest::addColumn<bool>("nhwc");
    QTest::newRow("NCHW 7x7") << 3 << 16 << 32 << 7 << false;
    QTest::newRow("NHWC 4x4") << 5 << 32 << 16 << 4 << true;
    QTest::newRow("NCHW 14x14, one image") << 1 << 16 << 16 << 14 << false;
}

// The output and all three gradients are conv2d's within Winograd's rounding (F(4x4, 3x3) in fp32: about 1e-6 of
// the norm), in the input's and the weight's own layouts; not bit for bit conv2d's, so the Winograd kernels ran.
void tst_Model::winogradConvolution()
{
    if (!trainlab::winogradAvailable())
        QSKIP(trainlab::winogradUnavailableReason().c_str());
    QFETCH(int, batch);
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(int, size);
    QFETCH(bool, nhwc);
    torch::manual_seed(3);
    const auto format = nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
    const torch::Tensor x0 = torch::randn({batch, in, size, size}).contiguous(format);
    const torch::Tensor w0 = (torch::randn({out, in, 3, 3}) * 0.1).contiguous(format);
    const torch::Tensor b0 = torch::randn({out});
    const torch::Tensor g = torch::randn({batch, out, size, size});
    std::vector<torch::Tensor> grads[2];
    torch::Tensor outputs[2];
    for (int wino = 0; wino < 2; ++wino) {
        const torch::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
        outputs[wino] = wino ? trainlab::winogradConv2d(x, w, b) : torch::conv2d(x, w, b, 1, 1);
        QVERIFY(outputs[wino].defined());
        outputs[wino].backward(g);
        grads[wino] = {x.grad(), w.grad(), b.grad()};
    }
    QVERIFY(outputs[1].is_contiguous(format));
    QVERIFY(grads[1][0].is_contiguous(format));
    QVERIFY(grads[1][1].is_contiguous(format));
    QVERIFY2(relativeError(outputs[1], outputs[0]) < 1e-4, std::to_string(relativeError(outputs[1], outputs[0])).c_str());
    QVERIFY(!torch::equal(outputs[1], outputs[0]));
    for (int i = 0; i < 3; ++i) {
        const double e = relativeError(grads[1][i], grads[0][i]);
        QVERIFY2(e < 1e-4, (std::to_string(i) + ": " + std::to_string(e)).c_str());
    }
}

// Where the kernels do not apply, winogradConv2d says so (an undefined tensor) and the caller runs conv2d.
void tst_Model::winogradDeclines()
{
    const torch::Tensor x = torch::randn({2, 16, 8, 8}), w = torch::randn({16, 16, 3, 3}), b = torch::randn({16});
    QVERIFY(!trainlab::winogradConv2d(x.to(torch::kDouble), w.to(torch::kDouble), b.to(torch::kDouble)).defined());
    QVERIFY(!trainlab::winogradConv2d(x, torch::randn({16, 16, 1, 1}), b).defined());
    QVERIFY(!trainlab::winogradConv2d(x, torch::randn({16, 8, 3, 3}), b).defined());
    QVERIFY(!trainlab::winogradConv2d(x, w, torch::Tensor()).defined());
    trainlab::setThreadPrecision(torch::kCPU, "bf16");
    const bool declined = !trainlab::winogradConv2d(x, w, b).defined();
    trainlab::setThreadPrecision(torch::kCPU, "fp32");
    QVERIFY2(declined, "under bf16 autocast the convolution is LibTorch's");
    QCOMPARE(trainlab::winogradConv2d(x, w, b).defined(), trainlab::winogradAvailable());
}

// ResNet-18 with its residual blocks' 3×3 stride-1 convolutions on Winograd gives the same logits and gradients
// within rounding (eval mode: train mode's BatchNorm over few images amplifies any rounding); the stem and the
// strided convolutions stay LibTorch's.
void tst_Model::winogradInTheModel()
{
    if (!trainlab::winogradAvailable())
        QSKIP(trainlab::winogradUnavailableReason().c_str());
    torch::manual_seed(0);
    auto plain = trainlab::makeResNet18(1, 10);
    torch::manual_seed(0);
    auto wino = trainlab::makeResNet18(1, 10);
    trainlab::setWinograd(*wino, true);
    plain->eval();
    wino->eval();
    const torch::Tensor x = torch::rand({4, 1, 28, 28});
    const torch::Tensor y = torch::randint(0, 10, {4}, torch::kInt64);
    const torch::Tensor a = plain->forward(x), b = wino->forward(x);
    QVERIFY2(relativeError(b, a) < 1e-3, std::to_string(relativeError(b, a)).c_str());
    QVERIFY(!torch::equal(a, b));
    torch::nn::functional::cross_entropy(a, y).backward();
    torch::nn::functional::cross_entropy(b, y).backward();
    auto expected = plain->named_parameters();
    for (const auto &p : wino->named_parameters()) {
        const double e = relativeError(p.value().grad(), expected[p.key()].grad());
        // A conv's bias before BatchNorm has a gradient of rounding only.
        if (p.value().dim() > 1)
            QVERIFY2(e < 1e-2, (p.key() + ": " + std::to_string(e)).c_str());
    }
    trainlab::setWinograd(*wino, false);
    QVERIFY(torch::equal(wino->forward(x), a));
}

// Each conv and fc weight once, its buckets counting every value between its lowest and highest, the sums as the
// tensor gives them; a constant tensor gets one bucket, biases and BatchNorm none.
void tst_Model::weightHistogramsCountEveryValue()
{
    torch::manual_seed(3);
    auto net = trainlab::makeResNet18(1, 10);
    trainlab::initD2lWeights(*net);
    torch::NoGradGuard noGrad;
    const auto params = net->named_parameters();
    torch::Tensor fc = params["fc.weight"];
    fc.fill_(0.25);
    const std::vector<trainlab::TbHistogram> histograms = trainlab::weightHistograms(*net, 16);
    std::size_t matrices = 0;
    for (const auto &p : params)
        matrices += p.value().dim() >= 2 ? 1 : 0;
    QCOMPARE(histograms.size(), matrices);
    for (const trainlab::TbHistogram &h : histograms) {
        const torch::Tensor w = params[h.tag.substr(std::string("weights/").size())];
        QCOMPARE(h.num, static_cast<double>(w.numel()));
        double counted = 0.0;
        for (const double c : h.counts)
            counted += c;
        QCOMPARE(counted, h.num);
        QCOMPARE(h.limits.size(), h.counts.size());
        QCOMPARE(h.limits.back(), h.max);
        QCOMPARE(h.min, w.min().item<double>());
        QVERIFY(std::abs(h.sumSquares - w.square().sum().item<double>()) <= 1e-4 * h.sumSquares);
    }
    const auto find = [&](const std::string &tag) {
        return std::find_if(histograms.begin(), histograms.end(), [&](const auto &h) { return h.tag == tag; });
    };
    const auto constant = find("weights/fc.weight");
    QVERIFY(constant != histograms.end());
    QCOMPARE(constant->counts, std::vector<double>{static_cast<double>(fc.numel())});
    QCOMPARE(constant->max, 0.25);
    // The stem's N(0, 0.01) values: 16 buckets, the middle ones fullest.
    const auto first = find("weights/conv.weight");
    QVERIFY(first != histograms.end());
    QCOMPARE(first->counts.size(), std::size_t(16));
    QVERIFY(first->counts[7] + first->counts[8] > first->counts[0] + first->counts[15]);
}

QTEST_APPLESS_MAIN(tst_Model)
#include "tst_model.moc"
