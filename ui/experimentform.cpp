#include "ui/experimentform.h"

#include "core/data/idx.h"
#include "core/train/devices.h"
#include "ui/augmentpreview.h"
#include "ui/datasetdownload.h"
#include "ui/schedulepreview.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QToolButton>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <filesystem>
#include <climits>
#include <cmath>

namespace trainlab {

namespace {

constexpr int kIdRole = Qt::UserRole;
const char kBuiltin[] = "builtin:sample";
const char kManaged[] = "fashion-mnist";
// The dataset chooser's entries, in order.
enum DatasetKind { kSampleKind, kManagedKind, kFolderKind };

// The shortest text that reads back as the same double, written as a person would: 1e-4, not 1e-04.
QString shortest(double value)
{
    QString text = QString::number(value, 'g', QLocale::FloatingPointShortest);
    static const QRegularExpression paddedExponent(QStringLiteral("e([+-])0+(\\d)"));
    return text.replace(paddedExponent, QStringLiteral("e\\1\\2")).replace(QStringLiteral("e+"), QStringLiteral("e"));
}

QStringList choices(const std::vector<std::string> &values)
{
    QStringList list;
    for (const auto &v : values)
        list.append(QString::fromStdString(v));
    return list;
}

// A value the core refuses is added and shown as it is, for validate() to name.
void showChoice(QComboBox *combo, const std::string &value)
{
    const QString text = QString::fromStdString(value);
    if (combo->findText(text) < 0)
        combo->addItem(text);
    combo->setCurrentText(text);
}

// Wide ranges: a value the core refuses is shown and named by validate(), never clamped out of sight.
QSpinBox *spinBox(const char *objectName, int minimum, int maximum)
{
    auto *box = new QSpinBox;
    box->setObjectName(QLatin1String(objectName));
    box->setRange(minimum, maximum);
    box->setAccelerated(true);
    return box;
}

QLineEdit *lineEdit(const char *objectName, const QString &placeholder = {})
{
    auto *edit = new QLineEdit;
    edit->setObjectName(QLatin1String(objectName));
    edit->setPlaceholderText(placeholder);
    return edit;
}

// A number as typed: 0.1, 1e-3, with spaces around; NaN and infinity are not numbers here.
double parseNumber(const QString &text, bool *ok)
{
    const double value = QLocale::c().toDouble(text.trimmed(), ok);
    *ok = *ok && std::isfinite(value);
    return value;
}

QString gib(std::uint64_t bytes)
{
    return QString::number(static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0), 'f', 1) + QStringLiteral(" GiB");
}

} // namespace

ExperimentForm::ExperimentForm(QWidget *parent)
    : QWidget(parent)
    , m_name(lineEdit("name"))
    , m_datasetKind(new QComboBox)
    , m_datasetPath(lineEdit("datasetPath", tr("folder with the four IDX files")))
    , m_chooseFolder(new QPushButton(tr("Choose folder…")))
    , m_datasetStatus(new QLabel)
    , m_download(new QPushButton(tr("Download…")))
    , m_downloadProgress(new QProgressBar)
    , m_downloadRate(new QLabel)
    , m_cancelDownload(new QPushButton(tr("Cancel")))
    , m_downloader(new DatasetDownload(this))
    , m_manifest(fashionMnistManifest())
    , m_devices(new QListWidget)
    , m_cpuReplicas(spinBox("cpuReplicas", 1, 64))
    , m_batchSize(spinBox("batchSize", INT_MIN, INT_MAX))
    , m_perDevice(new QLabel)
    , m_learningRate(lineEdit("learningRate", tr("0.1 or 1e-3")))
    , m_epochs(spinBox("epochs", INT_MIN, INT_MAX))
    , m_seed(lineEdit("seed"))
    , m_optimizer(new QComboBox)
    , m_adamBeta1(lineEdit("adamBeta1", tr("β1, e.g. 0.9")))
    , m_adamBeta2(lineEdit("adamBeta2", tr("β2, e.g. 0.999")))
    , m_adamEps(lineEdit("adamEps", tr("eps, e.g. 1e-8")))
    , m_momentum(lineEdit("momentum", tr("0 to below 1")))
    , m_weightDecay(lineEdit("weightDecay", tr("0 or e.g. 1e-4")))
    , m_precision(new QComboBox)
    , m_init(new QComboBox)
    , m_schedule(new QComboBox)
    , m_schedulePreview(new SchedulePreview)
    , m_augmentPreview(new AugmentPreview)
    , m_warmup(lineEdit("warmupEpochs", tr("epochs, e.g. 1 or 0.5")))
    , m_nesterov(new QCheckBox(tr("Nesterov momentum")))
    , m_decayNormAndBias(new QCheckBox(tr("Weight decay on BatchNorm and biases too")))
    , m_labelSmoothing(lineEdit("labelSmoothing", tr("0, or e.g. 0.1")))
    , m_gradClip(lineEdit("gradClipNorm", tr("0 (off), or a norm, e.g. 1")))
    , m_emaDecay(lineEdit("emaDecay", tr("0 (off), or e.g. 0.999")))
    , m_patience(spinBox("patience", INT_MIN, INT_MAX))
    , m_flip(new QCheckBox(tr("Random left-right flip")))
    , m_cropPadding(spinBox("cropPadding", INT_MIN, INT_MAX))
    , m_erasing(lineEdit("erasing", tr("probability, 0 or e.g. 0.25")))
    , m_channelsLast(new QComboBox)
    , m_speedWarmup(new QComboBox)
    , m_fusedSgd(new QCheckBox(tr("One fused optimizer update")))
    , m_cudaGraphs(new QCheckBox(tr("CUDA graphs (GPU only)")))
    , m_winograd(new QCheckBox(tr("Winograd convolutions (CPU, fp32)")))
    , m_cpuThreads(spinBox("cpuThreads", INT_MIN, INT_MAX))
    , m_trainLimit(spinBox("trainLimit", INT_MIN, INT_MAX))
    , m_testLimit(spinBox("testLimit", INT_MIN, INT_MAX))
    , m_problemsLabel(new QLabel)
{
    m_datasetKind->setObjectName(QStringLiteral("datasetKind"));
    m_datasetKind->addItems({tr("Built-in sample"), tr("Fashion-MNIST (60,000 / 10,000)"), tr("Fashion-MNIST folder")});
    m_download->setObjectName(QStringLiteral("downloadDataset"));
    m_download->setToolTip(tr("Download the official Fashion-MNIST (about 30 MB), checked against its SHA-256 sums"));
    m_downloadProgress->setObjectName(QStringLiteral("downloadProgress"));
    m_downloadRate->setObjectName(QStringLiteral("downloadRate"));
    m_cancelDownload->setObjectName(QStringLiteral("cancelDownload"));
    for (QWidget *w : std::initializer_list<QWidget *>{m_download, m_downloadProgress, m_downloadRate, m_cancelDownload})
        w->setVisible(false);
    m_chooseFolder->setObjectName(QStringLiteral("chooseDatasetFolder"));
    m_datasetStatus->setObjectName(QStringLiteral("datasetStatus"));
    m_datasetStatus->setWordWrap(true);
    m_devices->setObjectName(QStringLiteral("devices"));
    m_devices->setMaximumHeight(110);
    m_cpuReplicas->setToolTip(tr("CPU replicas: each one more model copy sharing the CPU cores"));
    m_perDevice->setObjectName(QStringLiteral("perDeviceBatch"));
    m_precision->setObjectName(QStringLiteral("precision"));
    m_precision->addItems(choices(trainlab::precisions()));
    m_init->setObjectName(QStringLiteral("init"));
    m_init->addItems(choices(trainlab::initSchemes()));
    m_init->setToolTip(tr("The first weights. d2l: the chapter's (N(0, 0.01) on the first conv and the last layer); "
                          "pytorch: LibTorch's default on every layer; kaiming: torchvision's ResNet"));
    m_optimizer->setObjectName(QStringLiteral("optimizer"));
    m_optimizer->addItems(choices(trainlab::optimizers()));
    m_optimizer->setToolTip(tr("sgd: the chapter's (with momentum and Nesterov below); adamw: Adam with decoupled weight "
                               "decay, which wants a smaller learning rate (e.g. 1e-3)"));
    m_schedule->setObjectName(QStringLiteral("schedule"));
    m_schedule->addItems(choices(trainlab::scheduleKinds()));
    m_schedule->setToolTip(tr("How the learning rate changes over the run; one_cycle rises to it and falls back"));
    m_nesterov->setObjectName(QStringLiteral("nesterov"));
    m_decayNormAndBias->setObjectName(QStringLiteral("weightDecayNormAndBias"));
    m_decayNormAndBias->setToolTip(tr("Off: only convolution and linear weights decay (weight_decay_norm_and_bias)"));
    m_patience->setToolTip(tr("End the run when the test accuracy has not improved for this many epochs; 0: never"));
    m_channelsLast->setObjectName(QStringLiteral("channelsLast"));
    m_channelsLast->addItems(choices(trainlab::autoModes()));
    m_channelsLast->setToolTip(tr("NHWC memory layout for weights and images; auto: on for GPUs, on but the last block (4×4 maps) on the CPU"));
    m_speedWarmup->setObjectName(QStringLiteral("speedWarmup"));
    m_speedWarmup->addItems(choices(trainlab::autoModes()));
    m_speedWarmup->setToolTip(tr("Run each step shape once before epoch 1, so the GPU's tuning is not timed in it; auto: on for GPUs"));
    m_fusedSgd->setObjectName(QStringLiteral("fusedSgd"));
    m_fusedSgd->setToolTip(tr("Update every weight with a few multi-tensor kernels instead of a loop per weight"));
    m_cudaGraphs->setObjectName(QStringLiteral("cudaGraphs"));
    m_cudaGraphs->setToolTip(tr("Record each GPU's training step once and replay it; a step that cannot be recorded runs as usual"));
    m_winograd->setObjectName(QStringLiteral("winograd"));
    m_winograd->setToolTip(tr("The residual blocks' 3×3 convolutions through oneDNN's Winograd kernels: fewer multiplications, "
                              "rounding about 1e-6; the log says when this CPU or build has none"));
    m_problemsLabel->setObjectName(QStringLiteral("problems"));
    m_problemsLabel->setWordWrap(true);
    m_problemsLabel->setStyleSheet(QStringLiteral("color: #b71c1c;"));
    m_problemsLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto *form = new QFormLayout;
    form->addRow(tr("&Name:"), m_name);
    auto *datasetRow = new QHBoxLayout;
    datasetRow->addWidget(m_datasetKind);
    datasetRow->addWidget(m_chooseFolder);
    // A row holding a layout gets no buddy by itself, and would show the & of its shortcut.
    auto *datasetLabel = new QLabel(tr("&Dataset:"));
    datasetLabel->setBuddy(m_datasetKind);
    form->addRow(datasetLabel, datasetRow);
    form->addRow(QString(), m_datasetPath);
    form->addRow(QString(), m_datasetStatus);
    auto *downloadRow = new QHBoxLayout;
    downloadRow->addWidget(m_download);
    downloadRow->addWidget(m_downloadProgress, 1);
    downloadRow->addWidget(m_downloadRate);
    downloadRow->addWidget(m_cancelDownload);
    form->addRow(QString(), downloadRow);
    form->addRow(tr("De&vices:"), m_devices);
    form->addRow(tr("CPU replicas:"), m_cpuReplicas);
    auto *batchRow = new QHBoxLayout;
    batchRow->addWidget(m_batchSize, 1);
    batchRow->addWidget(m_perDevice);
    auto *batchLabel = new QLabel(tr("&Batch size:"));
    batchLabel->setBuddy(m_batchSize);
    form->addRow(batchLabel, batchRow);
    form->addRow(tr("&Learning rate:"), m_learningRate);
    form->addRow(tr("&Epochs:"), m_epochs);
    form->addRow(tr("&Seed:"), m_seed);

    // Collapsed until asked for (or until one of its fields has a problem): the common knobs come first.
    m_advancedToggle = new QToolButton;
    m_advancedToggle->setObjectName(QStringLiteral("advancedToggle"));
    // Short: the collapsed line sets the form's width, and so how much of the window the chart gets.
    m_advancedToggle->setText(tr("Advanced: recipe, augmentation, precision, speed, limits"));
    m_advancedToggle->setToolTip(tr("Optimizer (SGD or AdamW), momentum, weight decay, learning-rate schedule, label smoothing, gradient clipping, "
                                    "weight average, augmentation, early stopping, precision, speed switches, threads, "
                                    "image limits"));
    m_advancedToggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_advancedToggle->setArrowType(Qt::RightArrow);
    m_advancedToggle->setCheckable(true);
    m_advancedToggle->setAutoRaise(true);
    auto *advanced = new QGroupBox;
    advanced->setObjectName(QStringLiteral("advanced"));
    advanced->setVisible(false);
    connect(m_advancedToggle, &QToolButton::toggled, this, [this, advanced](bool open) {
        advanced->setVisible(open);
        m_advancedToggle->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
        Q_EMIT advancedToggled(open);
    });
    auto *advancedForm = new QFormLayout(advanced);
    advancedForm->addRow(tr("Optimi&zer:"), m_optimizer);
    advancedForm->addRow(tr("&Momentum:"), m_momentum);
    advancedForm->addRow(QString(), m_nesterov);
    auto *adamRow = new QHBoxLayout;
    for (QLineEdit *edit : {m_adamBeta1, m_adamBeta2, m_adamEps})
        adamRow->addWidget(edit);
    auto *adamLabel = new QLabel(tr("AdamW β&1, β2, eps:"));
    adamLabel->setBuddy(m_adamBeta1);
    advancedForm->addRow(adamLabel, adamRow);
    advancedForm->addRow(tr("Sc&hedule:"), m_schedule);
    advancedForm->addRow(tr("&Warm-up epochs:"), m_warmup);
    advancedForm->addRow(QString(), m_schedulePreview);
    advancedForm->addRow(tr("&Label smoothing:"), m_labelSmoothing);
    m_gradClip->setToolTip(tr("Before each step, scale the gradients down so that their global L2 norm is at most this "
                              "(PyTorch's clip_grad_norm_); 0: off"));
    advancedForm->addRow(tr("&Gradient clipping (max norm):"), m_gradClip);
    m_emaDecay->setToolTip(tr("Evaluate a moving average of the weights, updated after every step with this decay "
                              "(0.999: about the last 1,000 steps); export and classify use it too. 0: off"));
    advancedForm->addRow(tr("Weight &average (EMA decay):"), m_emaDecay);
    advancedForm->addRow(tr("Early stop &patience (0: off):"), m_patience);
    m_flip->setObjectName(QStringLiteral("flip"));
    m_cropPadding->setToolTip(tr("Shift each training image by up to this many pixels each way (a random crop of the padded image)"));
    m_erasing->setToolTip(tr("The share of training images with one random rectangle blanked"));
    advancedForm->addRow(tr("Augment: &crop padding (0: off):"), m_cropPadding);
    advancedForm->addRow(QString(), m_flip);
    advancedForm->addRow(tr("Augment: rand&om erasing:"), m_erasing);
    advancedForm->addRow(QString(), m_augmentPreview);
    advancedForm->addRow(tr("&Initial weights:"), m_init);
    advancedForm->addRow(tr("&Weight decay:"), m_weightDecay);
    advancedForm->addRow(QString(), m_decayNormAndBias);
    advancedForm->addRow(tr("&Precision:"), m_precision);
    advancedForm->addRow(tr("C&hannels-last:"), m_channelsLast);
    advancedForm->addRow(tr("Step warm-&up:"), m_speedWarmup);
    advancedForm->addRow(QString(), m_fusedSgd);
    advancedForm->addRow(QString(), m_cudaGraphs);
    advancedForm->addRow(QString(), m_winograd);
    advancedForm->addRow(tr("CPU &threads (0: all):"), m_cpuThreads);
    advancedForm->addRow(tr("&Train images (0: all):"), m_trainLimit);
    advancedForm->addRow(tr("T&est images (0: all):"), m_testLimit);

    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_advancedToggle);
    layout->addWidget(advanced);
    layout->addWidget(m_problemsLabel);
    layout->addStretch(1);

    m_fields = {{QStringLiteral("name"), m_name},
                {QStringLiteral("dataset.path"), m_datasetPath},
                {QStringLiteral("dataset.train_limit"), m_trainLimit},
                {QStringLiteral("dataset.test_limit"), m_testLimit},
                {QStringLiteral("devices"), m_devices},
                {QStringLiteral("batch_size"), m_batchSize},
                {QStringLiteral("learning_rate"), m_learningRate},
                {QStringLiteral("epochs"), m_epochs},
                {QStringLiteral("seed"), m_seed},
                {QStringLiteral("optimizer"), m_optimizer},
                {QStringLiteral("adam_beta1"), m_adamBeta1},
                {QStringLiteral("adam_beta2"), m_adamBeta2},
                {QStringLiteral("adam_eps"), m_adamEps},
                {QStringLiteral("momentum"), m_momentum},
                {QStringLiteral("weight_decay"), m_weightDecay},
                {QStringLiteral("precision"), m_precision},
                {QStringLiteral("model.init"), m_init},
                {QStringLiteral("nesterov"), m_nesterov},
                {QStringLiteral("weight_decay_norm_and_bias"), m_decayNormAndBias},
                {QStringLiteral("schedule.kind"), m_schedule},
                {QStringLiteral("schedule.warmup_epochs"), m_warmup},
                {QStringLiteral("label_smoothing"), m_labelSmoothing},
                {QStringLiteral("grad_clip_norm"), m_gradClip},
                {QStringLiteral("ema_decay"), m_emaDecay},
                {QStringLiteral("early_stopping.patience"), m_patience},
                {QStringLiteral("augmentation.flip"), m_flip},
                {QStringLiteral("augmentation.crop_padding"), m_cropPadding},
                {QStringLiteral("augmentation.erasing"), m_erasing},
                {QStringLiteral("speed.channels_last"), m_channelsLast},
                {QStringLiteral("speed.warmup"), m_speedWarmup},
                {QStringLiteral("cpu_threads"), m_cpuThreads}};

    for (QLineEdit *edit : {m_name, m_datasetPath, m_learningRate, m_seed, m_adamBeta1, m_adamBeta2, m_adamEps, m_momentum, m_weightDecay, m_warmup, m_labelSmoothing, m_gradClip, m_emaDecay, m_erasing})
        connect(edit, &QLineEdit::textChanged, this, &ExperimentForm::onEdited);
    for (QSpinBox *box : {m_cpuReplicas, m_batchSize, m_epochs, m_cpuThreads, m_trainLimit, m_testLimit, m_patience, m_cropPadding})
        connect(box, &QSpinBox::valueChanged, this, &ExperimentForm::onEdited);
    for (QComboBox *combo : {m_datasetKind, m_optimizer, m_precision, m_init, m_channelsLast, m_speedWarmup, m_schedule})
        connect(combo, &QComboBox::currentIndexChanged, this, &ExperimentForm::onEdited);
    for (QCheckBox *box : {m_fusedSgd, m_cudaGraphs, m_winograd, m_nesterov, m_flip, m_decayNormAndBias})
        connect(box, &QCheckBox::toggled, this, &ExperimentForm::onEdited);
    connect(m_devices, &QListWidget::itemChanged, this, &ExperimentForm::onEdited);
    connect(m_optimizer, &QComboBox::currentIndexChanged, this, &ExperimentForm::onOptimizerPicked);
    connect(m_chooseFolder, &QPushButton::clicked, this, &ExperimentForm::chooseDatasetFolder);
    connect(m_download, &QPushButton::clicked, this, &ExperimentForm::startDownload);
    connect(m_cancelDownload, &QPushButton::clicked, this, &ExperimentForm::cancelDownload);
    connect(m_downloader, &DatasetDownload::progress, this, &ExperimentForm::onDownloadProgress);
    connect(m_downloader, &DatasetDownload::finished, this, &ExperimentForm::onDownloadFinished);

    setConfig(ExperimentConfig{});
}

void ExperimentForm::buildDevices(const std::vector<std::string> &configured)
{
    m_devices->clear();
    std::vector<std::string> shown;
    for (const DeviceInfo &d : listDevices()) {
        const QString text = d.id == "cpu"
            ? QStringLiteral("cpu — %1, %2").arg(QString::fromStdString(d.name), gib(d.memoryBytes))
            : QStringLiteral("%1 — %2, %3").arg(QString::fromStdString(d.id), QString::fromStdString(d.name),
                                               gib(d.memoryBytes));
        auto *item = new QListWidgetItem(text, m_devices);
        item->setData(kIdRole, QString::fromStdString(d.id));
        shown.push_back(d.id);
    }
    // A configured device this machine lacks stays listed, so the file round-trips and validation names it.
    for (const std::string &id : configured) {
        if (std::find(shown.begin(), shown.end(), id) != shown.end())
            continue;
        auto *item = new QListWidgetItem(tr("%1 — not on this machine").arg(QString::fromStdString(id)), m_devices);
        item->setData(kIdRole, QString::fromStdString(id));
        item->setForeground(QColor(0xb7, 0x1c, 0x1c));
        shown.push_back(id);
    }
    for (int i = 0; i < m_devices->count(); ++i) {
        QListWidgetItem *item = m_devices->item(i);
        const std::string id = item->data(kIdRole).toString().toStdString();
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsSelectable);
        const bool on = std::find(configured.begin(), configured.end(), id) != configured.end();
        item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
    }
}

void ExperimentForm::setLearningRate(double learningRate)
{
    m_learningRate->setText(shortest(learningRate));
}

void ExperimentForm::setConfig(const ExperimentConfig &config)
{
    m_loading = true;
    m_setAsideMomentum.clear();
    m_base = config;
    m_name->setText(QString::fromStdString(config.name));
    const int kind = config.dataset.path == kBuiltin ? kSampleKind : config.dataset.path == kManaged ? kManagedKind : kFolderKind;
    m_datasetKind->setCurrentIndex(kind);
    m_datasetPath->setText(kind == kFolderKind ? QString::fromStdString(config.dataset.path) : QString());
    buildDevices(config.devices);
    m_cpuReplicas->setValue(std::max<int>(1, static_cast<int>(std::count(config.devices.begin(), config.devices.end(),
                                                                          std::string("cpu")))));
    m_batchSize->setValue(static_cast<int>(std::clamp<std::int64_t>(config.batchSize, INT_MIN, INT_MAX)));
    m_learningRate->setText(shortest(config.learningRate));
    m_epochs->setValue(config.epochs);
    m_seed->setText(QString::number(config.seed));
    showChoice(m_optimizer, config.optimizer);
    m_adamBeta1->setText(shortest(config.adamBeta1));
    m_adamBeta2->setText(shortest(config.adamBeta2));
    m_adamEps->setText(shortest(config.adamEps));
    m_momentum->setText(shortest(config.momentum));
    m_weightDecay->setText(shortest(config.weightDecay));
    m_nesterov->setChecked(config.nesterov);
    m_decayNormAndBias->setChecked(config.weightDecayNormAndBias);
    showChoice(m_schedule, config.schedule.kind);
    m_warmup->setText(shortest(config.schedule.warmupEpochs));
    // A recipe beyond the chapter's shows its schedule (and the preview) as it opens.
    if ((config.schedule.kind != "constant" || config.schedule.warmupEpochs > 0 || config.optimizer != "sgd") && m_advancedToggle)
        m_advancedToggle->setChecked(true);
    m_labelSmoothing->setText(shortest(config.labelSmoothing));
    m_gradClip->setText(shortest(config.gradClipNorm));
    m_emaDecay->setText(shortest(config.emaDecay));
    m_patience->setValue(config.earlyStopping.patience);
    m_flip->setChecked(config.augmentation.flip);
    m_cropPadding->setValue(config.augmentation.cropPadding);
    m_erasing->setText(shortest(config.augmentation.erasing));
    showChoice(m_precision, config.precision);
    showChoice(m_init, config.model.init);
    showChoice(m_channelsLast, config.speed.channelsLast);
    showChoice(m_speedWarmup, config.speed.warmup);
    m_fusedSgd->setChecked(config.speed.fusedSgd);
    m_cudaGraphs->setChecked(config.speed.cudaGraphs);
    m_winograd->setChecked(config.speed.winograd);
    m_cpuThreads->setValue(config.cpuThreads);
    m_trainLimit->setValue(static_cast<int>(std::clamp<std::int64_t>(config.dataset.trainLimit, INT_MIN, INT_MAX)));
    m_testLimit->setValue(static_cast<int>(std::clamp<std::int64_t>(config.dataset.testLimit, INT_MIN, INT_MAX)));
    m_loading = false;
    onEdited();
}

ExperimentConfig ExperimentForm::config() const
{
    ExperimentConfig c = m_base;
    c.name = m_name->text().toStdString();
    const int kind = m_datasetKind->currentIndex();
    c.dataset.path = kind == kSampleKind ? std::string(kBuiltin) : kind == kManagedKind ? std::string(kManaged)
                                                                                        : m_datasetPath->text().toStdString();
    c.dataset.trainLimit = m_trainLimit->value();
    c.dataset.testLimit = m_testLimit->value();
    std::vector<std::string> checked;
    for (int i = 0; i < m_devices->count(); ++i) {
        if (m_devices->item(i)->checkState() == Qt::Checked)
            checked.push_back(m_devices->item(i)->data(kIdRole).toString().toStdString());
    }
    // The loaded order first (it decides which device is rank 0), then devices checked since, in list order.
    std::vector<std::string> order;
    for (const std::string &id : m_base.devices) {
        if (std::find(order.begin(), order.end(), id) == order.end())
            order.push_back(id);
    }
    for (const std::string &id : checked) {
        if (std::find(order.begin(), order.end(), id) == order.end())
            order.push_back(id);
    }
    c.devices.clear();
    for (const std::string &id : order) {
        if (std::find(checked.begin(), checked.end(), id) == checked.end())
            continue;
        // A repeated GPU stays repeated, so validate() can name it.
        const auto loaded = std::count(m_base.devices.begin(), m_base.devices.end(), id);
        const auto copies = id == "cpu" ? m_cpuReplicas->value() : std::max<long>(1, static_cast<long>(loaded));
        c.devices.insert(c.devices.end(), static_cast<std::size_t>(copies), id);
    }
    c.batchSize = m_batchSize->value();
    bool ok = false;
    if (const double v = parseNumber(m_learningRate->text(), &ok); ok)
        c.learningRate = v;
    c.epochs = m_epochs->value();
    if (const qulonglong v = m_seed->text().trimmed().toULongLong(&ok); ok)
        c.seed = v;
    c.optimizer = m_optimizer->currentText().toStdString();
    if (const double v = parseNumber(m_adamBeta1->text(), &ok); ok)
        c.adamBeta1 = v;
    if (const double v = parseNumber(m_adamBeta2->text(), &ok); ok)
        c.adamBeta2 = v;
    if (const double v = parseNumber(m_adamEps->text(), &ok); ok)
        c.adamEps = v;
    if (const double v = parseNumber(m_momentum->text(), &ok); ok)
        c.momentum = v;
    if (const double v = parseNumber(m_weightDecay->text(), &ok); ok)
        c.weightDecay = v;
    c.nesterov = m_nesterov->isChecked();
    c.weightDecayNormAndBias = m_decayNormAndBias->isChecked();
    c.schedule.kind = m_schedule->currentText().toStdString();
    if (const double v = parseNumber(m_warmup->text(), &ok); ok)
        c.schedule.warmupEpochs = v;
    if (const double v = parseNumber(m_labelSmoothing->text(), &ok); ok)
        c.labelSmoothing = v;
    if (const double v = parseNumber(m_gradClip->text(), &ok); ok)
        c.gradClipNorm = v;
    if (const double v = parseNumber(m_emaDecay->text(), &ok); ok)
        c.emaDecay = v;
    c.earlyStopping.patience = m_patience->value();
    c.augmentation.flip = m_flip->isChecked();
    c.augmentation.cropPadding = m_cropPadding->value();
    if (const double v = parseNumber(m_erasing->text(), &ok); ok)
        c.augmentation.erasing = v;
    c.precision = m_precision->currentText().toStdString();
    c.model.init = m_init->currentText().toStdString();
    c.speed.channelsLast = m_channelsLast->currentText().toStdString();
    c.speed.warmup = m_speedWarmup->currentText().toStdString();
    c.speed.fusedSgd = m_fusedSgd->isChecked();
    c.speed.cudaGraphs = m_cudaGraphs->isChecked();
    c.speed.winograd = m_winograd->isChecked();
    c.cpuThreads = m_cpuThreads->value();
    return c;
}

QStringList ExperimentForm::unparsedText() const
{
    QStringList list;
    auto number = [&](const char *key, const QLineEdit *edit, bool integer) {
        bool ok = false;
        const QString text = edit->text().trimmed();
        if (integer)
            (void)text.toULongLong(&ok);
        else
            (void)parseNumber(text, &ok);
        if (!ok)
            list << QStringLiteral("%1: must be %2, got \"%3\"")
                        .arg(QLatin1String(key), integer ? tr("a whole number, 0 or more") : tr("a number"), text);
    };
    number("learning_rate", m_learningRate, false);
    number("seed", m_seed, true);
    number("adam_beta1", m_adamBeta1, false);
    number("adam_beta2", m_adamBeta2, false);
    number("adam_eps", m_adamEps, false);
    number("momentum", m_momentum, false);
    number("weight_decay", m_weightDecay, false);
    number("schedule.warmup_epochs", m_warmup, false);
    number("label_smoothing", m_labelSmoothing, false);
    number("grad_clip_norm", m_gradClip, false);
    number("ema_decay", m_emaDecay, false);
    number("augmentation.erasing", m_erasing, false);
    return list;
}

QStringList ExperimentForm::problems() const
{
    QStringList list = unparsedText();
    // The core checks only that the folder exists; the form can say before Start what it lacks.
    if (m_datasetKind->currentIndex() == kFolderKind && !m_datasetPath->text().isEmpty()) {
        const DatasetStatus status = inspectDataset(m_datasetPath->text().toStdString());
        if (!status.ok && std::filesystem::is_directory(m_datasetPath->text().toStdString()))
            list << QStringLiteral("dataset.path: %1, got \"%2\"")
                        .arg(QString::fromStdString(status.message), m_datasetPath->text());
    }
    for (const std::string &p : config().validate()) {
        const QString problem = QString::fromStdString(p);
        const QString key = problem.section(QLatin1Char(':'), 0, 0);
        // A text that does not parse already has its message; the stale value's would mislead.
        if (!std::any_of(list.cbegin(), list.cend(), [&](const QString &l) { return l.startsWith(key + ':'); }))
            list << problem;
    }
    return list;
}

void ExperimentForm::onEdited()
{
    if (m_loading)
        return;
    refreshDerived();
    showProblems();
    Q_EMIT changed();
}

void ExperimentForm::onOptimizerPicked()
{
    if (m_loading)
        return;
    // AdamW refuses SGD's momentum: picking it puts SGD's aside (shown as 0), picking SGD again brings it back.
    if (m_optimizer->currentText() != QLatin1String("sgd")) {
        if (m_setAsideMomentum.isEmpty()) {
            m_setAsideMomentum = m_momentum->text();
            m_setAsideNesterov = m_nesterov->isChecked();
        }
        m_momentum->setText(QStringLiteral("0"));
        m_nesterov->setChecked(false);
    } else if (!m_setAsideMomentum.isEmpty()) {
        m_momentum->setText(m_setAsideMomentum);
        m_nesterov->setChecked(m_setAsideNesterov);
        m_setAsideMomentum.clear();
    }
}

void ExperimentForm::refreshDerived()
{
    const ExperimentConfig c = config();
    m_schedulePreview->setConfig(c);
    m_augmentPreview->setConfig(c);
    const int kind = m_datasetKind->currentIndex();
    const bool folder = kind == kFolderKind;
    m_datasetPath->setVisible(folder);
    m_chooseFolder->setEnabled(folder);
    const std::string path = folder ? m_datasetPath->text().toStdString() : kind == kManagedKind ? kManaged : kBuiltin;
    const bool downloading = m_downloader->isRunning();
    const bool missing = kind == kManagedKind && !datasetMissingHint(kManaged).empty();
    m_download->setVisible(kind == kManagedKind && (missing || downloading));
    m_download->setEnabled(!downloading);
    for (QWidget *w : std::initializer_list<QWidget *>{m_downloadProgress, m_downloadRate, m_cancelDownload})
        w->setVisible(downloading);
    if (path.empty()) {
        m_datasetStatus->setText(tr("choose a folder holding train-images-idx3-ubyte(.gz) and the three other files"));
    } else if (missing) {
        QString text = downloading ? tr("downloading Fashion-MNIST into %1").arg(QString::fromStdString(managedDatasetDir()))
                                   : tr("Fashion-MNIST is not downloaded yet: Download… fetches it (about 30 MB) into %1")
                                         .arg(QString::fromStdString(managedDatasetDir()));
        if (!m_downloadError.isEmpty() && !downloading)
            text = tr("download failed: %1").arg(m_downloadError);
        m_datasetStatus->setText(text);
        m_datasetStatus->setStyleSheet(m_downloadError.isEmpty() || downloading ? QString() : QStringLiteral("color: #b71c1c;"));
    } else {
        const DatasetStatus status = inspectDataset(path);
        QString text = QString::fromStdString(status.message);
        if (kind == kSampleKind && status.ok)
            text += tr(" (not the official split)");
        m_datasetStatus->setText(text);
        m_datasetStatus->setStyleSheet(status.ok ? QString() : QStringLiteral("color: #b71c1c;"));
    }
    bool cpuChecked = false;
    for (int i = 0; i < m_devices->count(); ++i)
        cpuChecked |= m_devices->item(i)->data(kIdRole).toString() == QLatin1String("cpu")
                      && m_devices->item(i)->checkState() == Qt::Checked;
    m_cpuReplicas->setEnabled(cpuChecked);
    // Each optimizer's own keys; a value the other one refuses stays editable, so its problem can be mended here.
    const bool sgd = c.optimizer == "sgd";
    m_momentum->setEnabled(sgd || c.momentum != 0);
    m_nesterov->setEnabled(sgd || c.nesterov);
    for (QLineEdit *edit : {m_adamBeta1, m_adamBeta2, m_adamEps})
        edit->setEnabled(!sgd);
    const auto replicas = static_cast<std::int64_t>(config().devices.size());
    const std::int64_t batch = m_batchSize->value();
    if (replicas <= 1 || batch < replicas) {
        m_perDevice->setText(replicas == 1 ? tr("on 1 device") : QString());
    } else {
        const std::int64_t low = batch / replicas;
        m_perDevice->setText(batch % replicas == 0 ? tr("%1 per device").arg(low)
                                                   : tr("%1–%2 per device").arg(low).arg(low + 1));
    }
}

void ExperimentForm::showProblems()
{
    m_problemsList = problems();
    for (auto it = m_fields.cbegin(); it != m_fields.cend(); ++it) {
        QStringList mine;
        for (const QString &p : std::as_const(m_problemsList)) {
            const QString key = p.section(QLatin1Char(':'), 0, 0);
            if (key == it.key() || key.startsWith(it.key() + QLatin1Char('[')))
                mine << p;
        }
        QWidget *field = it.value();
        field->setProperty("invalid", !mine.isEmpty());
        field->setStyleSheet(mine.isEmpty() ? QString() : QStringLiteral("border: 1px solid #c62828;"));
        field->setToolTip(mine.join(QLatin1Char('\n')));
    }
    for (const QString &p : std::as_const(m_problemsList)) {
        const QString key = p.section(QLatin1Char(':'), 0, 0);
        for (const char *field : {"optimizer", "adam_beta1", "adam_beta2", "adam_eps", "momentum", "weight_decay", "nesterov", "schedule.kind", "schedule.warmup_epochs", "label_smoothing", "grad_clip_norm", "ema_decay",
                                 "early_stopping.patience", "augmentation.crop_padding", "augmentation.erasing", "precision", "speed.channels_last", "speed.warmup", "cpu_threads",
                                 "dataset.train_limit", "dataset.test_limit"}) {
            if (key == QLatin1String(field) && m_advancedToggle)
                m_advancedToggle->setChecked(true);
        }
    }
    m_problemsLabel->setText(m_problemsList.join(QLatin1Char('\n')));
    m_problemsLabel->setVisible(!m_problemsList.isEmpty());
}

void ExperimentForm::chooseDatasetFolder()
{
    const QString start = m_datasetPath->text().isEmpty() ? m_datasetStartFolder : m_datasetPath->text();
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Fashion-MNIST folder"), start);
    if (folder.isEmpty())
        return;
    m_datasetPath->setText(folder);
    Q_EMIT datasetFolderChosen(folder);
}

void ExperimentForm::setDownloadSource(const DatasetManifest &manifest, const QStringList &mirrors)
{
    m_manifest = manifest;
    m_mirrors = mirrors;
}

bool ExperimentForm::isDownloading() const
{
    return m_downloader->isRunning();
}

void ExperimentForm::startDownload()
{
    if (m_downloader->isRunning())
        return;
    m_downloadError.clear();
    m_downloadProgress->setRange(0, 0);
    m_downloadRate->clear();
    m_downloader->start(QString::fromStdString(managedDatasetDir()), m_manifest, m_mirrors);
    refreshDerived();
}

void ExperimentForm::cancelDownload()
{
    m_downloader->cancel();
}

void ExperimentForm::onDownloadProgress(const QString &file, int fileIndex, int fileCount, qint64 bytes, qint64 total,
                                        double bytesPerSecond)
{
    // Percent of the whole set when sizes are known: the manifest gives every file's size.
    qint64 before = 0, all = 0;
    for (int i = 0; i < static_cast<int>(m_manifest.files.size()); ++i) {
        const auto size = static_cast<qint64>(m_manifest.files[static_cast<std::size_t>(i)].size);
        all += size;
        if (i < fileIndex - 1)   // fileIndex is 1-based
            before += size;
    }
    if (all > 0) {
        m_downloadProgress->setRange(0, 1000);
        m_downloadProgress->setValue(static_cast<int>(std::min<qint64>(1000, 1000 * (before + bytes) / all)));
    }
    m_downloadProgress->setFormat(tr("%1 (%2 of %3)").arg(file).arg(fileIndex).arg(fileCount));
    m_downloadProgress->setTextVisible(true);
    m_downloadRate->setText(tr("%1 / %2 MB, %3 MB/s")
                                .arg(static_cast<double>(bytes) / 1e6, 0, 'f', 1)
                                .arg(static_cast<double>(std::max(total, bytes)) / 1e6, 0, 'f', 1)
                                .arg(bytesPerSecond / 1e6, 0, 'f', 1));
}

void ExperimentForm::onDownloadFinished(bool ok, bool cancelled, const QString &error)
{
    m_downloadError = ok ? QString() : cancelled ? tr("cancelled; Download… resumes where it stopped") : error;
    refreshDerived();
    showProblems();
    Q_EMIT changed();
    Q_EMIT downloadFinished(ok, m_downloadError);
}

bool ExperimentForm::advancedOpen() const
{
    return m_advancedToggle->isChecked();
}

void ExperimentForm::setAdvancedOpen(bool open)
{
    m_advancedToggle->setChecked(open);
}

} // namespace trainlab
