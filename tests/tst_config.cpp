#include "core/config.h"

#include <torch/version.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

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
    void largestSeedRoundTrips();
    void validateReadsTheHeaders();
    void presets();
    void withSettings_data();
    void withSettings();
    void unreadableFile();
    void notAConfigFile_data();
    void notAConfigFile();
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
    c.nesterov = true;
    c.weightDecayNormAndBias = false;
    c.labelSmoothing = 0.1;
    c.gradClipNorm = 1.5;
    c.emaDecay = 0.999;
    c.schedule.kind = "cosine";
    c.schedule.warmupEpochs = 0.5;
    c.earlyStopping.patience = 3;
    c.earlyStopping.minDelta = 0.002;
    c.augmentation.flip = true;
    c.augmentation.cropPadding = 4;
    c.augmentation.erasing = 0.25;
    c.speed.channelsLast = "off";
    c.speed.fusedSgd = false;
    c.speed.cudaGraphs = true;
    c.speed.warmup = "on";
    c.speed.winograd = false;
    c.model.init = "pytorch";
    c.adamBeta1 = 0.85;
    c.adamBeta2 = 0.98;
    c.adamEps = 1e-6;
    QTemporaryDir dir;
    const std::string path = dir.filePath("c.json").toStdString();
    c.save(path);
    const ExperimentConfig back = ExperimentConfig::load(path);
    QVERIFY(back == c);
    QCOMPARE(back.learningRate, 1e-3);
    QCOMPARE(back.devices.size(), size_t(2));
    QCOMPARE(back.seed, std::uint64_t(42));
    QCOMPARE(back.speed.channelsLast, std::string("off"));
    QVERIFY(!back.speed.fusedSgd);
    QVERIFY(back.speed.cudaGraphs);
    QCOMPARE(back.speed.warmup, std::string("on"));
    QVERIFY(!back.speed.winograd);
    QVERIFY(!back.weightDecayNormAndBias);
    QCOMPARE(back.model.init, std::string("pytorch"));
    QCOMPARE(back.adamBeta2, 0.98);
    QCOMPARE(back.adamEps, 1e-6);
    QVERIFY(!QFile::exists(dir.filePath("c.json.tmp")));
    ExperimentConfig adamw;
    adamw.optimizer = "adamw";
    adamw.weightDecay = 0.05;
    QVERIFY(adamw.validate().empty());
    QCOMPARE(ExperimentConfig::fromJson(adamw.toJson()).optimizer, std::string("adamw"));
}

void tst_Config::defaultsForMissingKeys()
{
    const ExperimentConfig c = ExperimentConfig::fromJson(R"({"name": "x", "devices": ["cpu"]})");
    QCOMPARE(c.batchSize, std::int64_t(256));
    QCOMPARE(c.learningRate, 0.1);
    QCOMPARE(c.dataset.path, std::string("builtin:sample"));
    QCOMPARE(c.speed.channelsLast, std::string("auto"));
    QCOMPARE(c.model.init, std::string("d2l"));
    QVERIFY(c.speed.fusedSgd);
    QVERIFY(!c.speed.cudaGraphs);
    using trainlab::MemoryLayout;
    QVERIFY(c.speed.layout("cuda:0", "fp32") == MemoryLayout::Nhwc);
    QVERIFY(c.speed.layout("cpu", "bf16") == MemoryLayout::NhwcButLastStage);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    const std::string cpuFp32 = "off";
    QVERIFY(c.speed.layout("cpu", "fp32") == MemoryLayout::Nchw);
#else
    const std::string cpuFp32 = "on but resnet_block4";
    QVERIFY(c.speed.layout("cpu", "fp32") == MemoryLayout::NhwcButLastStage);
#endif
    QCOMPARE(c.speed.warmup, std::string("auto"));
    QVERIFY(c.speed.warmupOn("cuda:1"));
    QVERIFY(!c.speed.warmupOn("cpu"));
    QVERIFY(c.speed.winograd);
    QVERIFY(c.speed.winogradOn("cpu", "fp32"));
    QVERIFY(!c.speed.winogradOn("cpu", "bf16"));
    QVERIFY(!c.speed.winogradOn("cuda:0", "fp32"));
    QCOMPARE(c.speed.describe({"cuda:0", "cuda:1", "cpu", "cpu"}, "fp32", ""),
             "channels_last on cuda:0 cuda:1, " + cpuFp32 + " cpu; fused SGD; eager steps; warm-up on cuda:0 cuda:1; "
             "Winograd convolutions on cpu");
    QCOMPARE(c.speed.describe({"cpu"}, "fp32", ""), "channels_last " + cpuFp32 + "; fused SGD; eager steps; Winograd convolutions");
    QCOMPARE(c.speed.describe({"cpu"}, "fp32", "no AVX-512"),
             "channels_last " + cpuFp32 + "; fused SGD; eager steps; LibTorch's convolutions (no Winograd: no AVX-512)");
    QCOMPARE(c.speed.describe({"cpu", "cuda:0"}, "bf16", ""),
             std::string("channels_last on but resnet_block4 cpu, on cuda:0; fused SGD; eager steps; warm-up on cuda:0; "
                         "LibTorch's convolutions on cpu (Winograd is fp32 only)"));
    QCOMPARE(c.speed.describe({"cuda:0"}, "fp32", ""), std::string("channels_last on; fused SGD; eager steps; warm-up"));
    trainlab::SpeedConfig off;
    off.channelsLast = "off";
    off.winograd = false;
    QVERIFY(off.layout("cuda:0", "bf16") == MemoryLayout::Nchw);
    QVERIFY(!off.winogradOn("cpu", "fp32"));
    QCOMPARE(off.describe({"cuda:0", "cpu"}, "bf16", ""),
             std::string("channels_last off; fused SGD; eager steps; warm-up on cuda:0; LibTorch's convolutions on cpu"));
    off.channelsLast = "on";
    QVERIFY(off.layout("cpu", "fp32") == MemoryLayout::Nhwc);
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
    QTest::newRow("schedule kind") << R"({"schedule": {"kind": "linear"}})" << "schedule.kind: must be \"constant\", \"step\", \"cosine\" or \"one_cycle\", got \"linear\"";
    QTest::newRow("warm-up past the run") << R"({"epochs": 3, "schedule": {"warmup_epochs": 4}})" << "schedule.warmup_epochs: must be from 0 to the run's epochs (3), got 4";
    QTest::newRow("warm-up with one_cycle") << R"({"schedule": {"kind": "one_cycle", "warmup_epochs": 1}})" << "schedule.warmup_epochs: must be 0 with one_cycle (pct_start is its warm-up), got 1";
    QTest::newRow("step factor") << R"({"schedule": {"step_factor": 1.5}})" << "schedule.step_factor: must be above 0 and at most 1, got 1.5";
    QTest::newRow("pct_start") << R"({"schedule": {"pct_start": 1}})" << "schedule.pct_start: must be above 0 and below 1, got 1";
    QTest::newRow("optimizer") << R"({"optimizer": "adam"})" << "optimizer: must be \"sgd\" or \"adamw\", got \"adam\"";
    QTest::newRow("adam_beta1") << R"({"optimizer": "adamw", "adam_beta1": 1})" << "adam_beta1: must be at least 0 and below 1, got 1";
    QTest::newRow("adam_beta2") << R"({"adam_beta2": -0.5})" << "adam_beta2: must be at least 0 and below 1, got -0.5";
    QTest::newRow("adam_eps") << R"({"optimizer": "adamw", "adam_eps": 0})" << "adam_eps: must be above 0 and at most 1, got 0";
    QTest::newRow("momentum with adamw") << R"({"optimizer": "adamw", "momentum": 0.9})" << "momentum: must be 0 with optimizer \"adamw\" (its momentum is adam_beta1), got 0.9";
    QTest::newRow("nesterov with adamw") << R"({"optimizer": "adamw", "nesterov": true})" << "nesterov: is SGD's: must be false with optimizer \"adamw\", got true";
    QTest::newRow("nesterov without momentum") << R"({"nesterov": true})" << "nesterov: needs a momentum above 0, got true";
    QTest::newRow("norm and bias decay not a boolean") << R"({"weight_decay_norm_and_bias": "no"})" << "weight_decay_norm_and_bias: must be true or false";
    QTest::newRow("label smoothing") << R"({"label_smoothing": 1})" << "label_smoothing: must be at least 0 and below 1, got 1";
    QTest::newRow("negative clip norm") << R"({"grad_clip_norm": -0.5})" << "grad_clip_norm: must be 0 (off) or a norm above 0, got -0.5";
    QTest::newRow("ema decay 1") << R"({"ema_decay": 1})" << "ema_decay: must be 0 (off), or above 0 and below 1, got 1";
    QTest::newRow("negative ema decay") << R"({"ema_decay": -0.9})" << "ema_decay: must be 0 (off), or above 0 and below 1, got -0.9";
    QTest::newRow("ema decay text") << R"({"ema_decay": "high"})" << "ema_decay: must be a number, got a string \"high\"";
    QTest::newRow("crop padding") << R"({"augmentation": {"crop_padding": 15}})" << "augmentation.crop_padding: must be 0 (off) up to 14 pixels (half the image), got 15";
    QTest::newRow("erasing") << R"({"augmentation": {"erasing": 1.5}})" << "augmentation.erasing: must be a probability from 0 to 1, got 1.5";
    QTest::newRow("flip type") << R"({"augmentation": {"flip": 1}})" << "augmentation.flip: must be true or false, got an integer 1";
    QTest::newRow("augmentation unknown") << R"({"augmentation": {"rotate": 10}})" << "augmentation.rotate: unknown key";
    QTest::newRow("patience") << R"({"early_stopping": {"patience": -1}})" << "early_stopping.patience: must be 0 (off) up to 100000 epochs, got -1";
    QTest::newRow("channels_last") << R"({"speed": {"channels_last": "yes"}})" << "speed.channels_last: must be \"auto\", \"on\" or \"off\", got \"yes\"";
    QTest::newRow("warmup") << R"({"speed": {"warmup": "gpu"}})" << "speed.warmup: must be \"auto\", \"on\" or \"off\", got \"gpu\"";
    QTest::newRow("fused_sgd type") << R"({"speed": {"fused_sgd": "true"}})" << "speed.fused_sgd: must be true or false, got a string \"true\"";
    QTest::newRow("winograd type") << R"({"speed": {"winograd": 1}})" << "speed.winograd: must be true or false, got an integer 1";
    QTest::newRow("speed unknown") << R"({"speed": {"graphs": true}})" << "speed.graphs: unknown key";
    QTest::newRow("limit") << R"({"dataset": {"train_limit": -1}})" << "dataset.train_limit: must be 0 (all) or more, got -1";
    QTest::newRow("dataset folder") << R"({"dataset": {"path": "/no/such/folder"}})" << "dataset.path: no such folder, got \"/no/such/folder\"";
    QTest::newRow("arch") << R"({"model": {"arch": "vgg"}})" << "model.arch: must be \"resnet18\", got \"vgg\"";
    QTest::newRow("classes") << R"({"model": {"num_classes": 1}})" << "model.num_classes: must be between 2 and 100000, got 1";
    QTest::newRow("init") << R"({"model": {"init": "xavier"}})" << "model.init: must be \"d2l\", \"pytorch\" or \"kaiming\", got \"xavier\"";
    QTest::newRow("schema") << R"({"schema_version": 2})" << "schema_version: must be 1, got 2";
    QTest::newRow("batch below devices") << R"({"devices": ["cpu", "cpu", "cpu"], "batch_size": 2})" << "batch_size: must be at least the number of devices (3), got 2";
    QTest::newRow("not json") << R"({"batch_size": )" << "not valid JSON";
    QTest::newRow("not object") << R"([1, 2])" << "must be a JSON object, got an array";
    QTest::newRow("negative seed") << R"({"seed": -1})" << "seed: must be an integer from 0 to 9223372036854775807, got -1";
    QTest::newRow("negative float seed") << R"({"seed": -1.0})" << "seed: must be an integer from 0 to 9223372036854775807, got -1.0";
    QTest::newRow("fraction seed") << R"({"seed": 1.5})" << "seed: must be an integer, got a number 1.5";
    QTest::newRow("huge seed") << R"({"seed": 1e30})" << "seed: must be an integer from 0 to 9223372036854775807, got 1e30";
    QTest::newRow("seed above int64") << R"({"seed": 9223372036854775808})" << "seed: must be at most 9223372036854775807, got 9223372036854775808";
    QTest::newRow("lr beyond double") << R"({"learning_rate": 1e400})" << "learning_rate: number out of range (beyond ±1.8e308), got 1e400";
    QTest::newRow("limit beyond double") << R"({"dataset": {"test_limit": -1e400}})" << "dataset.test_limit: number out of range (beyond ±1.8e308), got -1e400";
    const QString hugeLiteral = QStringLiteral("1") + QString(400, QLatin1Char('0'));
    QTest::newRow("long literal cut") << R"({"momentum": )" + hugeLiteral + "}" << "momentum: number out of range (beyond ±1.8e308), got " + hugeLiteral.left(80) + "…";
    QTest::newRow("deep arrays") << R"({"name": )" + QString(100000, QLatin1Char('[')) + QString(100000, QLatin1Char(']')) + "}" << "nested deeper than 64 levels";
    QTest::newRow("deep objects") << QString(R"({"a": )").repeated(64) + "{}" + QString(64, QLatin1Char('}')) << "nested deeper than 64 levels";
    QTest::newRow("64 levels") << QString(R"({"a": )").repeated(63) + "{}" + QString(63, QLatin1Char('}')) << "a: unknown key";
    const QString longText(1000, QLatin1Char('x'));
    QTest::newRow("long string cut") << R"({"precision": ")" + longText + "\"}" << "precision: must be \"fp32\" or \"bf16\", got \"" + longText.left(80) + "…\"";
    QTest::newRow("long key cut") << "{\"" + longText + "\": 1}" << longText.left(80) + "…: unknown key";
    const QString longArray = "[" + QStringLiteral("1,").repeated(999) + "1]";
    QTest::newRow("long array cut") << R"({"name": )" + longArray + "}" << "name: must be a string, got an array " + longArray.left(80) + "…";
    QTest::newRow("epochs beyond int") << R"({"epochs": 4294967297})" << "epochs: must be an integer from 1 to 100000, got 4294967297";
    QTest::newRow("epochs float beyond int") << R"({"epochs": 3e9})" << "epochs: must be an integer from 1 to 100000, got 3e9";
    QTest::newRow("schema beyond int") << R"({"schema_version": 4294967297})" << "schema_version: must be 1, got 4294967297";
    QTest::newRow("threads beyond int") << R"({"cpu_threads": 4294967296})" << "cpu_threads: must be an integer from 0 to 1024, got 4294967296";
    QTest::newRow("timeout beyond int") << R"({"collective_timeout_s": 4294967596})" << "collective_timeout_s: must be an integer from 1 to 86400, got 4294967596";
    QTest::newRow("classes beyond int") << R"({"model": {"num_classes": 4294967306}})" << "model.num_classes: must be an integer from 2 to 100000, got 4294967306";
    QTest::newRow("channels beyond int") << R"({"model": {"in_channels": 4294967297}})" << "model.in_channels: must be an integer from 1 to 64, got 4294967297";
    QTest::newRow("batch beyond int64") << R"({"batch_size": 9223372036854775808})" << "batch_size: must be an integer from 1 to 1000000, got 9223372036854775808";
    QTest::newRow("limit float beyond int64") << R"({"dataset": {"train_limit": 1e19}})" << "dataset.train_limit: must be an integer from 0 to 9223372036854775807, got 1e19";
    QTest::newRow("limit beyond int64") << R"({"dataset": {"test_limit": 18446744073709551615}})" << "dataset.test_limit: must be an integer from 0 to 9223372036854775807, got 18446744073709551615";
    QTest::newRow("batch huge") << R"({"batch_size": 9223372036854775807})" << "batch_size: must be at most 1000000, got 9223372036854775807";
    QTest::newRow("in channels") << R"({"model": {"in_channels": 3}})" << "model.in_channels: must be 1 (Fashion-MNIST images are grayscale), got 3";
    QTest::newRow("cpu replicas beyond cores") << "{\"devices\": [" + QStringList(5000, QStringLiteral("\"cpu\"")).join(',') + "]}"
                                               << "devices: lists \"cpu\" 5000 times; at most";
    QTest::newRow("batch above data") << R"({"batch_size": 5000})" << "batch_size: must be at most the 2000 training images, got 5000";
    QTest::newRow("batch above limit") << R"({"batch_size": 200, "dataset": {"train_limit": 100}})" << "batch_size: must be at most the 100 training images, got 200";
    QTest::newRow("duplicate key") << R"({"epochs": 5, "epochs": 6})" << "epochs: duplicate key";
    QTest::newRow("duplicate nested key") << R"({"dataset": {"path": "builtin:sample", "path": "/"}})" << "dataset.path: duplicate key";
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
    // No value is echoed whole, however long.
    QVERIFY2(all.size() < 400, all.c_str());
}

void tst_Config::withSettings_data()
{
    QTest::addColumn<QStringList>("assignments");
    QTest::addColumn<QString>("json");      // what the configuration then holds (a fragment of its JSON), or
    QTest::addColumn<QString>("problem");   // the problem named
    QTest::newRow("a string") << QStringList{"optimizer=adamw"} << R"("optimizer": "adamw")" << "";
    QTest::newRow("a number") << QStringList{"learning_rate=1e-3"} << R"("learning_rate": 0.001)" << "";
    QTest::newRow("nested") << QStringList{"schedule.kind=cosine", "schedule.warmup_epochs=0.5"} << R"("warmup_epochs": 0.5)" << "";
    QTest::newRow("a list") << QStringList{R"(devices=["cpu", "cpu"])"} << R"("cpu",
    "cpu")" << "";
    QTest::newRow("an object") << QStringList{R"(augmentation={"flip": true})"} << R"("flip": true)" << "";
    QTest::newRow("text with spaces") << QStringList{"name=lr study 3"} << R"("name": "lr study 3")" << "";
    QTest::newRow("the last wins") << QStringList{"epochs=3", "epochs=4"} << R"("epochs": 4)" << "";
    QTest::newRow("no =") << QStringList{"adamw"} << "" << "--set adamw: must be KEY=VALUE, e.g. optimizer=adamw";
    QTest::newRow("unknown key") << QStringList{"optimiser=adamw"} << "" << "--set optimiser=adamw: optimiser: unknown key";
    QTest::newRow("unknown nested key") << QStringList{"schedule.type=cosine"} << "" << "--set schedule.type=cosine: schedule.type: unknown key";
    QTest::newRow("below a value") << QStringList{"epochs.max=3"} << "" << "--set epochs.max=3: epochs.max: unknown key";
    QTest::newRow("wrong type") << QStringList{"epochs=ten"} << "" << "--set epochs=ten: epochs: must be an integer, got a string \"ten\"";
    QTest::newRow("a second value smuggled in") << QStringList{R"(epochs=1, "seed": 2)"} << ""
                                                << R"(epochs: must be an integer, got a string "1, \"seed\": 2")";
    QTest::newRow("a duplicate key inside") << QStringList{R"(augmentation={"flip": true, "flip": false})"} << ""
                                            << "--set augmentation={\"flip\": true, \"flip\": false}: augmentation.flip: ";
}

// trainlab-cli's --set: a dotted key the file has, a JSON value or a string, read as strictly as a file.
void tst_Config::withSettings()
{
    QFETCH(QStringList, assignments);
    QFETCH(QString, json);
    QFETCH(QString, problem);
    std::vector<std::string> list;
    for (const QString &a : assignments)
        list.push_back(a.toStdString());
    try {
        const ExperimentConfig c = trainlab::withSettings(ExperimentConfig{}, list);
        QVERIFY2(problem.isEmpty(), "expected a refusal");
        QVERIFY2(c.toJson().find(json.toStdString()) != std::string::npos, c.toJson().c_str());
    } catch (const ConfigError &e) {
        QVERIFY2(!problem.isEmpty(), e.what());
        QVERIFY2(std::string(e.what()).find(problem.toStdString()) != std::string::npos, e.what());
    }
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

// What `run` would refuse in the files, validate says too, from the headers alone.
void tst_Config::validateReadsTheHeaders()
{
    QTemporaryDir dir;
    auto write = [&](const char *name, const QByteArray &bytes) {
        QFile f(dir.filePath(QString::fromLatin1(name)));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes);
    };
    ExperimentConfig c;
    c.dataset.path = dir.path().toStdString();
    auto problems = [&] {
        std::string all;
        for (const auto &p : c.validate())
            all += p + "\n";
        return all;
    };
    QVERIFY2(problems().find("dataset.path: missing: train-images-idx3-ubyte[.gz]") == 0, problems().c_str());
    const QByteArray imagesHead("\0\0\x08\x03\0\0\0\x0a\0\0\0\x1c\0\0\0\x1c", 16);
    const QByteArray labelsHead("\0\0\x08\x01\0\0\0\x0a", 8);
    write("train-images-idx3-ubyte", QByteArray("\0\0\x08\x01\0\0\0\x0a", 8));
    write("train-labels-idx1-ubyte", labelsHead);
    write("t10k-images-idx3-ubyte", imagesHead);
    write("t10k-labels-idx1-ubyte", labelsHead);
    QVERIFY2(problems().find("wrong magic number 2049, expected 2051") != std::string::npos, problems().c_str());
    write("train-images-idx3-ubyte", QByteArray("\0\0\x08\x03\0\0\0\x0a\0\0\0\x04\0\0\0\x04", 16));
    QVERIFY2(problems().find("images of 4x4 pixels; TrainLab's ResNet-18 trains 8x8 up to 512x512") != std::string::npos, problems().c_str());
    write("train-images-idx3-ubyte", imagesHead);
    write("train-labels-idx1-ubyte", QByteArray("\0\0\x08\x01\0\0\0\x09", 8));
    QVERIFY2(problems().find("image and label counts differ") != std::string::npos, problems().c_str());
    write("train-labels-idx1-ubyte", labelsHead);
    c.batchSize = 10;
    QCOMPARE(problems(), std::string());
}

void tst_Config::largestSeedRoundTrips()
{
    ExperimentConfig c;
    c.seed = 9223372036854775807ULL;
    QVERIFY(c.validate().empty());
    const ExperimentConfig back = ExperimentConfig::fromJson(c.toJson());
    QCOMPARE(back.seed, c.seed);
    QVERIFY(back == c);
}

void tst_Config::presets()
{
    const auto names = trainlab::presetNames();
    QCOMPARE(names, (std::vector<std::string>{"d2l-1gpu", "d2l-2gpu", "d2l-cpu", "fmnist-fast", "quick-demo"}));
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
        QCOMPARE(c.model.init, std::string("d2l"));
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
    // Beyond the chapter: one GPU, a schedule with its own warm-up, augmentation, label smoothing, bf16.
    const ExperimentConfig fast = trainlab::loadPreset("fmnist-fast");
    for (const std::string &problem : fast.validate())   // only what this machine lacks: the full dataset, a GPU
        QVERIFY2(problem.rfind("dataset.path: ", 0) == 0 || problem.rfind("devices[0]: ", 0) == 0, problem.c_str());
    QCOMPARE(fast.schedule.kind, std::string("one_cycle"));
    QVERIFY(fast.augmentation.any());
    QVERIFY(fast.labelSmoothing > 0);
    QCOMPARE(fast.precision, std::string("bf16"));
    QCOMPARE(fast.epochs, 10);
    QCOMPARE(fast.model.init, std::string("pytorch"));
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

void tst_Config::notAConfigFile_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("message");
    QTest::newRow("directory") << "directory" << "is a directory, not a config file";
    QTest::newRow("fifo") << "fifo" << "not a regular file";
    QTest::newRow("device") << "/dev/zero" << "not a regular file";
    QTest::newRow("over 1 MB") << "big" << "is larger than 1 MB";
    QTest::newRow("1 MB exactly") << "limit" << "";
}

void tst_Config::notAConfigFile()
{
    QFETCH(QString, kind);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const bool existing = kind.startsWith(QLatin1Char('/'));
    const std::string path = existing ? kind.toStdString() : dir.filePath(kind).toStdString();
    if (kind == QLatin1String("directory")) {
        QVERIFY(QDir().mkdir(dir.filePath(kind)));
    } else if (kind == QLatin1String("fifo")) {
        QCOMPARE(::mkfifo(path.c_str(), 0600), 0);
    } else if (!existing) {
        // Valid JSON padded with spaces to the limit, or one byte past it.
        QFile f(dir.filePath(kind));
        QVERIFY(f.open(QIODevice::WriteOnly));
        const qint64 size = (1 << 20) + (kind == QLatin1String("big") ? 1 : 0);
        QVERIFY(f.write("{}" + QByteArray(size - 2, ' ')) == size);
    }
    try {
        ExperimentConfig::load(path);
        QVERIFY2(message.isEmpty(), "expected ConfigError");
    } catch (const ConfigError &e) {
        const std::string what = e.what();
        QVERIFY2(!message.isEmpty(), what.c_str());
        QVERIFY2(what.rfind(path + ": ", 0) == 0, what.c_str());
        QVERIFY2(what.find(message.toStdString()) != std::string::npos, what.c_str());
    }
}

QTEST_APPLESS_MAIN(tst_Config)
#include "tst_config.moc"
