#include "core/config.h"
#include "core/train/checkpoint.h"
#include "core/train/engine.h"
#include "core/train/hugepageallocator.h"
#include "core/train/model.h"

#include <torch/torch.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

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
    info.metrics = {{1, 2.0, 0.1, 0.2, 3.0, 4.0, {}, 0.05, {}}, {2, 1.5, 0.3, 0.4, 3.0, 4.0, {}, 0.1, {}}, {3, 1.0, 0.5, 0.6, 3.0, 4.0, {}, 0.025, {}}};
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

QTEST_APPLESS_MAIN(tst_Model)
#include "tst_model.moc"
