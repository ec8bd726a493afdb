#include "core/config.h"

#include <QTemporaryDir>
#include <QtTest>

using trainlab::ConfigError;
using trainlab::ExperimentConfig;

class tst_Config : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundTrip();
    void defaultsForMissingKeys();
    void invalid_data();
    void invalid();
    void validateListsEveryProblem();
    void presets();
    void unreadableFile();
};

void tst_Config::roundTrip()
{
    ExperimentConfig c;
    c.name = "round trip";
    c.dataset.trainLimit = 123;
    c.dataset.testLimit = 45;
    c.devices = {"cpu", "cpu"};
    c.batchSize = 96;
    c.learningRate = 1e-3;
    c.epochs = 7;
    c.momentum = 0.9;
    c.weightDecay = 5e-4;
    c.seed = 42;
    c.precision = "bf16";
    c.cpuThreads = 2;
    QTemporaryDir dir;
    const std::string path = dir.filePath("c.json").toStdString();
    c.save(path);
    const ExperimentConfig back = ExperimentConfig::load(path);
    QVERIFY(back == c);
    QCOMPARE(back.learningRate, 1e-3);
    QCOMPARE(back.devices.size(), size_t(2));
    QCOMPARE(back.seed, std::uint64_t(42));
    QVERIFY(!QFile::exists(dir.filePath("c.json.tmp")));
}

void tst_Config::defaultsForMissingKeys()
{
    const ExperimentConfig c = ExperimentConfig::fromJson(R"({"name": "x", "devices": ["cpu"]})");
    QCOMPARE(c.batchSize, std::int64_t(256));
    QCOMPARE(c.learningRate, 0.1);
    QCOMPARE(c.dataset.path, std::string("builtin:sample"));
    QVERIFY(c.validate().empty());
}

void tst_Config::invalid_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("batch zero") << R"({"batch_size": 0})" << "batch_size: must be at least 1, got 0";
    QTest::newRow("batch negative") << R"({"batch_size": -5})" << "batch_size: must be at least 1, got -5";
    QTest::newRow("batch string") << R"({"batch_size": "64"})" << "batch_size: must be an integer, got a string \"64\"";
    QTest::newRow("batch fraction") << R"({"batch_size": 1.5})" << "batch_size: must be an integer, got a number 1.5";
    QTest::newRow("lr zero") << R"({"learning_rate": 0})" << "learning_rate: must be finite and greater than 0, got 0";
    QTest::newRow("lr negative") << R"({"learning_rate": -0.1})" << "learning_rate: must be finite and greater than 0, got -0.1";
    QTest::newRow("lr string") << R"({"learning_rate": "fast"})" << "learning_rate: must be a number, got a string \"fast\"";
    QTest::newRow("epochs zero") << R"({"epochs": 0})" << "epochs: must be between 1 and 100000, got 0";
    QTest::newRow("epochs huge") << R"({"epochs": 100001})" << "epochs: must be between 1 and 100000, got 100001";
    QTest::newRow("unknown key") << R"({"batchsize": 3})" << "batchsize: unknown key";
    QTest::newRow("unknown nested") << R"({"dataset": {"folder": "x"}})" << "dataset.folder: unknown key";
    QTest::newRow("missing gpu") << R"({"devices": ["cuda:7"]})" << "devices[0]: is not on this machine";
    QTest::newRow("bad device") << R"({"devices": ["gpu0"]})" << "devices[0]: is not a device name";
    QTest::newRow("no devices") << R"({"devices": []})" << "devices: must list at least one device, got []";
    QTest::newRow("devices type") << R"({"devices": "cpu"})" << "devices: must be an array of strings";
    QTest::newRow("precision") << R"({"precision": "fp16"})" << "precision: must be \"fp32\" or \"bf16\", got \"fp16\"";
    QTest::newRow("momentum") << R"({"momentum": 1.0})" << "momentum: must be at least 0 and below 1, got 1";
    QTest::newRow("weight decay") << R"({"weight_decay": -1})" << "weight_decay: must be finite and at least 0, got -1";
    QTest::newRow("threads") << R"({"cpu_threads": -2})" << "cpu_threads: must be 0 (all logical cores) up to 1024, got -2";
    QTest::newRow("limit") << R"({"dataset": {"train_limit": -1}})" << "dataset.train_limit: must be 0 (all) or more, got -1";
    QTest::newRow("dataset folder") << R"({"dataset": {"path": "/no/such/folder"}})" << "dataset.path: no such folder, got \"/no/such/folder\"";
    QTest::newRow("arch") << R"({"model": {"arch": "vgg"}})" << "model.arch: must be \"resnet18\", got \"vgg\"";
    QTest::newRow("classes") << R"({"model": {"num_classes": 1}})" << "model.num_classes: must be between 2 and 100000, got 1";
    QTest::newRow("schema") << R"({"schema_version": 2})" << "schema_version: must be 1, got 2";
    QTest::newRow("batch below devices") << R"({"devices": ["cpu", "cpu", "cpu"], "batch_size": 2})" << "batch_size: must be at least the number of devices (3), got 2";
    QTest::newRow("not json") << R"({"batch_size": )" << "not valid JSON";
    QTest::newRow("not object") << R"([1, 2])" << "must be a JSON object, got an array";
    QTest::newRow("negative seed") << R"({"seed": -1})" << "seed: must be 0 or more, got -1";
}

void tst_Config::invalid()
{
    QFETCH(QString, json);
    QFETCH(QString, message);
    std::string all;
    try {
        const ExperimentConfig c = ExperimentConfig::fromJson(json.toStdString(), "test.json");
        for (const auto &p : c.validate())
            all += p + "\n";
        QVERIFY2(!all.empty(), "expected the config to be refused");
    } catch (const ConfigError &e) {
        all = e.what();
        QVERIFY2(all.rfind("test.json: ", 0) == 0, all.c_str());
    }
    QVERIFY2(all.find(message.toStdString()) != std::string::npos, all.c_str());
}

void tst_Config::validateListsEveryProblem()
{
    ExperimentConfig c;
    c.batchSize = 0;
    c.learningRate = 0;
    c.epochs = 0;
    c.devices = {"cuda:3"};
    const auto problems = c.validate();
    QCOMPARE(problems.size(), size_t(4));
    try {
        ExperimentConfig::fromJson(R"({"bogus": 1, "epochs": "ten"})", "f.json");
        QFAIL("expected ConfigError");
    } catch (const ConfigError &e) {
        QCOMPARE(e.problems().size(), size_t(2));
    }
}

void tst_Config::presets()
{
    const auto names = trainlab::presetNames();
    QCOMPARE(names, (std::vector<std::string>{"d2l-1gpu", "d2l-2gpu", "d2l-cpu", "quick-demo"}));
    const ExperimentConfig demo = trainlab::loadPreset("quick-demo");
    QVERIFY(demo.validate().empty());
    QCOMPARE(demo.devices, std::vector<std::string>{"cpu"});
    QCOMPARE(demo.dataset.path, std::string("builtin:sample"));
    // The chapter's experiment: the full dataset and the chapter's hyper-parameters.
    for (const char *name : {"d2l-1gpu", "d2l-2gpu", "d2l-cpu"}) {
        const ExperimentConfig c = trainlab::loadPreset(name);
        QCOMPARE(c.dataset.path, std::string("fashion-mnist"));
        QCOMPARE(c.dataset.trainLimit, std::int64_t(0));
        QCOMPARE(c.momentum, 0.0);
        QCOMPARE(c.precision, std::string("fp32"));
    }
    const ExperimentConfig cpu = trainlab::loadPreset("d2l-cpu");
    QCOMPARE(cpu.devices, std::vector<std::string>{"cpu"});
    QCOMPARE(cpu.batchSize, std::int64_t(256));
    QCOMPARE(cpu.learningRate, 0.1);
    const ExperimentConfig one = trainlab::loadPreset("d2l-1gpu");
    QCOMPARE(one.batchSize, std::int64_t(256));
    QCOMPARE(one.learningRate, 0.1);
    QCOMPARE(one.epochs, 10);
    const ExperimentConfig two = trainlab::loadPreset("d2l-2gpu");
    QCOMPARE(two.batchSize, std::int64_t(512));
    QCOMPARE(two.learningRate, 0.2);
    QCOMPARE(two.devices.size(), size_t(2));
    QVERIFY_THROWS_EXCEPTION(ConfigError, trainlab::loadPreset("nope"));
}

void tst_Config::unreadableFile()
{
    try {
        ExperimentConfig::load("/no/such/config.json");
        QFAIL("expected ConfigError");
    } catch (const ConfigError &e) {
        QVERIFY(std::string(e.what()).find("/no/such/config.json") != std::string::npos);
    }
}

QTEST_APPLESS_MAIN(tst_Config)
#include "tst_config.moc"
