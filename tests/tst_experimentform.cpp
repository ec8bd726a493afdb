#include "core/config.h"
#include "core/data/idx.h"
#include "core/util/sha256.h"
#include "ui/experimentform.h"
#include "ui/augmentpreview.h"
#include "ui/schedulepreview.h"

#include "core/train/schedule.h"
#include "ui/launchdialog.h"

#include "httpserver.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>

#include <algorithm>

using trainlab::ExperimentConfig;
using trainlab::ExperimentForm;
using trainlab::SchedulePreview;

Q_DECLARE_METATYPE(trainlab::ExperimentConfig)

class tst_ExperimentForm : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void listsTheCpu();
    void roundTrip_data();
    void roundTrip();
    void invalidBatchSizeIsNamed();
    void outOfRangeValuesAreNamed();
    void optimizerPicksItsFields();
    void learningRateText_data();
    void learningRateText();
    void perDeviceBatch();
    void schedulePreviewFollowsTheForm();
    void augmentPreviewFollowsTheForm();
    void datasetStatus();
    void downloadDataset_data();
    void downloadDataset();
    void launchCommands();

private:
    template<typename T>
    static T *field(ExperimentForm &form, const char *name)
    {
        T *widget = form.findChild<T *>(QLatin1String(name));
        Q_ASSERT(widget);
        return widget;
    }
    QTemporaryDir m_dir;
    QString m_data;   // a copy of the built-in sample: a complete Fashion-MNIST folder
};

void tst_ExperimentForm::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_data = m_dir.filePath(QStringLiteral("data"));
    QVERIFY(QDir().mkpath(m_data));
    const QDir sample(QString::fromStdString(trainlab::builtinSampleDir()));
    for (const QString &file : sample.entryList({QStringLiteral("*.gz")}, QDir::Files))
        QVERIFY(QFile::copy(sample.filePath(file), m_data + '/' + file));
}

void tst_ExperimentForm::listsTheCpu()
{
    ExperimentForm form;
    auto *devices = field<QListWidget>(form, "devices");
    QVERIFY(devices->count() >= 1);
    QVERIFY(devices->item(0)->text().startsWith(QStringLiteral("cpu — CPU (")));
    QCOMPARE(devices->item(0)->checkState(), Qt::Checked);
    QCOMPARE(form.config().devices, std::vector<std::string>{"cpu"});
}

void tst_ExperimentForm::roundTrip_data()
{
    QTest::addColumn<ExperimentConfig>("config");
    QTest::newRow("defaults") << ExperimentConfig{};
    QTest::newRow("quick-demo") << trainlab::loadPreset("quick-demo");
    // cuda:0 and cuda:1 are not on this machine: listed, checked, and named by validation.
    QTest::newRow("d2l-2gpu") << trainlab::loadPreset("d2l-2gpu");
    ExperimentConfig c;
    c.name = "lr sweep 3";
    c.dataset.path = m_data.toStdString();
    c.dataset.trainLimit = 1234;
    c.dataset.testLimit = 99;
    c.devices = {"cpu", "cpu", "cpu"};
    c.batchSize = 96;
    c.learningRate = 1e-3;
    c.epochs = 7;
    c.momentum = 0.95;
    c.weightDecay = 5e-4;
    c.seed = 18446744073709551615ULL;
    c.precision = "bf16";
    c.cpuThreads = 2;
    c.collectiveTimeoutSeconds = 77;   // no field for it: kept as loaded
    c.model.numClasses = 12;
    c.model.init = "kaiming";
    c.speed.channelsLast = "on";
    c.speed.warmup = "off";
    c.speed.fusedSgd = false;
    c.speed.cudaGraphs = true;
    c.speed.winograd = false;
    c.augmentation = {true, 4, 0.3};
    c.gradClipNorm = 2.5;
    c.emaDecay = 0.995;
    QTest::newRow("every field") << c;
    QTest::newRow("fmnist-fast") << trainlab::loadPreset("fmnist-fast");
    ExperimentConfig adamw;
    adamw.optimizer = "adamw";
    adamw.learningRate = 1e-3;
    adamw.adamBeta1 = 0.85;
    adamw.adamBeta2 = 0.98;
    adamw.adamEps = 1e-6;
    adamw.weightDecay = 0.05;
    QTest::newRow("adamw") << adamw;
    // What validate() refuses is still shown as it is, not clamped into something valid.
    ExperimentConfig bad;
    bad.epochs = 200000;
    bad.cpuThreads = 2000;
    bad.batchSize = -1;
    bad.dataset.trainLimit = -5;
    bad.precision = "fp16";
    bad.speed.channelsLast = "sometimes";
    bad.speed.warmup = "twice";
    bad.model.init = "xavier";
    bad.augmentation.cropPadding = 40;
    bad.gradClipNorm = -1;
    bad.emaDecay = 1.5;
    bad.optimizer = "adam";
    bad.adamBeta2 = 1.5;
    QTest::newRow("out of range") << bad;
    ExperimentConfig order;
    order.devices = {"cuda:1", "cuda:0"};   // rank 0 is cuda:1: the order is the user's
    QTest::newRow("device order") << order;
    order.devices = {"cuda:0", "cpu"};
    QTest::newRow("gpu before cpu") << order;
    order.devices = {"cuda:0", "cuda:0"};
    QTest::newRow("repeated gpu") << order;
}

void tst_ExperimentForm::roundTrip()
{
    QFETCH(ExperimentConfig, config);
    ExperimentForm form;
    form.setConfig(config);
    QCOMPARE(form.config().toJson(), config.toJson());
    QCOMPARE(form.problems().isEmpty(), config.validate().empty());
}

void tst_ExperimentForm::invalidBatchSizeIsNamed()
{
    ExperimentForm form;
    form.show();
    QVERIFY(form.isValid());
    QSignalSpy changed(&form, &ExperimentForm::changed);
    auto *batch = field<QSpinBox>(form, "batchSize");
    batch->setFocus();
    batch->selectAll();
    QTest::keyClicks(batch, QStringLiteral("0"));
    QCOMPARE(batch->value(), 0);
    QVERIFY(!changed.isEmpty());
    QVERIFY(!form.isValid());
    auto *problems = field<QLabel>(form, "problems");
    QVERIFY(problems->isVisible());
    QVERIFY2(problems->text().contains(QLatin1String("batch_size: must be at least 1, got 0")),
             qPrintable(problems->text()));
    QVERIFY(batch->property("invalid").toBool());
    QVERIFY(batch->toolTip().contains(QLatin1String("batch_size")));
    QVERIFY(!field<QLineEdit>(form, "learningRate")->property("invalid").toBool());
    QTest::keyClicks(batch, QStringLiteral("32"));
    QVERIFY(form.isValid());
    QVERIFY(!problems->isVisible());
    QVERIFY(!batch->property("invalid").toBool());
}

void tst_ExperimentForm::outOfRangeValuesAreNamed()
{
    ExperimentConfig c;
    c.epochs = 200000;
    c.dataset.trainLimit = -5;
    c.precision = "fp16";
    c.devices = {"cuda:0", "cuda:0"};
    ExperimentForm form;
    form.setConfig(c);
    QCOMPARE(field<QSpinBox>(form, "epochs")->value(), 200000);
    QCOMPARE(field<QSpinBox>(form, "trainLimit")->value(), -5);
    QCOMPARE(field<QComboBox>(form, "precision")->currentText(), QStringLiteral("fp16"));
    const QString problems = form.problems().join('\n');
    for (const char *expected : {"epochs: must be between 1 and 100000, got 200000",
                                 "dataset.train_limit: must be 0 (all) or more, got -5",
                                 "precision: must be \"fp32\" or \"bf16\", got \"fp16\"",
                                 "devices[1]: "})
        QVERIFY2(problems.contains(QLatin1String(expected)), qPrintable(expected + QStringLiteral("\nin\n") + problems));
    QVERIFY(field<QSpinBox>(form, "epochs")->property("invalid").toBool());
    // The repeated device stays repeated, for validate() to refuse (here: absent; on a GPU machine: listed twice).
    QCOMPARE(form.config().devices, (std::vector<std::string>{"cuda:0", "cuda:0"}));
}

// SGD's fields for sgd, AdamW's for adamw. Picking adamw sets SGD's momentum aside and picking sgd brings it back;
// a file's momentum with adamw stays editable, named, until it is 0.
void tst_ExperimentForm::optimizerPicksItsFields()
{
    ExperimentForm form;
    ExperimentConfig c;
    c.momentum = 0.9;
    c.nesterov = true;
    form.setConfig(c);
    auto *optimizer = field<QComboBox>(form, "optimizer");
    auto *momentum = field<QLineEdit>(form, "momentum");
    auto *beta2 = field<QLineEdit>(form, "adamBeta2");
    QVERIFY(momentum->isEnabled());
    QVERIFY(!beta2->isEnabled());
    QVERIFY(form.isValid());
    optimizer->setCurrentText(QStringLiteral("adamw"));
    QCOMPARE(form.config().optimizer, std::string("adamw"));
    QCOMPARE(form.config().momentum, 0.0);
    QVERIFY(!form.config().nesterov);
    QVERIFY(beta2->isEnabled());
    QVERIFY(!momentum->isEnabled());
    QVERIFY2(form.isValid(), qPrintable(form.problems().join('\n')));
    optimizer->setCurrentText(QStringLiteral("sgd"));
    QCOMPARE(form.config().momentum, 0.9);
    QVERIFY(form.config().nesterov);
    QVERIFY(!beta2->isEnabled());

    c.optimizer = "adamw";
    c.nesterov = false;
    form.setConfig(c);
    QVERIFY(momentum->isEnabled());
    QVERIFY(momentum->property("invalid").toBool());
    QVERIFY2(form.problems().join('\n').contains(QLatin1String("momentum: must be 0 with optimizer \"adamw\"")),
             qPrintable(form.problems().join('\n')));
    momentum->setText(QStringLiteral("0"));
    QVERIFY(!momentum->isEnabled());
    QVERIFY(form.isValid());
    beta2->setText(QStringLiteral("0.95"));
    QCOMPARE(form.config().adamBeta2, 0.95);
    beta2->setText(QStringLiteral("high"));
    QVERIFY(form.problems().join('\n').contains(QLatin1String("adam_beta2: must be a number")));
}

void tst_ExperimentForm::learningRateText_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("problem");
    QTest::newRow("decimal") << "0.1" << 0.1 << QString();
    QTest::newRow("exponent") << "1e-3" << 1e-3 << QString();
    QTest::newRow("spaces") << " 0.05 " << 0.05 << QString();
    QTest::newRow("word") << "fast" << 0.0 << "learning_rate: must be a number, got \"fast\"";
    QTest::newRow("comma") << "0,1" << 0.0 << "learning_rate: must be a number, got \"0,1\"";
    QTest::newRow("negative") << "-1" << -1.0 << "learning_rate: must be finite and greater than 0, got -1";
    QTest::newRow("not a number") << "nan" << 0.0 << "learning_rate: must be a number, got \"nan\"";
    QTest::newRow("infinite") << "inf" << 0.0 << "learning_rate: must be a number, got \"inf\"";
}

void tst_ExperimentForm::learningRateText()
{
    QFETCH(QString, text);
    QFETCH(double, value);
    QFETCH(QString, problem);
    ExperimentForm form;
    auto *lr = field<QLineEdit>(form, "learningRate");
    lr->selectAll();
    QTest::keyClicks(lr, text);
    if (problem.isEmpty()) {
        QVERIFY2(form.isValid(), qPrintable(form.problems().join('\n')));
        QCOMPARE(form.config().learningRate, value);
    } else {
        QVERIFY(!form.isValid());
        QCOMPARE(form.problems(), QStringList{problem});
    }
}

void tst_ExperimentForm::perDeviceBatch()
{
    ExperimentForm form;
    ExperimentConfig c;
    c.devices = {"cpu", "cpu", "cpu"};
    c.batchSize = 64;
    form.setConfig(c);
    auto *label = field<QLabel>(form, "perDeviceBatch");
    QCOMPARE(label->text(), QStringLiteral("21–22 per device"));
    auto *replicas = field<QSpinBox>(form, "cpuReplicas");
    replicas->setValue(2);
    QCOMPARE(label->text(), QStringLiteral("32 per device"));
    QCOMPARE(form.config().devices.size(), std::size_t(2));
    field<QListWidget>(form, "devices")->item(0)->setCheckState(Qt::Unchecked);
    QVERIFY(!replicas->isEnabled());
    QVERIFY(form.problems().join('\n').contains(QLatin1String("devices: must list at least one device")));
}

// The preview is core's learningRateAt as the form stands, redrawn as the user types.
void tst_ExperimentForm::schedulePreviewFollowsTheForm()
{
    ExperimentForm form;
    ExperimentConfig c;
    c.learningRate = 0.2;
    c.epochs = 4;
    form.setConfig(c);
    SchedulePreview *preview = form.schedulePreview();
    QList<QPointF> points = preview->points();
    QVERIFY(points.size() > 100);
    QCOMPARE(points.first().x(), 0.0);
    QCOMPARE(points.last().x(), 4.0);
    for (const QPointF &p : points)
        QCOMPARE(p.y(), 0.2);   // constant: the chapter's

    field<QComboBox>(form, "schedule")->setCurrentText(QStringLiteral("cosine"));
    auto *warmup = field<QLineEdit>(form, "warmupEpochs");
    warmup->selectAll();
    QTest::keyClicks(warmup, QStringLiteral("1"));
    points = preview->points();
    const auto peak = std::max_element(points.begin(), points.end(), [](QPointF a, QPointF b) { return a.y() < b.y(); });
    QVERIFY(qAbs(peak->x() - 1.0) < 0.05);             // warm-up ends after epoch 1
    QVERIFY(qAbs(peak->y() - 0.2) < 1e-9);
    QVERIFY(points.first().y() < 0.01);                 // rises from near 0
    QVERIFY(points.last().y() < 0.01);                  // cosine falls to 0 at the end
    const ExperimentConfig now = form.config();
    const int mid = static_cast<int>(points.size() / 2);
    const std::int64_t perEpoch = (points.size() - 1) / 4;
    QCOMPARE(points[mid].y(), trainlab::learningRateAt(now, mid, perEpoch));
    QVERIFY2(preview->caption().contains(QStringLiteral("cosine")), qPrintable(preview->caption()));
}

void tst_ExperimentForm::augmentPreviewFollowsTheForm()
{
    ExperimentForm form;
    form.setConfig(ExperimentConfig());
    trainlab::AugmentPreview *preview = form.augmentPreview();
    QCOMPARE(preview->imageCount(), trainlab::AugmentPreview::kImages);
    auto *again = preview->findChild<QToolButton *>(QStringLiteral("augmentDrawAgain"));
    for (int i = 0; i < preview->imageCount(); ++i)
        QCOMPARE(preview->augmented(i), preview->original(i));   // off: trained as they are
    QVERIFY(!again->isEnabled());

    field<QCheckBox>(form, "flip")->setChecked(true);
    QVERIFY2(preview->caption().contains(QStringLiteral("flip")), qPrintable(preview->caption()));
    // Each image as it is or mirrored, about half of them mirrored over a few steps (seed 0's step 0 mirrors none).
    int mirrored = 0;
    for (int step = 0; step < 4; ++step) {
        QCOMPARE(preview->step(), std::int64_t(step));
        for (int i = 0; i < preview->imageCount(); ++i) {
            const QImage flipped = preview->original(i).mirrored(true, false);
            QVERIFY(preview->augmented(i) == preview->original(i) || preview->augmented(i) == flipped);
            mirrored += preview->augmented(i) == flipped && flipped != preview->original(i);
        }
        again->click();
    }
    QVERIFY2(mirrored >= 6 && mirrored <= 18, qPrintable(QString::number(mirrored)));

    // Another step draws other alterations of the same images; the seed changes them as it changes the run's.
    auto *erasing = field<QLineEdit>(form, "erasing");
    erasing->selectAll();
    QTest::keyClicks(erasing, QStringLiteral("1"));
    QVector<QImage> first;
    for (int i = 0; i < preview->imageCount(); ++i)
        first << preview->augmented(i);
    QVERIFY(again->isEnabled());
    again->click();
    QCOMPARE(preview->step(), std::int64_t(5));
    int changed = 0;
    for (int i = 0; i < preview->imageCount(); ++i)
        changed += preview->augmented(i) != first[i];
    QVERIFY(changed > 0);

    field<QSpinBox>(form, "cropPadding")->setValue(20);
    QVERIFY2(preview->caption().contains(QStringLiteral("out of range")), qPrintable(preview->caption()));
    QVERIFY(!again->isEnabled());
}

void tst_ExperimentForm::datasetStatus()
{
    ExperimentForm form;
    auto *status = field<QLabel>(form, "datasetStatus");
    QVERIFY2(status->text().startsWith(QLatin1String("2,000 train / 500 test found")), qPrintable(status->text()));
    field<QComboBox>(form, "datasetKind")->setCurrentIndex(2);
    auto *path = field<QLineEdit>(form, "datasetPath");
    path->setText(m_data);
    QVERIFY2(status->text().startsWith(QLatin1String("2,000 train / 500 test found")), qPrintable(status->text()));
    QVERIFY(form.isValid());
    path->setText(m_dir.path());
    QVERIFY2(status->text().startsWith(QLatin1String("missing: train-images-idx3-ubyte")), qPrintable(status->text()));
    QVERIFY(!form.isValid());
    QVERIFY2(form.problems().join('\n').contains(QStringLiteral("dataset.path: missing: train-images-idx3-ubyte")),
             qPrintable(form.problems().join('\n')));
    path->setText(m_dir.path() + QStringLiteral("/nowhere"));
    QVERIFY(status->text().contains(QLatin1String("no such folder")));
    QVERIFY(form.problems().join('\n').contains(QLatin1String("dataset.path: no such folder")));
    QVERIFY(path->property("invalid").toBool());
}

void tst_ExperimentForm::downloadDataset_data()
{
    QTest::addColumn<bool>("served");
    QTest::newRow("served") << true;
    QTest::newRow("404") << false;
}

// The managed Fashion-MNIST, missing: the form says so, Start waits, and Download… fetches it through the core's
// downloader (here the sample's four files, from a loopback server) with a progress bar; then the form is valid.
void tst_ExperimentForm::downloadDataset()
{
    QFETCH(bool, served);
    QTemporaryDir dataHome;
    qputenv("TRAINLAB_DATA_DIR", dataHome.filePath(QStringLiteral("fashion-mnist")).toUtf8());
    HttpServer server;
    trainlab::DatasetManifest manifest;
    const QDir sample(QString::fromStdString(trainlab::builtinSampleDir()));
    for (const QString &file : sample.entryList({QStringLiteral("*.gz")}, QDir::Files)) {
        QFile f(sample.filePath(file));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        HttpServer::Route route;
        route.body = bytes.toStdString();
        route.status = served ? 200 : 404;
        server.setRoute("/data/" + file.toStdString(), route);
        manifest.files.push_back({file.toStdString(), static_cast<std::uint64_t>(bytes.size()),
                                  trainlab::sha256File(sample.filePath(file).toStdString())});
    }
    ExperimentForm form;
    form.setDownloadSource(manifest, {QString::fromStdString(server.url("/data/"))});
    ExperimentConfig c;
    c.dataset.path = "fashion-mnist";
    form.setConfig(c);
    auto *status = field<QLabel>(form, "datasetStatus");
    auto *download = field<QPushButton>(form, "downloadDataset");
    QCOMPARE(field<QComboBox>(form, "datasetKind")->currentIndex(), 1);
    QVERIFY2(status->text().contains(QLatin1String("not downloaded yet")), qPrintable(status->text()));
    QVERIFY(!download->isHidden());
    QVERIFY(!form.isValid());
    QVERIFY2(form.problems().join('\n').contains(QLatin1String("dataset.path: ")), qPrintable(form.problems().join('\n')));

    QSignalSpy finished(&form, &ExperimentForm::downloadFinished);
    QTest::mouseClick(download, Qt::LeftButton);
    QVERIFY(form.isDownloading());
    QVERIFY(!field<QPushButton>(form, "cancelDownload")->isHidden());
    QVERIFY(finished.wait(20000));
    QVERIFY(!form.isDownloading());
    QCOMPARE(finished.at(0).at(0).toBool(), served);
    if (served) {
        QCOMPARE(field<QProgressBar>(form, "downloadProgress")->value(), 1000);
        QVERIFY2(status->text().startsWith(QLatin1String("2,000 train / 500 test found")), qPrintable(status->text()));
        QVERIFY(download->isHidden());
        QVERIFY2(form.isValid(), qPrintable(form.problems().join('\n')));
        QCOMPARE(form.config().dataset.path, std::string("fashion-mnist"));
    } else {
        QVERIFY2(status->text().contains(QLatin1String("download failed")), qPrintable(status->text()));
        QVERIFY2(status->text().contains(QString::fromStdString(server.url("/data/"))), qPrintable(status->text()));
        QVERIFY(!download->isHidden());
        QVERIFY(!form.isValid());
    }
    qunsetenv("TRAINLAB_DATA_DIR");
}

// Run > Launch on a Cluster: one process per GPU under torchrun and srun, the node count as asked, Copy to the clipboard.
void tst_ExperimentForm::launchCommands()
{
    ExperimentConfig gpus;
    gpus.devices = {"cuda:0", "cuda:1"};
    trainlab::LaunchDialog dialog(gpus, QStringLiteral("/lab/exp.json"));
    QCOMPARE(dialog.torchrunText(),
             QStringLiteral("torchrun --nnodes 1 --nproc_per_node 2 --standalone --no_python trainlab-cli run /lab/exp.json"));
    dialog.nodes()->setValue(3);
    QVERIFY2(dialog.torchrunText().startsWith(QStringLiteral("torchrun --nnodes 3 --nproc_per_node 2 --rdzv_backend c10d")),
             qPrintable(dialog.torchrunText()));
    for (const char *line : {"#SBATCH --nodes=3\n", "#SBATCH --ntasks-per-node=2\n", "#SBATCH --gpus-per-node=2\n",
                             "srun trainlab-cli run /lab/exp.json\n"})
        QVERIFY2(dialog.slurmText().contains(QLatin1String(line)), line);
    const auto buttons = dialog.findChildren<QPushButton *>();
    const auto copy = std::find_if(buttons.begin(), buttons.end(), [](QPushButton *b) { return b->text().contains(QLatin1String("sbatch")); });
    QVERIFY(copy != buttons.end());
    (*copy)->click();
    QCOMPARE(QApplication::clipboard()->text(), dialog.slurmText());

    ExperimentConfig cpu;
    cpu.devices = {"cpu", "cpu"};
    trainlab::LaunchDialog unsaved(cpu, QString());
    QVERIFY(unsaved.torchrunText().contains(QLatin1String("--nproc_per_node 1 --standalone --no_python trainlab-cli run EXPERIMENT.json")));
    QVERIFY(!unsaved.slurmText().contains(QLatin1String("gpus-per-node")));

    // The layout line counts the devices in words, not "device(s)".
    const auto layoutLine = [](const QWidget &d) {
        for (const QLabel *label : d.findChildren<QLabel *>()) {
            if (label->text().contains(QLatin1String("per machine")))
                return label->text();
        }
        return QString();
    };
    QVERIFY2(layoutLine(unsaved).contains(QLatin1String("experiment's 2 devices (2 in all)")), qPrintable(layoutLine(unsaved)));
    ExperimentConfig one;
    trainlab::LaunchDialog single(one, QString());
    single.nodes()->setValue(4);
    QVERIFY2(layoutLine(single).contains(QLatin1String("experiment's device (4 in all)")), qPrintable(layoutLine(single)));
}

QTEST_MAIN(tst_ExperimentForm)
#include "tst_experimentform.moc"
