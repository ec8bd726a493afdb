#include "ui/sweepdialog.h"

#include "core/runs/runstorage.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include <limits>
#include <optional>
#include <tuple>

namespace trainlab {

namespace {

QStringList items(const QString &text, QChar separator = QLatin1Char(','))
{
    QStringList out;
    for (const QString &part : text.split(separator)) {
        const QString t = part.trimmed();
        if (!t.isEmpty())
            out << t;
    }
    return out;
}

QString problem(const char *axis, int i, const QString &value, const QString &what)
{
    return QStringLiteral("axes.%1[%2]: %3, got \"%4\"").arg(QLatin1String(axis)).arg(i).arg(what, value.left(80));
}

template <typename T, typename Convert>
std::vector<T> numbers(const char *axis, const QString &text, Convert convert, const QString &what, QStringList *problems)
{
    std::vector<T> out;
    const QStringList parts = items(text);
    for (int i = 0; i < parts.size(); ++i) {
        bool ok = false;
        const auto v = convert(parts[i], &ok);
        if (!ok)
            problems->append(problem(axis, i, parts[i], what));
        else
            out.push_back(static_cast<T>(v));
    }
    return out;
}

QString number(double v)
{
    return QString::number(v, 'g', 12);
}

// "0.001..0.3" or "0.001..0.3 log": a range to draw from in mode random; nullopt when text is a list.
std::optional<AxisRange> rangeOf(const char *axis, const QString &text, QStringList *problems)
{
    const int dots = text.indexOf(QStringLiteral(".."));
    if (dots < 0)
        return std::nullopt;
    QString high = text.mid(dots + 2).trimmed();
    AxisRange r;
    if (high.endsWith(QStringLiteral("log"), Qt::CaseInsensitive)) {
        r.log = true;
        high.chop(3);
    }
    bool okLow = false;
    bool okHigh = false;
    r.min = text.left(dots).trimmed().toDouble(&okLow);
    r.max = high.trimmed().toDouble(&okHigh);
    if (!okLow || !okHigh) {
        problems->append(QObject::tr("axes.%1: a range is MIN..MAX or MIN..MAX log, got \"%2\"")
                             .arg(QLatin1String(axis), text.trimmed().left(80)));
        return AxisRange{};
    }
    return r;
}

template <typename T, typename Format>
QString joined(const std::vector<T> &values, Format format, const QString &separator = QStringLiteral(", "))
{
    QStringList parts;
    for (const T &v : values)
        parts << format(v);
    return parts.join(separator);
}

QString baseText(const ExperimentConfig &c)
{
    QStringList devices;
    for (const std::string &d : c.devices)
        devices << QString::fromStdString(d);
    return QObject::tr("%1: %2, batch %3, lr %4, %5 epochs, %6")
        .arg(QString::fromStdString(c.name), devices.join(QLatin1Char(',')))
        .arg(c.batchSize)
        .arg(number(c.learningRate))
        .arg(c.epochs)
        .arg(QString::fromStdString(c.dataset.path));
}

} // namespace

SweepDialog::SweepDialog(const ExperimentConfig &base, QWidget *parent)
    : QDialog(parent)
    , m_base(base)
    , m_currentBase(base)
    , m_preset(new QComboBox(this))
    , m_name(new QLineEdit(QStringLiteral("sweep"), this))
    , m_notes(new QLineEdit(this))
    , m_baseLabel(new QLabel(this))
    , m_mode(new QComboBox(this))
    , m_runs(new QSpinBox(this))
    , m_randomSeed(new QSpinBox(this))
    , m_learningRate(axisEdit("learning_rate", tr("e.g. 0.01, 0.05, 0.2; random: 0.001..0.3 log")))
    , m_batchSize(axisEdit("batch_size", tr("e.g. 32, 64")))
    , m_devices(axisEdit("devices", tr("device sets split by ';', e.g. cuda:0; cuda:0,cuda:1")))
    , m_epochs(axisEdit("epochs", tr("e.g. 2, 5")))
    , m_seed(axisEdit("seed", tr("e.g. 0, 1, 2")))
    , m_precision(axisEdit("precision", tr("e.g. fp32, bf16")))
    , m_momentum(axisEdit("momentum", tr("e.g. 0, 0.9; random: 0.8..0.99")))
    , m_weightDecay(axisEdit("weight_decay", tr("e.g. 0, 5e-4")))
    , m_labelSmoothing(axisEdit("label_smoothing", tr("e.g. 0, 0.1")))
    , m_gradClipNorm(axisEdit("grad_clip_norm", tr("e.g. 0, 1")))
    , m_emaDecay(axisEdit("ema_decay", tr("e.g. 0, 0.999")))
    , m_schedule(axisEdit("schedule", tr("e.g. constant, cosine, one_cycle")))
    , m_warmupEpochs(axisEdit("warmup_epochs", tr("e.g. 0, 1")))
    , m_augmentation(axisEdit("augmentation", tr("sets split by ';', e.g. none; crop 2, flip; crop 2, flip, erasing 0.25")))
    , m_init(axisEdit("init", tr("initial weights, e.g. d2l, pytorch")))
    , m_optimizer(axisEdit("optimizer", tr("optimizers, e.g. sgd, adamw")))
    , m_scaleLr(new QCheckBox(tr("Scale the learning rate with the batch size (linear rule)"), this))
    , m_stopOnFailure(new QCheckBox(tr("Stop the queue when a run fails"), this))
    , m_prune(new QComboBox(this))
    , m_pruneValue(new QDoubleSpinBox(this))
    , m_pruneStartup(new QSpinBox(this))
    , m_pruneMinEpochs(new QSpinBox(this))
    , m_count(new QLabel(this))
    , m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this))
    , m_validateTimer(new QTimer(this))
{
    setWindowTitle(tr("Add Sweep"));
    setObjectName(QStringLiteral("sweepDialog"));
    m_preset->setObjectName(QStringLiteral("sweepPreset"));
    m_preset->addItem(tr("Current experiment"), QString());
    for (const std::string &name : sweepPresetNames())
        m_preset->addItem(tr("Preset: %1").arg(QString::fromStdString(name)), QString::fromStdString(name));
    m_name->setObjectName(QStringLiteral("sweepName"));
    m_notes->setObjectName(QStringLiteral("sweepNotes"));
    m_notes->setPlaceholderText(tr("what this sweep tries, kept in each run's notes (History's Notes column)"));
    m_mode->setObjectName(QStringLiteral("sweepMode"));
    m_mode->addItem(tr("grid: every combination"), QStringLiteral("grid"));
    m_mode->addItem(tr("zip: the i-th value of each axis together"), QStringLiteral("zip"));
    m_mode->addItem(tr("random: runs drawn from each axis's values or range"), QStringLiteral("random"));
    m_runs->setObjectName(QStringLiteral("sweepRuns"));
    m_runs->setRange(1, SweepConfig::kMaxRuns);
    m_runs->setValue(10);
    m_runs->setToolTip(tr("How many runs to draw"));
    m_randomSeed->setObjectName(QStringLiteral("sweepRandomSeed"));
    m_randomSeed->setRange(0, std::numeric_limits<int>::max());
    m_randomSeed->setToolTip(tr("The same seed draws the same runs; change it for other draws"));
    m_scaleLr->setObjectName(QStringLiteral("sweepScaleLr"));
    m_stopOnFailure->setObjectName(QStringLiteral("sweepStopOnFailure"));
    m_prune->setObjectName(QStringLiteral("sweepPrune"));
    m_prune->addItem(tr("never: every run trains all its epochs"), QString());
    m_prune->addItem(tr("below the median of the others"), QStringLiteral("median"));
    m_prune->addItem(tr("outside the top share of the others"), QStringLiteral("percentile"));
    m_prune->addItem(tr("below a test accuracy"), QStringLiteral("threshold"));
    m_prune->setToolTip(tr("After each epoch, a run that falls behind stops and is kept as pruned; the queue goes on"));
    m_pruneValue->setObjectName(QStringLiteral("sweepPruneValue"));
    showPruneValue(PruneRule{}.percentile);
    m_pruneStartup->setObjectName(QStringLiteral("sweepPruneStartup"));
    m_pruneStartup->setRange(1, SweepConfig::kMaxRuns);
    m_pruneStartup->setValue(PruneRule{}.startupRuns);
    m_pruneStartup->setPrefix(tr("once "));
    m_pruneStartup->setSuffix(tr(" others reached the epoch"));
    m_pruneMinEpochs->setObjectName(QStringLiteral("sweepPruneMinEpochs"));
    m_pruneMinEpochs->setRange(1, 100000);
    m_pruneMinEpochs->setValue(PruneRule{}.minEpochs);
    m_pruneMinEpochs->setPrefix(tr("from epoch "));
    m_count->setObjectName(QStringLiteral("sweepCount"));
    m_count->setWordWrap(true);
    m_baseLabel->setWordWrap(true);
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Add to Queue"));

    auto *form = new QFormLayout;
    form->addRow(tr("Start from"), m_preset);
    form->addRow(tr("Base"), m_baseLabel);
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Notes"), m_notes);
    form->addRow(tr("Mode"), m_mode);
    auto *draws = new QHBoxLayout;
    draws->addWidget(m_runs);
    draws->addWidget(new QLabel(tr("draw seed"), this));
    draws->addWidget(m_randomSeed);
    draws->addStretch();
    form->addRow(tr("Runs"), draws);
    form->addRow(QStringLiteral("learning_rate"), m_learningRate);
    form->addRow(QStringLiteral("batch_size"), m_batchSize);
    form->addRow(QStringLiteral("devices"), m_devices);
    form->addRow(QStringLiteral("epochs"), m_epochs);
    form->addRow(QStringLiteral("seed"), m_seed);
    form->addRow(QStringLiteral("precision"), m_precision);
    form->addRow(QStringLiteral("momentum"), m_momentum);
    form->addRow(QStringLiteral("weight_decay"), m_weightDecay);
    form->addRow(QStringLiteral("label_smoothing"), m_labelSmoothing);
    form->addRow(QStringLiteral("grad_clip_norm"), m_gradClipNorm);
    form->addRow(QStringLiteral("ema_decay"), m_emaDecay);
    form->addRow(QStringLiteral("schedule"), m_schedule);
    form->addRow(QStringLiteral("warmup_epochs"), m_warmupEpochs);
    form->addRow(QStringLiteral("augmentation"), m_augmentation);
    form->addRow(QStringLiteral("init"), m_init);
    form->addRow(QStringLiteral("optimizer"), m_optimizer);
    form->addRow(QString(), m_scaleLr);
    form->addRow(QString(), m_stopOnFailure);
    auto *prune = new QHBoxLayout;
    prune->addWidget(m_prune);
    prune->addWidget(m_pruneValue);
    prune->addWidget(m_pruneStartup);
    prune->addWidget(m_pruneMinEpochs);
    prune->addStretch();
    form->addRow(tr("Prune"), prune);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_count);
    layout->addWidget(m_buttons);

    // Re-checked after a pause in typing: a 10,000-run grid validates every planned config.
    m_validateTimer->setSingleShot(true);
    m_validateTimer->setInterval(150);
    connect(m_validateTimer, &QTimer::timeout, this, &SweepDialog::revalidate);
    for (QLineEdit *edit : {m_name, m_notes, m_learningRate, m_batchSize, m_devices, m_epochs, m_seed, m_precision, m_momentum,
                            m_weightDecay, m_labelSmoothing, m_gradClipNorm, m_emaDecay, m_schedule, m_warmupEpochs, m_augmentation, m_init, m_optimizer})
        connect(edit, &QLineEdit::textChanged, m_validateTimer, qOverload<>(&QTimer::start));
    connect(m_mode, &QComboBox::currentIndexChanged, this, &SweepDialog::revalidate);
    connect(m_runs, &QSpinBox::valueChanged, m_validateTimer, qOverload<>(&QTimer::start));
    connect(m_randomSeed, &QSpinBox::valueChanged, m_validateTimer, qOverload<>(&QTimer::start));
    connect(m_scaleLr, &QCheckBox::toggled, this, &SweepDialog::revalidate);
    connect(m_prune, &QComboBox::currentIndexChanged, this, [this] {
        // A threshold a little above chance for ten classes: a run still at chance after an epoch learns nothing.
        showPruneValue(m_prune->currentData().toString() == QLatin1String("threshold") ? 0.2 : PruneRule{}.percentile);
        revalidate();
    });
    connect(m_pruneValue, &QDoubleSpinBox::valueChanged, m_validateTimer, qOverload<>(&QTimer::start));
    connect(m_preset, &QComboBox::currentIndexChanged, this, [this](int index) {
        const QString name = m_preset->itemData(index).toString();
        if (name.isEmpty()) {
            m_base = m_currentBase;
            revalidate();
        } else {
            loadPreset(name);
        }
    });
    connect(m_buttons, &QDialogButtonBox::accepted, this, &SweepDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    m_confirm = [this](long long runs) {
        return QMessageBox::question(this, tr("Large Sweep"),
                                     tr("This sweep has %1 runs, which may take a long time. Queue them all?").arg(runs))
               == QMessageBox::Yes;
    };
    m_name->setText(QString::fromStdString(base.name) + QStringLiteral("-sweep"));
    revalidate();
}

QLineEdit *SweepDialog::axisEdit(const char *axis, const QString &placeholder)
{
    auto *edit = new QLineEdit(this);
    edit->setObjectName(QStringLiteral("sweepAxis_") + QLatin1String(axis));
    edit->setPlaceholderText(placeholder);
    return edit;
}

bool SweepDialog::loadPreset(const QString &name)
{
    SweepConfig sweep;
    try {
        sweep = loadSweepPreset(name.toStdString());
    } catch (const std::exception &) {
        return false;
    }
    setSweep(sweep);
    const int index = m_preset->findData(name);
    if (index >= 0 && index != m_preset->currentIndex()) {
        const QSignalBlocker block(m_preset);
        m_preset->setCurrentIndex(index);
    }
    return true;
}

void SweepDialog::setSweep(const SweepConfig &sweep)
{
    m_base = sweep.base;
    m_name->setText(QString::fromStdString(sweep.name));
    m_mode->setCurrentIndex(std::max(0, m_mode->findData(QString::fromStdString(sweep.mode))));
    if (sweep.mode == "random") {
        m_runs->setValue(sweep.runs);
        m_randomSeed->setValue(static_cast<int>(std::min<std::uint64_t>(sweep.randomSeed, std::numeric_limits<int>::max())));
    }
    m_learningRate->setText(joined(sweep.learningRate, number));
    m_batchSize->setText(joined(sweep.batchSize, [](std::int64_t v) { return QString::number(v); }));
    m_devices->setText(joined(
        sweep.devices,
        [](const std::vector<std::string> &set) {
            return joined(set, [](const std::string &d) { return QString::fromStdString(d); }, QStringLiteral(","));
        },
        QStringLiteral("; ")));
    m_epochs->setText(joined(sweep.epochs, [](int v) { return QString::number(v); }));
    m_seed->setText(joined(sweep.seed, [](std::uint64_t v) { return QString::number(v); }));
    m_precision->setText(joined(sweep.precision, [](const std::string &p) { return QString::fromStdString(p); }));
    m_momentum->setText(joined(sweep.momentum, number));
    m_weightDecay->setText(joined(sweep.weightDecay, number));
    m_labelSmoothing->setText(joined(sweep.labelSmoothing, number));
    m_gradClipNorm->setText(joined(sweep.gradClipNorm, number));
    m_emaDecay->setText(joined(sweep.emaDecay, number));
    m_schedule->setText(joined(sweep.schedule, [](const std::string &k) { return QString::fromStdString(k); }));
    m_warmupEpochs->setText(joined(sweep.warmupEpochs, number));
    m_augmentation->setText(joined(
        sweep.augmentation, [](const AugmentationConfig &a) { return QString::fromStdString(a.describe()); },
        QStringLiteral("; ")));
    m_init->setText(joined(sweep.init, [](const std::string &k) { return QString::fromStdString(k); }));
    m_optimizer->setText(joined(sweep.optimizer, [](const std::string &k) { return QString::fromStdString(k); }));
    for (const auto &[axis, range] : sweep.ranges) {
        if (auto *edit = findChild<QLineEdit *>(QStringLiteral("sweepAxis_") + QString::fromStdString(axis)))
            edit->setText(QString::fromStdString(range.text()));
    }
    m_scaleLr->setChecked(sweep.scaleLrWithBatch);
    m_stopOnFailure->setChecked(sweep.stopOnFailure);
    const PruneRule rule = sweep.pruning.on() ? sweep.pruning : PruneRule{};
    {
        const QSignalBlocker quiet(m_prune);
        m_prune->setCurrentIndex(std::max(0, m_prune->findData(QString::fromStdString(rule.rule))));
    }
    showPruneValue(rule.rule == "threshold" ? rule.minTestAcc : rule.percentile);
    m_pruneStartup->setValue(rule.startupRuns);
    m_pruneMinEpochs->setValue(rule.minEpochs);
    revalidate();
}

void SweepDialog::showPruneValue(double value)
{
    const QSignalBlocker quiet(m_pruneValue);
    if (m_prune->currentData().toString() == QLatin1String("threshold")) {
        m_pruneValue->setRange(0.0, 1.0);
        m_pruneValue->setDecimals(3);
        m_pruneValue->setSingleStep(0.05);
        m_pruneValue->setPrefix(tr("test acc "));
        m_pruneValue->setSuffix(QString());
        m_pruneValue->setToolTip(tr("A run whose test accuracy after an epoch is below this stops"));
    } else {
        m_pruneValue->setRange(1.0, 99.0);
        m_pruneValue->setDecimals(1);
        m_pruneValue->setSingleStep(5.0);
        m_pruneValue->setPrefix(tr("top "));
        m_pruneValue->setSuffix(tr(" %"));
        m_pruneValue->setToolTip(tr("A run whose test accuracy after an epoch is not among the top share of the "
                                    "sweep's other runs at that epoch stops"));
    }
    m_pruneValue->setValue(value);
    // The box rounds (0.5 % shows as 1.0): until it is edited, the sweep keeps the value as given.
    m_givenPruneValue = value;
    m_shownPruneValue = m_pruneValue->value();
}

double SweepDialog::pruneValue() const
{
    return m_pruneValue->value() == m_shownPruneValue ? m_givenPruneValue : m_pruneValue->value();
}

SweepConfig SweepDialog::parse(QStringList *problems) const
{
    SweepConfig s;
    s.name = m_name->text().trimmed().toStdString();
    s.base = m_base;
    s.mode = m_mode->currentData().toString().toStdString();
    if (s.mode == "random") {
        s.runs = m_runs->value();
        s.randomSeed = static_cast<std::uint64_t>(m_randomSeed->value());
    }
    s.scaleLrWithBatch = m_scaleLr->isChecked();
    s.stopOnFailure = m_stopOnFailure->isChecked();
    s.pruning.rule = m_prune->currentData().toString().toStdString();
    if (s.pruning.on()) {
        s.pruning.startupRuns = m_pruneStartup->value();
        s.pruning.minEpochs = m_pruneMinEpochs->value();
        if (s.pruning.rule == "percentile")
            s.pruning.percentile = pruneValue();
        else if (s.pruning.rule == "threshold")
            s.pruning.minTestAcc = pruneValue();
    }
    const QString notNumber = tr("must be a number");
    const QString notInteger = tr("must be a whole number");
    s.batchSize = numbers<std::int64_t>("batch_size", m_batchSize->text(),
                                        [](const QString &t, bool *ok) { return t.toLongLong(ok); }, notInteger, problems);
    s.epochs = numbers<int>("epochs", m_epochs->text(),
                            [](const QString &t, bool *ok) { return t.toInt(ok); }, notInteger, problems);
    s.seed = numbers<std::uint64_t>(
        "seed", m_seed->text(),
        [](const QString &t, bool *ok) {
            const qulonglong v = t.toULongLong(ok);
            *ok = *ok && v <= static_cast<qulonglong>(std::numeric_limits<std::int64_t>::max());
            return v;
        },
        tr("must be a whole number from 0 to 2^63-1"), problems);
    for (const auto &[axis, edit, values] : {std::tuple{"learning_rate", m_learningRate, &s.learningRate},
                                             std::tuple{"momentum", m_momentum, &s.momentum},
                                             std::tuple{"weight_decay", m_weightDecay, &s.weightDecay},
                                             std::tuple{"label_smoothing", m_labelSmoothing, &s.labelSmoothing},
                                             std::tuple{"grad_clip_norm", m_gradClipNorm, &s.gradClipNorm},
                                             std::tuple{"ema_decay", m_emaDecay, &s.emaDecay},
                                             std::tuple{"warmup_epochs", m_warmupEpochs, &s.warmupEpochs}}) {
        if (const auto range = rangeOf(axis, edit->text(), problems)) {
            s.ranges[axis] = *range;
            continue;
        }
        *values = numbers<double>(axis, edit->text(), [](const QString &t, bool *ok) { return t.toDouble(ok); },
                                  notNumber, problems);
    }
    for (const QString &p : items(m_precision->text()))
        s.precision.push_back(p.toStdString());
    for (const QString &k : items(m_schedule->text()))
        s.schedule.push_back(k.toStdString());
    for (const QString &k : items(m_init->text()))
        s.init.push_back(k.toStdString());
    for (const QString &k : items(m_optimizer->text()))
        s.optimizer.push_back(k.toStdString());
    const QStringList augmentations = items(m_augmentation->text(), QLatin1Char(';'));
    for (int i = 0; i < augmentations.size(); ++i) {
        std::string error;
        if (const auto a = AugmentationConfig::fromDescription(augmentations[i].toStdString(), &error))
            s.augmentation.push_back(*a);
        else
            problems->append(problem("augmentation", i, augmentations[i], QString::fromStdString(error)));
    }
    const QStringList sets = m_devices->text().trimmed().isEmpty() ? QStringList() : m_devices->text().split(QLatin1Char(';'));
    for (int i = 0; i < sets.size(); ++i) {
        const QStringList devices = items(sets[i]);
        if (devices.isEmpty()) {
            problems->append(problem("devices", i, sets[i], tr("a device set needs at least one device")));
            continue;
        }
        std::vector<std::string> set;
        for (const QString &d : devices)
            set.push_back(d.toStdString());
        s.devices.push_back(std::move(set));
    }
    return s;
}

QString SweepDialog::notes() const
{
    return m_notes->text().trimmed();
}

SweepConfig SweepDialog::sweep() const
{
    QStringList ignored;
    return parse(&ignored);
}

void SweepDialog::revalidate()
{
    m_validateTimer->stop();
    m_problems.clear();
    const SweepConfig s = parse(&m_problems);
    m_runCount = s.runCount();
    if (m_problems.isEmpty()) {
        for (const std::string &p : s.validate())
            m_problems << QString::fromStdString(p);
    }
    try {
        checkRunNotes(notes().toStdString());
    } catch (const std::exception &e) {
        m_problems << QString::fromStdString(e.what());
    }
    m_baseLabel->setText(baseText(m_base));
    const bool random = s.mode == "random";
    m_runs->setEnabled(random);
    m_randomSeed->setEnabled(random);
    const PruneRule pruning = s.pruning;
    m_pruneStartup->setEnabled(pruning.comparesRuns());
    m_pruneMinEpochs->setEnabled(pruning.on());
    m_pruneValue->setVisible(pruning.rule == "percentile" || pruning.rule == "threshold");
    QString text = countText();
    if (!m_problems.isEmpty()) {
        QStringList shown = m_problems.mid(0, 5);
        if (m_problems.size() > 5)
            shown << tr("… and %1 more").arg(m_problems.size() - 5);
        text += QStringLiteral("\n") + shown.join(QLatin1Char('\n'));
        m_count->setStyleSheet(QStringLiteral("color: #d62728"));
    } else {
        m_count->setStyleSheet(QString());
    }
    m_count->setText(text);
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(m_problems.isEmpty());
}

QString SweepDialog::countText() const
{
    const SweepConfig s = sweep();
    const auto axes = s.activeAxes();
    if (m_runCount < 0)
        return tr("zip needs the same number of values on every axis");
    QStringList parts;
    for (const std::string &a : axes)
        parts << QStringLiteral("%1 %2").arg(QString::fromStdString(a), QString::fromStdString(s.axisSummary(a)));
    if (s.mode == "random") {
        parts.clear();
        for (const std::string &a : axes) {
            parts << (s.ranges.count(a) ? QStringLiteral("%1 %2").arg(QString::fromStdString(a), QString::fromStdString(s.axisSummary(a)))
                                        : tr("%1 one of %2").arg(QString::fromStdString(a)).arg(s.axisSize(a)));
        }
        const QString from = parts.isEmpty() ? tr("no axis has values: the base experiment each time")
                                             : parts.join(QStringLiteral(", "));
        return m_runCount == 1 ? tr("1 run drawn (%1)").arg(from) : tr("%1 runs drawn (%2)").arg(m_runCount).arg(from);
    }
    if (parts.isEmpty())
        return tr("1 run (no axis has values: the base experiment once)");
    const QString how = s.mode == "zip" ? tr("zip of %1").arg(parts.join(QStringLiteral(", ")))
                                        : parts.join(QStringLiteral(" × "));
    return m_runCount == 1 ? tr("1 run (%1)").arg(how) : tr("%1 runs (%2)").arg(m_runCount).arg(how);
}

void SweepDialog::accept()
{
    revalidate();
    if (!m_problems.isEmpty())
        return;
    if (m_runCount > SweepConfig::kAskAbove && m_confirm && !m_confirm(m_runCount))
        return;
    QDialog::accept();
}

} // namespace trainlab
