#include "core/runs/report.h"
#include "core/sweeps/sweep.h"
#include "core/sweeps/sweepreport.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QTest>

#include "core/util/numtext.h"

#include <fstream>
#include <map>
#include <set>

using trainlab::ConfigError;
using trainlab::SweepConfig;

namespace {

// A sweep over the built-in sample with the given mode and axes (JSON text of the "axes" object).
std::string sweepJson(const std::string &mode, const std::string &axes, const std::string &extra = "")
{
    return R"({"schema_version": 1, "name": "s", "base": {"name": "b", "dataset": {"path": "builtin:sample"},
               "devices": ["cpu"], "batch_size": 32, "learning_rate": 0.1, "epochs": 1}, "mode": ")"
           + mode + R"(", "axes": )" + axes + extra + "}";
}

QStringList problemsOf(const std::string &text)
{
    QStringList out;
    try {
        const SweepConfig s = SweepConfig::fromJson(text, "sweep.json");
        for (const auto &p : s.validate())
            out << QString::fromStdString(p);
    } catch (const ConfigError &e) {
        for (const auto &p : e.problems())
            out << QString::fromStdString(p);
        if (e.problems().empty())
            out << QString::fromUtf8(e.what());
    }
    return out;
}

const char *first(const std::vector<std::string> &problems)
{
    return problems.empty() ? "" : problems.front().c_str();
}

} // namespace

class tst_Sweep : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void timeToTarget();
    void finishedLineShowsEpochOneApart();
    void recipeText_data();
    void recipeText();
    void runCount_data();
    void runCount();
    void gridVariesTheLastAxisFastest();
    void zipPairsTheValues();
    void randomDrawsFromListsAndRanges();
    void scalesTheLearningRateWithTheBatch();
    void recipeAxesReachTheConfig();
    void otherDifferencesBeyondTheAxes();
    void axisEffectsRankTheRuns();
    void parallelCoordinatesPlaceEachRun();
    void augmentationDescriptionsReadBack_data();
    void augmentationDescriptionsReadBack();
    void badAxesAreNamed_data();
    void badAxesAreNamed();
    void baseFromAPathOrAPreset();
    void jsonRoundTrip();
    void shippedPresetsParse();
};

void tst_Sweep::runCount_data()
{
    QTest::addColumn<QString>("mode");
    QTest::addColumn<QString>("axes");
    QTest::addColumn<long long>("count");
    QTest::newRow("no axes") << "grid" << "{}" << 1LL;
    QTest::newRow("grid 3x2") << "grid" << R"({"learning_rate": [0.01, 0.1, 1], "batch_size": [16, 32]})" << 6LL;
    QTest::newRow("grid 2x2x2") << "grid"
                                << R"({"learning_rate": [0.01, 0.1], "seed": [1, 2], "devices": [["cpu"], ["cpu", "cpu"]]})"
                                << 8LL;
    QTest::newRow("zip 3") << "zip" << R"({"learning_rate": [0.01, 0.1, 1], "batch_size": [16, 32, 64]})" << 3LL;
    QTest::newRow("zip sizes differ") << "zip" << R"({"learning_rate": [0.01, 0.1, 1], "batch_size": [16, 32]})" << -1LL;
}

void tst_Sweep::runCount()
{
    QFETCH(QString, mode);
    QFETCH(QString, axes);
    QFETCH(long long, count);
    const SweepConfig s = SweepConfig::fromJson(sweepJson(mode.toStdString(), axes.toStdString()));
    QCOMPARE(s.runCount(), count);
    if (count > 0) {
        QCOMPARE(static_cast<long long>(trainlab::planSweep(s).size()), count);
        const auto problems = s.validate();
        QVERIFY2(problems.empty(), first(problems));
    } else {
        QVERIFY_THROWS_EXCEPTION(ConfigError, trainlab::planSweep(s));
        const auto problems = s.validate();
        QCOMPARE(problems.size(), std::size_t(1));
        QVERIFY(QString::fromStdString(problems[0]).contains("learning_rate 3, batch_size 2"));
    }
}

void tst_Sweep::gridVariesTheLastAxisFastest()
{
    const SweepConfig s = SweepConfig::fromJson(
        sweepJson("grid", R"({"learning_rate": [0.01, 0.1], "batch_size": [16, 32, 64]})"));
    const auto runs = trainlab::planSweep(s);
    QCOMPARE(runs.size(), std::size_t(6));
    QCOMPARE(runs[0].config.learningRate, 0.01);
    QCOMPARE(runs[0].config.batchSize, 16);
    QCOMPARE(runs[1].config.batchSize, 32);
    QCOMPARE(runs[3].config.learningRate, 0.1);
    QCOMPARE(runs[3].config.batchSize, 16);
    QCOMPARE(runs[5].config.batchSize, 64);
    QCOMPARE(runs[4].tag.label(), std::string("learning_rate=0.1 batch_size=32"));
    QCOMPARE(runs[4].tag.index, 4);
    QCOMPARE(runs[4].tag.count, 6);
    QCOMPARE(runs[4].config.name, std::string("s-5"));
    // Everything the axes leave alone is the base's.
    QCOMPARE(runs[4].config.epochs, 1);
    QCOMPARE(runs[4].config.dataset.path, std::string("builtin:sample"));
}

void tst_Sweep::zipPairsTheValues()
{
    const SweepConfig s = SweepConfig::fromJson(
        sweepJson("zip", R"({"batch_size": [16, 32], "devices": [["cpu"], ["cpu", "cpu"]]})"));
    const auto runs = trainlab::planSweep(s);
    QCOMPARE(runs.size(), std::size_t(2));
    QCOMPARE(runs[0].config.batchSize, 16);
    QCOMPARE(runs[0].config.devices, std::vector<std::string>{"cpu"});
    QCOMPARE(runs[1].config.batchSize, 32);
    QCOMPARE(runs[1].config.devices, (std::vector<std::string>{"cpu", "cpu"}));
    QCOMPARE(runs[1].tag.label(), std::string("batch_size=32 devices=cpu,cpu"));
}

void tst_Sweep::randomDrawsFromListsAndRanges()
{
    const std::string axes = R"({"learning_rate": {"min": 0.001, "max": 0.3, "log": true},
        "momentum": {"min": 0.5, "max": 0.95}, "batch_size": [16, 32, 64]})";
    const SweepConfig s = SweepConfig::fromJson(sweepJson("random", axes, R"(, "runs": 400, "random_seed": 3)"));
    QVERIFY2(s.validate().empty(), first(s.validate()));
    QCOMPARE(s.runCount(), 400LL);
    QCOMPARE(s.axisSummary("learning_rate"), std::string("0.001..0.3 log"));
    const auto runs = trainlab::planSweep(s);
    QCOMPARE(runs.size(), std::size_t(400));
    std::map<std::int64_t, int> batches;
    int lowDecade = 0;   // lr in [0.001, 0.01): 40 % of the log range's width, 3 % of its linear width
    int highMomentum = 0;
    for (const auto &run : runs) {
        const auto &c = run.config;
        QVERIFY(c.learningRate >= 0.001 && c.learningRate <= 0.3);
        QVERIFY(c.momentum >= 0.5 && c.momentum <= 0.95);
        ++batches[c.batchSize];
        lowDecade += c.learningRate < 0.01;
        highMomentum += c.momentum >= 0.725;
        // Three significant digits, shown as drawn.
        QCOMPARE(trainlab::formatGeneral(c.learningRate, 3), trainlab::formatShortest(c.learningRate));
        QCOMPARE(run.tag.values.front().second, trainlab::formatShortest(c.learningRate));
    }
    QCOMPARE(batches.size(), std::size_t(3));
    for (const auto &[batch, n] : batches)
        QVERIFY2(n > 100 && n < 170, qPrintable(QString("batch %1 drawn %2 times of 400").arg(batch).arg(n)));
    QVERIFY2(lowDecade > 125 && lowDecade < 200, qPrintable(QString::number(lowDecade)));
    QVERIFY2(highMomentum > 160 && highMomentum < 240, qPrintable(QString::number(highMomentum)));

    // The file plans the same runs every time, through its saved copy too; another seed draws others.
    const auto again = trainlab::planSweep(SweepConfig::fromJson(s.toJson()));
    const SweepConfig otherSeed = SweepConfig::fromJson(sweepJson("random", axes, R"(, "runs": 400, "random_seed": 4)"));
    const auto other = trainlab::planSweep(otherSeed);
    int same = 0;
    for (std::size_t k = 0; k < runs.size(); ++k) {
        QCOMPARE(again[k].config, runs[k].config);
        same += other[k].config.learningRate == runs[k].config.learningRate;
    }
    QVERIFY2(same < 20, qPrintable(QString::number(same)));

    // A narrow range near 1 keeps its spread: finer than 3 significant digits there.
    const SweepConfig narrow = SweepConfig::fromJson(
        sweepJson("random", R"({"ema_decay": {"min": 0.99, "max": 0.9999}})", R"(, "runs": 50)"));
    QVERIFY2(narrow.validate().empty(), first(narrow.validate()));
    std::set<double> decays;
    for (const auto &run : trainlab::planSweep(narrow)) {
        QVERIFY(run.config.emaDecay >= 0.99 && run.config.emaDecay <= 0.9999);
        QVERIFY2(trainlab::formatShortest(run.config.emaDecay).size() <= 7, trainlab::formatShortest(run.config.emaDecay).c_str());
        decays.insert(run.config.emaDecay);
    }
    QVERIFY2(decays.size() > 30, qPrintable(QString::number(decays.size())));
}

void tst_Sweep::scalesTheLearningRateWithTheBatch()
{
    // The chapter's rule: twice the batch on two devices, twice the learning rate.
    const SweepConfig s = SweepConfig::fromJson(
        sweepJson("zip", R"({"batch_size": [32, 64, 128], "devices": [["cpu"], ["cpu", "cpu"], ["cpu", "cpu"]]})",
                  R"(, "scale_lr_with_batch": true)"));
    const auto runs = trainlab::planSweep(s);
    QCOMPARE(runs[0].config.learningRate, 0.1);
    QCOMPARE(runs[1].config.learningRate, 0.2);
    QCOMPARE(runs[2].config.learningRate, 0.4);
    const SweepConfig noBatchAxis = SweepConfig::fromJson(
        sweepJson("grid", R"({"learning_rate": [0.1]})", R"(, "scale_lr_with_batch": true)"));
    QCOMPARE(noBatchAxis.validate().front(), std::string("scale_lr_with_batch: needs a batch_size axis to scale by, got true"));
}

void tst_Sweep::recipeAxesReachTheConfig()
{
    const SweepConfig s = SweepConfig::fromJson(sweepJson("zip", R"({"schedule": ["constant", "cosine"],
        "warmup_epochs": [0, 0.5], "label_smoothing": [0, 0.1], "weight_decay": [0, 5e-4], "grad_clip_norm": [0, 2],
        "ema_decay": [0, 0.999], "augmentation": ["none", {"crop_padding": 2, "flip": true}], "init": ["d2l", "pytorch"],
        "optimizer": ["sgd", "adamw"], "learning_rate": [0.1, 0.001]})"));
    QVERIFY2(s.validate().empty(), first(s.validate()));
    const auto runs = trainlab::planSweep(s);
    QCOMPARE(runs.size(), std::size_t(2));
    QCOMPARE(runs[0].config.schedule.kind, std::string("constant"));
    QVERIFY(!runs[0].config.augmentation.any());
    QCOMPARE(runs[1].config.schedule.kind, std::string("cosine"));
    QCOMPARE(runs[1].config.schedule.warmupEpochs, 0.5);
    QCOMPARE(runs[1].config.labelSmoothing, 0.1);
    QCOMPARE(runs[0].config.gradClipNorm, 0.0);
    QCOMPARE(runs[1].config.gradClipNorm, 2.0);
    QCOMPARE(runs[0].config.emaDecay, 0.0);
    QCOMPARE(runs[1].config.emaDecay, 0.999);
    QCOMPARE(runs[1].config.weightDecay, 5e-4);
    QCOMPARE(runs[1].config.augmentation.cropPadding, 2);
    QVERIFY(runs[1].config.augmentation.flip);
    QCOMPARE(runs[1].config.augmentation.erasing, 0.0);
    QCOMPARE(runs[0].config.model.init, std::string("d2l"));
    QCOMPARE(runs[1].config.model.init, std::string("pytorch"));
    QCOMPARE(runs[0].config.optimizer, std::string("sgd"));
    QCOMPARE(runs[1].config.optimizer, std::string("adamw"));
    QCOMPARE(runs[1].config.learningRate, 0.001);
    // The schedule's other keys stay the base's; the label reads as one value per axis.
    QCOMPARE(runs[1].config.schedule.pctStart, trainlab::ScheduleConfig().pctStart);
    QCOMPARE(runs[1].tag.label(), std::string("learning_rate=0.001 weight_decay=0.0005 label_smoothing=0.1 grad_clip_norm=2 ema_decay=0.999 "
                                              "schedule=cosine warmup_epochs=0.5 augmentation=crop 2+flip init=pytorch optimizer=adamw"));
    const SweepConfig back = SweepConfig::fromJson(s.toJson());
    QCOMPARE(back.toJson(), s.toJson());
    QCOMPARE(trainlab::planSweep(back)[1].config, runs[1].config);
}

// Runs compared by hand: what differs beyond any sweep axis is named by its key; the axes and the name are not.
void tst_Sweep::otherDifferencesBeyondTheAxes()
{
    std::vector<trainlab::QueueEntry> entries(3);
    entries[0].config.name = "a";
    entries[1].config.name = "b";
    entries[1].config.learningRate = 0.5;
    entries[1].config.augmentation.flip = true;
    entries[1].config.dataset.trainLimit = 512;
    entries[2].config.schedule.kind = "cosine";
    entries[2].config.speed.channelsLast = "on";
    entries[2].config.dataset.trainLimit = 512;
    QCOMPARE(trainlab::otherDifferences(entries), (std::vector<std::string>{"dataset.train_limit", "speed.channels_last"}));
    QCOMPARE(trainlab::configValueText(entries[1].config.toJson(), "dataset.train_limit"), std::string("512"));
    QCOMPARE(trainlab::configValueText(entries[2].config.toJson(), "speed.channels_last"), std::string("on"));
    QCOMPARE(trainlab::configValueText(entries[0].config.toJson(), "devices"), std::string("[\"cpu\"]"));
    QCOMPARE(trainlab::configValueText(entries[0].config.toJson(), "dataset.no_such_key"), std::string("-"));
    QCOMPARE(trainlab::configValueText(entries[0].config.toJson(), "learning_rate.deeper"), std::string("-"));
    // A tag's other keys come after the sweep axes, in the order first tagged.
    entries[0].tag.values = {{"speed.channels_last", "auto"}, {"learning_rate", "0.1"}};
    entries[1].tag.values = {{"dataset.train_limit", "512"}, {"learning_rate", "0.5"}};
    QCOMPARE(trainlab::sweepTable(entries).axes, (std::vector<std::string>{"learning_rate", "speed.channels_last", "dataset.train_limit"}));
    entries.pop_back();
    entries[1].config.dataset.trainLimit = entries[0].config.dataset.trainLimit;
    QVERIFY(trainlab::otherDifferences(entries).empty());
    QCOMPARE(trainlab::axisValue(entries[1].config, "augmentation"), std::string("flip"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, trainlab::axisValue(entries[1].config, "name"));
}

void tst_Sweep::axisEffectsRankTheRuns()
{
    trainlab::SweepTable table;
    table.axes = {"learning_rate", "batch_size", "precision", "seed"};
    const struct { const char *lr, *batch, *precision, *status; double acc; } rows[] = {
        {"0.01", "32", "fp32", "completed", 0.5}, {"0.03", "64", "bf16", "completed", 0.6},
        {"0.1", "32", "fp32", "completed", 0.7},  {"0.3", "64", "bf16", "completed", 0.8},
        {"1", "32", "fp32", "completed", 0.9},    {"3", "64", "fp32", "failed", 0.0}};
    for (const auto &r : rows) {
        trainlab::SweepRow row;
        row.index = static_cast<int>(table.rows.size()) + 1;
        row.values = {r.lr, r.batch, r.precision, "0"};
        row.status = r.status;
        row.bestTestAcc = r.acc;
        row.secondsPerEpoch = row.status == "completed" ? 1.0 : 0.0;
        table.rows.push_back(row);
    }
    const auto effects = trainlab::axisEffects(table);
    // The seed never varies: no effect to show. The failed run counts nowhere.
    QCOMPARE(effects.size(), std::size_t(3));
    QCOMPARE(effects[0].axis, std::string("learning_rate"));
    QCOMPARE(effects[0].runs, 5);
    QCOMPARE(*effects[0].rankCorrelation, 1.0);
    QVERIFY(effects[0].beyondChance);
    QVERIFY(effects[0].meanByValue.empty());   // each run its own value: the table says it all
    // Tied values share their rank: 32 and 64 do equally well on average, so no correlation.
    QCOMPARE(effects[1].axis, std::string("batch_size"));
    QVERIFY(qAbs(*effects[1].rankCorrelation) < 1e-12);
    QVERIFY(!effects[1].beyondChance);
    QCOMPARE(effects[1].meanByValue.size(), std::size_t(2));
    QCOMPARE(effects[1].meanByValue[0].first, std::string("32"));
    QVERIFY(qFuzzyCompare(effects[1].meanByValue[0].second, 0.7) && qFuzzyCompare(effects[1].meanByValue[1].second, 0.7));
    QVERIFY(!effects[2].rankCorrelation);
    QCOMPARE(effects[2].meanByValue.front().first, std::string("fp32"));
    QVERIFY(qFuzzyCompare(effects[2].meanByValue.back().second, 0.7));

    const QString text = QString::fromStdString(trainlab::formatSweepTable(table));
    QVERIFY2(text.contains("\nbest: run 5 (learning_rate=1 batch_size=32 precision=fp32 seed=0), test acc 0.900\n"),
             qPrintable(text));
    QVERIFY2(text.contains("over the 5 completed runs"), qPrintable(text));
    QVERIFY2(text.contains("\n  learning_rate  +1.00 *\n"), qPrintable(text));
    QVERIFY2(text.contains("\n  batch_size     +0.00    32 0.700, 64 0.700\n"), qPrintable(text));
    QVERIFY2(text.contains("\n  precision             fp32 0.700, bf16 0.700\n"), qPrintable(text));

    // Under three completed runs there is nothing to rank.
    table.rows.resize(2);
    QVERIFY(trainlab::axisEffects(table).empty());
    QVERIFY(!QString::fromStdString(trainlab::formatSweepTable(table)).contains("Spearman"));
}

void tst_Sweep::parallelCoordinatesPlaceEachRun()
{
    trainlab::SweepTable table;
    table.axes = {"learning_rate", "batch_size", "precision"};
    const struct { const char *lr, *batch, *precision, *status; double acc, seconds; } rows[] = {
        {"0.01", "32", "fp32", "completed", 0.5, 1.0},
        {"0.1", "64", "bf16", "pruned", 0.7, 1.0},
        {"1", "32", "fp32", "completed", 0.9, 1.0},
        {"3", "64", "fp32", "not started", 0.0, 0.0}};
    for (const auto &r : rows) {
        trainlab::SweepRow row;
        row.values = {r.lr, r.batch, r.precision};
        row.status = r.status;
        row.bestTestAcc = r.acc;
        row.secondsPerEpoch = r.seconds;
        table.rows.push_back(row);
    }
    const trainlab::ParallelPlot plot = trainlab::parallelCoordinates(table);
    QCOMPARE(plot.axes.size(), std::size_t(4));
    // A learning rate spanning 100 times: by its logarithm; a batch doubling: by value; precision: in order met.
    QVERIFY(plot.axes[0].numeric && plot.axes[0].log);
    QCOMPARE(plot.axes[0].values, (std::vector<std::string>{"0.01", "1"}));
    QVERIFY(plot.axes[1].numeric && !plot.axes[1].log);
    QVERIFY(!plot.axes[2].numeric);
    QCOMPARE(plot.axes[2].values, (std::vector<std::string>{"fp32", "bf16"}));
    QCOMPARE(plot.axes[3].name, std::string("best acc"));
    QCOMPARE(plot.axes[3].values, (std::vector<std::string>{"0.500", "0.900"}));
    QCOMPARE(plot.lines.size(), std::size_t(4));
    const std::vector<double> expected[] = {{0.0, 0.0, 0.0, 0.0}, {0.5, 1.0, 1.0, 0.5}, {1.0, 0.0, 0.0, 1.0}};
    for (std::size_t r = 0; r < 3; ++r) {
        QCOMPARE(plot.lines[r].size(), std::size_t(4));
        for (std::size_t a = 0; a < 4; ++a)
            QVERIFY2(qAbs(plot.lines[r][a] - expected[r][a]) < 1e-12, qPrintable(QString("run %1 axis %2: %3").arg(r).arg(a).arg(plot.lines[r][a])));
    }
    QVERIFY(plot.lines[3].empty());   // not started: no line
    // Accuracy stays linear, even from chance to near the top.
    table.rows[0].bestTestAcc = 0.02;
    QVERIFY(!trainlab::parallelCoordinates(table).axes.back().log);
}

void tst_Sweep::augmentationDescriptionsReadBack_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("described");   // describe() of what was read, or the error's words
    QTest::addColumn<bool>("ok");
    QTest::newRow("none") << "none" << "none" << true;
    QTest::newRow("all three") << "crop 4, flip, erasing 0.25" << "crop 4, flip, erasing 0.25" << true;
    QTest::newRow("any order") << " flip ,crop 2" << "crop 2, flip" << true;
    QTest::newRow("unknown part") << "crop 2, rotate 10" << "\"rotate 10\" is not one" << false;
    QTest::newRow("crop without pixels") << "crop" << "\"crop\" is not one" << false;
    QTest::newRow("none with a part") << "none, flip" << "none cannot go with other parts" << false;
    QTest::newRow("empty") << "" << "is empty" << false;
}

void tst_Sweep::augmentationDescriptionsReadBack()
{
    QFETCH(QString, text);
    QFETCH(QString, described);
    QFETCH(bool, ok);
    std::string why;
    const auto a = trainlab::AugmentationConfig::fromDescription(text.toStdString(), &why);
    QCOMPARE(a.has_value(), ok);
    if (ok)
        QCOMPARE(QString::fromStdString(a->describe()), described);
    else
        QVERIFY2(QString::fromStdString(why).contains(described), why.c_str());
}

void tst_Sweep::badAxesAreNamed_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("problem");
    auto row = [](const char *name, const std::string &text, const char *problem) {
        QTest::newRow(name) << QString::fromStdString(text) << QString::fromUtf8(problem);
    };
    row("not an array", sweepJson("grid", R"({"learning_rate": 0.1})"),
        "axes.learning_rate: must be a list of values, each a number, got a number 0.1");
    row("empty axis", sweepJson("grid", R"({"batch_size": []})"), "axes.batch_size: must list at least one value");
    row("wrong element", sweepJson("grid", R"({"learning_rate": [0.1, "fast"]})"),
        "axes.learning_rate[1]: must be a number, got \"fast\"");
    row("fractional batch", sweepJson("grid", R"({"batch_size": [16, 2.5]})"),
        "axes.batch_size[1]: must be an integer from 1 to 1000000, got 2.5");
    row("device set not a list", sweepJson("grid", R"({"devices": ["cpu"]})"), "axes.devices[0]: must be a non-empty array");
    row("unknown axis", sweepJson("grid", R"({"dropout": [0.1]})"), "axes.dropout: unknown key");
    row("invalid value", sweepJson("grid", R"({"learning_rate": [0.1, -1]})"),
        "axes.learning_rate[1]: must be finite and greater than 0, got -1");
    row("batch above the data", sweepJson("grid", R"({"batch_size": [16, 5000]})"),
        "axes.batch_size[1]: must be at most the 2000 training images, got 5000");
    row("absent device", sweepJson("grid", R"({"devices": [["cpu"], ["cpu", "cuda:7"]]})"), "axes.devices[1][1]: is not on this machine");
    row("bad precision", sweepJson("grid", R"({"precision": ["fp32", "fp8"]})"),
        "axes.precision[1]: must be \"fp32\" or \"bf16\", got \"fp8\"");
    row("unknown init", sweepJson("grid", R"({"init": ["d2l", "xavier"]})"),
        "axes.init[1]: model.init: must be \"d2l\", \"pytorch\" or \"kaiming\", got \"xavier\"");
    row("unknown optimizer", sweepJson("grid", R"({"optimizer": ["sgd", "adam"]})"),
        "axes.optimizer[1]: must be \"sgd\" or \"adamw\", got \"adam\"");
    row("adamw with a momentum axis", sweepJson("grid", R"({"optimizer": ["sgd", "adamw"], "momentum": [0.9]})"),
        "axes.momentum[0]: must be 0 with optimizer \"adamw\"");
    row("adamw on a base with momentum", R"({"schema_version": 1, "name": "s", "base": "preset:quick-demo", "axes": {"optimizer": ["sgd", "adamw"]}})",
        "axes.optimizer[1]: momentum: must be 0 with optimizer \"adamw\"");
    row("unknown schedule", sweepJson("grid", R"({"schedule": ["cosine", "linear"]})"),
        "axes.schedule[1]: schedule.kind: must be \"constant\", \"step\", \"cosine\" or \"one_cycle\", got \"linear\"");
    row("schedule not a string", sweepJson("grid", R"({"schedule": [{"kind": "step"}]})"),
        "axes.schedule[0]: must be a schedule kind");
    row("one_cycle with the warm-up axis", sweepJson("grid", R"({"schedule": ["one_cycle"], "warmup_epochs": [0, 1]})"),
        "axes.warmup_epochs[1]: schedule.warmup_epochs: must be 0 with one_cycle");
    row("label smoothing of 1", sweepJson("grid", R"({"label_smoothing": [0, 1]})"), "axes.label_smoothing[1]: must be");
    row("negative clip norm", sweepJson("grid", R"({"grad_clip_norm": [1, -1]})"), "axes.grad_clip_norm[1]: must be");
    row("ema decay of 1", sweepJson("grid", R"({"ema_decay": [0.9, 1]})"), "axes.ema_decay[1]: must be");
    row("augmentation unknown key", sweepJson("grid", R"({"augmentation": [{"rotate": 10}]})"),
        "axes.augmentation[0].rotate: unknown key");
    row("augmentation out of range", sweepJson("grid", R"({"augmentation": [{"crop_padding": 20}]})"),
        "axes.augmentation[0]: augmentation.crop_padding: must be 0 (off) up to 14");
    row("augmentation a number", sweepJson("grid", R"({"augmentation": [1]})"),
        "axes.augmentation[0]: must be an object of crop_padding, flip, erasing or \"none\", got an integer 1");
    row("bad mode", sweepJson("bayes", "{}"), "mode: must be \"grid\", \"zip\" or \"random\", got \"bayes\"");
    row("random without runs", sweepJson("random", R"({"seed": [1, 2]})"), "runs: mode \"random\" needs how many runs");
    row("runs in a grid", sweepJson("grid", "{}", R"(, "runs": 4)"), "runs: only mode \"random\" draws runs");
    row("range in a grid", sweepJson("grid", R"({"momentum": {"min": 0, "max": 0.9}})"),
        "axes.momentum: a range {min, max} is drawn from in mode \"random\" only");
    row("range on a list axis", sweepJson("random", R"({"batch_size": {"min": 16, "max": 64}})", R"(, "runs": 2)"),
        "axes.batch_size: must be a list of values");
    row("range without max", sweepJson("random", R"({"momentum": {"min": 0}})", R"(, "runs": 2)"),
        "axes.momentum.max: missing");
    row("range upside down", sweepJson("random", R"({"momentum": {"min": 0.9, "max": 0.1}})", R"(, "runs": 2)"),
        "axes.momentum: min must not be above max, got 0.9..0.1");
    row("log range from 0", sweepJson("random", R"({"weight_decay": {"min": 0, "max": 0.01, "log": true}})", R"(, "runs": 2)"),
        "axes.weight_decay.min: a log range needs min above 0");
    row("range end invalid", sweepJson("random", R"({"momentum": {"min": 0.5, "max": 1.5}})", R"(, "runs": 2)"),
        "axes.momentum.max: momentum: must be at least 0 and below 1, got 1.5");
    row("unknown pruning rule", sweepJson("grid", "{}", R"(, "pruning": {"rule": "mean"})"),
        "pruning.rule: must be \"median\", \"percentile\" or \"threshold\", got \"mean\"");
    row("percentile of 100", sweepJson("grid", "{}", R"(, "pruning": {"rule": "percentile", "percentile": 100})"),
        "pruning.percentile: must be above 0 and below 100 (the top share kept, in %), got 100");
    row("percentile for the median", sweepJson("grid", "{}", R"(, "pruning": {"rule": "median", "percentile": 25})"),
        "pruning.percentile: rule \"median\" does not read it");
    row("threshold without its accuracy", sweepJson("grid", "{}", R"(, "pruning": {"rule": "threshold"})"),
        "pruning.min_test_acc: missing");
    row("threshold above 1", sweepJson("grid", "{}", R"(, "pruning": {"rule": "threshold", "min_test_acc": 1.5})"),
        "pruning.min_test_acc: must be above 0 and at most 1, got 1.5");
    row("threshold with startup runs",
        sweepJson("grid", "{}", R"(, "pruning": {"rule": "threshold", "min_test_acc": 0.2, "startup_runs": 2})"),
        "pruning.startup_runs: rule \"threshold\" does not read it");
    row("pruning without a rule", sweepJson("grid", "{}", R"(, "pruning": {"min_epochs": 2})"), "pruning.rule: missing");
    row("pruning from epoch 0", sweepJson("grid", "{}", R"(, "pruning": {"rule": "median", "min_epochs": 0})"),
        "pruning.min_epochs: must be from 1 to 100000, got 0");
    row("pruning unknown key", sweepJson("grid", "{}", R"(, "pruning": {"rule": "median", "patience": 2})"),
        "pruning.patience: unknown key");
    row("too many runs",
        sweepJson("grid", R"({"learning_rate": [1,2,3,4,5,6,7,8,9,10], "batch_size": [1,2,3,4,5,6,7,8,9,10],
                              "seed": [1,2,3,4,5,6,7,8,9,10], "momentum": [0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95]})"),
        "axes: the grid has 11000 runs or more; at most 10000");
    row("base problem", R"({"schema_version": 1, "name": "s", "base": {"epochs": 0}, "axes": {}})",
        "base.epochs: must be between 1 and 100000, got 0");
    row("missing base", R"({"schema_version": 1, "name": "s", "axes": {}})", "base: missing");
    row("unknown top key", sweepJson("grid", "{}", R"(, "parallel": true)"), "parallel: unknown key");
    row("bool as number", sweepJson("grid", "{}", R"(, "stop_on_failure": 1)"),
        "stop_on_failure: must be true or false, got an integer 1");
}

void tst_Sweep::badAxesAreNamed()
{
    QFETCH(QString, text);
    QFETCH(QString, problem);
    const QStringList problems = problemsOf(text.toStdString());
    bool found = false;
    for (const QString &p : problems)
        found = found || p.startsWith(problem);
    QVERIFY2(found, qPrintable("expected \"" + problem + "\" among:\n" + problems.join('\n')));
}

void tst_Sweep::baseFromAPathOrAPreset()
{
    QTemporaryDir dir;
    trainlab::ExperimentConfig base;
    base.name = "from-file";
    base.batchSize = 48;
    base.save(dir.filePath("base.json").toStdString());
    {
        std::ofstream out(dir.filePath("sweep.json").toStdString());
        out << R"({"schema_version": 1, "name": "p", "base": "base.json", "axes": {"seed": [1, 2]}})";
    }
    // A relative path is the sweep file's neighbour, wherever the program runs.
    const SweepConfig s = SweepConfig::load(dir.filePath("sweep.json").toStdString());
    QCOMPARE(s.base.name, std::string("from-file"));
    QCOMPARE(s.base.batchSize, 48);
    const SweepConfig preset = SweepConfig::fromJson(R"({"schema_version": 1, "name": "p", "base": "preset:quick-demo", "axes": {}})");
    QCOMPARE(preset.base, trainlab::loadPreset("quick-demo"));
    const QStringList missing = problemsOf(R"({"schema_version": 1, "name": "p", "base": "nope.json", "axes": {}})");
    QVERIFY2(missing.size() == 1 && missing[0].startsWith("base: ./nope.json: cannot open"), qPrintable(missing.join('\n')));
}

void tst_Sweep::jsonRoundTrip()
{
    const SweepConfig s = SweepConfig::fromJson(
        sweepJson("zip", R"({"batch_size": [32, 64], "devices": [["cpu"], ["cpu", "cpu"]]})",
                  R"(, "scale_lr_with_batch": true, "stop_on_failure": true)"));
    const SweepConfig back = SweepConfig::fromJson(s.toJson());
    QCOMPARE(back.toJson(), s.toJson());
    QCOMPARE(back.mode, std::string("zip"));
    QVERIFY(back.scaleLrWithBatch && back.stopOnFailure);
    QCOMPARE(back.devices.size(), std::size_t(2));
    QCOMPARE(back.base, s.base);
    const SweepConfig random = SweepConfig::fromJson(sweepJson(
        "random", R"({"learning_rate": {"min": 0.01, "max": 0.1, "log": true}, "seed": [1, 2]})", R"(, "runs": 5, "random_seed": 9)"));
    const SweepConfig randomBack = SweepConfig::fromJson(random.toJson());
    QCOMPARE(randomBack.toJson(), random.toJson());
    QCOMPARE(randomBack.runs, 5);
    QCOMPARE(randomBack.randomSeed, std::uint64_t(9));
    QVERIFY(randomBack.ranges.at("learning_rate").log);
    const SweepConfig pruned = SweepConfig::fromJson(
        sweepJson("grid", R"({"seed": [1, 2]})", R"(, "pruning": {"rule": "median", "startup_runs": 5})"));
    QCOMPARE(pruned.pruning, (trainlab::PruneRule{"median", 5, 1}));
    QCOMPARE(SweepConfig::fromJson(pruned.toJson()).pruning, pruned.pruning);
    for (const char *rule : {R"({"rule": "percentile", "percentile": 12.5, "startup_runs": 4, "min_epochs": 2})",
                             R"({"rule": "threshold", "min_test_acc": 0.2, "min_epochs": 3})"}) {
        const SweepConfig other = SweepConfig::fromJson(sweepJson("grid", R"({"seed": [1, 2]})", std::string(R"(, "pruning": )") + rule));
        QCOMPARE(SweepConfig::fromJson(other.toJson()).pruning, other.pruning);
        // The file keeps only the keys its rule reads, so it loads again.
        QVERIFY(other.validate().empty());
    }
    QCOMPARE(SweepConfig::fromJson(sweepJson("grid", "{}", R"(, "pruning": {"rule": "percentile"})")).pruning.percentile, 25.0);
    QVERIFY(!SweepConfig::fromJson(s.toJson()).pruning.on());
}

void tst_Sweep::shippedPresetsParse()
{
    const auto names = trainlab::sweepPresetNames();
    QCOMPARE(names, (std::vector<std::string>{"d2l-scaling", "lr-sweep-quick", "random-search-quick"}));
    const SweepConfig quick = trainlab::loadSweepPreset("lr-sweep-quick");
    QCOMPARE(quick.runCount(), 6LL);
    const auto problems = quick.validate();
    QVERIFY2(problems.empty(), first(problems));
    const SweepConfig random = trainlab::loadSweepPreset("random-search-quick");
    QCOMPARE(random.runCount(), 8LL);
    QVERIFY2(random.validate().empty(), first(random.validate()));
    trainlab::ExperimentConfig quickBase = quick.base;
    quickBase.name = "random-search-quick";
    QCOMPARE(random.base, quickBase);
    const SweepConfig scaling = trainlab::loadSweepPreset("d2l-scaling");
    const auto runs = trainlab::planSweep(scaling);
    QCOMPARE(runs.size(), std::size_t(2));
    QCOMPARE(runs[0].config.devices, std::vector<std::string>{"cuda:0"});
    QCOMPARE(runs[1].config.devices, (std::vector<std::string>{"cuda:0", "cuda:1"}));
    QCOMPARE(runs[0].config.batchSize, 256);
    QCOMPARE(runs[1].config.batchSize, 512);
    QCOMPARE(runs[1].config.learningRate, 0.2);
    QCOMPARE(runs[1].config.epochs, 10);
    QVERIFY_THROWS_EXCEPTION(ConfigError, trainlab::loadSweepPreset("nope"));
}

void tst_Sweep::timeToTarget()
{
    std::vector<trainlab::EpochMetrics> epochs;
    for (const auto &[acc, seconds] : std::vector<std::pair<double, double>>{{0.8, 10.0}, {0.9, 12.5}, {0.95, 11.0}}) {
        trainlab::EpochMetrics m;
        m.epoch = static_cast<int>(epochs.size()) + 1;
        m.testAcc = acc;
        m.seconds = seconds;
        epochs.push_back(m);
    }
    const auto reached = trainlab::timeToTarget(epochs, 0.9);   // at or above: epoch 2 counts
    QVERIFY(reached.has_value());
    QCOMPARE(reached->epoch, 2);
    QCOMPARE(reached->seconds, 22.5);
    QCOMPARE(trainlab::timeToTarget(epochs, 0.95)->seconds, 33.5);
    QVERIFY(!trainlab::timeToTarget(epochs, 0.96).has_value());
    QVERIFY(!trainlab::timeToTarget({}, 0.1).has_value());
    QCOMPARE(trainlab::formatTimeToTarget(reached), std::string("22.5 s (epoch 2)"));
    QCOMPARE(trainlab::formatTimeToTarget(std::nullopt), std::string("-"));
}

void tst_Sweep::finishedLineShowsEpochOneApart()
{
    trainlab::RunResult r;
    r.status = trainlab::RunStatus::Completed;
    for (const double seconds : {21.0, 17.5, 18.5}) {
        trainlab::EpochMetrics m;
        m.epoch = static_cast<int>(r.epochs.size()) + 1;
        m.testAcc = 0.5;
        m.seconds = seconds;
        r.epochs.push_back(m);
    }
    r.meanEpochSeconds = 19.0;
    QCOMPARE(trainlab::finishedLines(r, "[cpu]").front(), std::string("test acc: 0.50, 19.0 sec/epoch on [cpu] (epoch 1 21.0 s, the others 18.0)"));
    r.epochs.front().warmupSeconds = 4.06;
    QCOMPARE(trainlab::finishedLines(r, "[cpu]").front(),
             std::string("test acc: 0.50, 19.0 sec/epoch on [cpu] (epoch 1 21.0 s after a 4.1 s warm-up, the others 18.0)"));
    r.epochs.resize(1);
    r.meanEpochSeconds = 21.0;
    QCOMPARE(trainlab::finishedLines(r, "[cpu]").front(), std::string("test acc: 0.50, 21.0 sec/epoch on [cpu]"));
}

void tst_Sweep::recipeText_data()
{
    QTest::addColumn<QString>("changes");   // JSON merged over the default config
    QTest::addColumn<QString>("recipe");
    QTest::newRow("the chapter's") << "{}" << "d2l";
    QTest::newRow("batch, rate, epochs are columns of their own") << R"({"batch_size": 64, "learning_rate": 0.5, "epochs": 3})" << "d2l";
    QTest::newRow("tuned") << R"({"precision": "bf16", "model": {"init": "kaiming"}, "momentum": 0.9, "nesterov": true,
        "weight_decay": 5e-4, "weight_decay_norm_and_bias": false, "label_smoothing": 0.1})"
                           << "bf16, kaiming init, nesterov 0.9, wd 0.0005 (not norm/bias), smoothing 0.1";
    QTest::newRow("step schedule, rate warm-up, augmentation, early stop")
        << R"({"schedule": {"kind": "step", "step_epochs": 3, "step_factor": 0.5, "warmup_epochs": 1},
              "augmentation": {"flip": true, "crop_padding": 4}, "early_stopping": {"patience": 2}})"
        << "step ×0.5/3, lr warm-up 1, crop 4, flip, early stop 2";
    QTest::newRow("one cycle") << R"({"schedule": {"kind": "one_cycle"}})" << "one_cycle";
    QTest::newRow("gradient clipping") << R"({"grad_clip_norm": 1, "label_smoothing": 0.1})" << "smoothing 0.1, clip 1";
    QTest::newRow("weight average") << R"({"grad_clip_norm": 1, "ema_decay": 0.999})" << "clip 1, EMA 0.999";
    QTest::newRow("adamw") << R"({"optimizer": "adamw", "weight_decay": 0.05})" << "adamw, wd 0.05";
    QTest::newRow("adamw, own betas") << R"({"optimizer": "adamw", "adam_beta2": 0.98, "adam_eps": 1e-6})" << "adamw β 0.9/0.98 eps 1e-06";
}

void tst_Sweep::recipeText()
{
    QFETCH(QString, changes);
    QFETCH(QString, recipe);
    auto json = nlohmann::json::parse(trainlab::ExperimentConfig().toJson());
    json.merge_patch(nlohmann::json::parse(changes.toStdString()));
    const auto config = trainlab::ExperimentConfig::fromJson(json.dump());
    QVERIFY(config.validate().empty());
    QCOMPARE(QString::fromStdString(trainlab::recipeText(config)), recipe);
}

QTEST_GUILESS_MAIN(tst_Sweep)
#include "tst_sweep.moc"
