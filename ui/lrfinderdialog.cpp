#include "ui/lrfinderdialog.h"

#include "core/util/numtext.h"
#include "ui/workerthread.h"

#include <QChart>
#include <QChartView>
#include <QCloseEvent>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLineEdit>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPointer>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QThread>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace trainlab {

namespace {

QString number(double value, int digits = 3)
{
    return QString::fromStdString(formatGeneral(value, digits));
}

} // namespace

LrFinderDialog::LrFinderDialog(const ExperimentConfig &config, QWidget *parent)
    : QDialog(parent)
    , m_config(config)
    , m_minLr(new QLineEdit)
    , m_maxLr(new QLineEdit)
    , m_steps(new QSpinBox)
    , m_startStop(new QPushButton(tr("&Start")))
    , m_use(new QPushButton)
    , m_status(new QLabel)
    , m_loss(new QLineSeries)
    , m_smoothed(new QLineSeries)
    , m_suggested(new QScatterSeries)
    , m_axisX(new QLogValueAxis)
    , m_axisY(new QValueAxis)
{
    setWindowTitle(tr("Find Learning Rate"));
    m_minLr->setText(number(m_options.minLr));
    m_maxLr->setText(number(m_options.maxLr));
    m_minLr->setObjectName(QStringLiteral("minLr"));
    m_maxLr->setObjectName(QStringLiteral("maxLr"));
    m_steps->setObjectName(QStringLiteral("steps"));
    m_startStop->setObjectName(QStringLiteral("startStop"));
    m_use->setObjectName(QStringLiteral("use"));
    m_status->setObjectName(QStringLiteral("status"));
    m_steps->setRange(10, 100000);
    m_steps->setValue(m_options.steps);
    m_status->setWordWrap(true);
    m_use->setEnabled(false);
    m_use->setText(tr("&Use Suggested Rate"));

    const int devices = static_cast<int>(m_config.devices.size());
    // The run's step on one device: each device's share of the batch in turn.
    const QString batch = devices > 1 ? tr("batch %1 (the shares of its %2 devices, one after another)").arg(m_config.batchSize).arg(devices)
                                      : tr("batch %1").arg(m_config.batchSize);
    auto *intro = new QLabel(tr("Trains %1 on %2 with %3 at a learning rate rising from the minimum to the maximum, "
                                "one step each, and draws the loss against the rate. The loss falls, then turns and "
                                "climbs: a good rate to start from lies about ten times below the lowest point. Nothing "
                                "is kept; the form's recipe (momentum, weight decay, precision) is used.")
                                 .arg(QString::fromStdString(m_config.name), QString::fromStdString(m_config.devices.front()), batch));
    intro->setWordWrap(true);

    m_loss->setName(tr("loss"));
    m_loss->setPen(QPen(QColor(0xb0b0b0), 1.0));
    m_smoothed->setName(tr("smoothed loss"));
    m_smoothed->setPen(QPen(QColor(0x1f77b4), 2.0));
    m_suggested->setName(tr("suggested"));
    m_suggested->setMarkerSize(12.0);
    m_suggested->setColor(QColor(0xffd700));
    m_suggested->setBorderColor(QColor(0x1f77b4));
    auto *chart = new QChart;
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setAlignment(Qt::AlignBottom);
    m_axisX->setTitleText(tr("learning rate"));
    m_axisX->setLabelFormat(QStringLiteral("%.0e"));
    m_axisX->setBase(10.0);
    m_axisY->setTitleText(tr("training loss"));
    m_axisY->setLabelFormat(QStringLiteral("%.2f"));
    chart->addAxis(m_axisX, Qt::AlignBottom);
    chart->addAxis(m_axisY, Qt::AlignLeft);
    for (QXYSeries *series : {static_cast<QXYSeries *>(m_loss), static_cast<QXYSeries *>(m_smoothed), static_cast<QXYSeries *>(m_suggested)}) {
        chart->addSeries(series);
        series->attachAxis(m_axisX);
        series->attachAxis(m_axisY);
    }
    auto *view = new QChartView(chart);
    view->setObjectName(QStringLiteral("lrFinderChart"));
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(520, 320);

    auto *form = new QFormLayout;
    form->addRow(tr("Mi&nimum rate:"), m_minLr);
    form->addRow(tr("Ma&ximum rate:"), m_maxLr);
    form->addRow(tr("S&teps:"), m_steps);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_startStop);
    buttons->addStretch();
    buttons->addWidget(m_use);
    auto *closeButton = new QPushButton(tr("&Close"));
    buttons->addWidget(closeButton);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(view, 1);
    layout->addWidget(m_status);
    layout->addLayout(buttons);

    m_flushTimer.setSingleShot(true);
    m_flushTimer.setInterval(40);
    connect(&m_flushTimer, &QTimer::timeout, this, &LrFinderDialog::flush);
    connect(m_minLr, &QLineEdit::textChanged, this, &LrFinderDialog::validate);
    connect(m_maxLr, &QLineEdit::textChanged, this, &LrFinderDialog::validate);
    connect(m_steps, &QSpinBox::valueChanged, this, &LrFinderDialog::validate);
    connect(m_startStop, &QPushButton::clicked, this, [this] { isRunning() ? stop() : start(); });
    connect(m_use, &QPushButton::clicked, this, [this] {
        Q_EMIT learningRateChosen(m_result.suggestedLr);
        close();
    });
    connect(closeButton, &QPushButton::clicked, this, &QWidget::close);
    validate();
}

LrFinderDialog::~LrFinderDialog()
{
    // Only when the window itself goes (the program ends): a step at most.
    if (m_thread) {
        *m_stop = true;
        joinThread();
    }
}

void LrFinderDialog::validate()
{
    if (isRunning())
        return;
    QStringList problems;
    double minLr = 0, maxLr = 0;
    if (!parseDouble(m_minLr->text().trimmed().toStdString(), minLr))
        problems << tr("minimum rate: not a number");
    if (!parseDouble(m_maxLr->text().trimmed().toStdString(), maxLr))
        problems << tr("maximum rate: not a number");
    if (problems.isEmpty()) {
        m_options.minLr = minLr;
        m_options.maxLr = maxLr;
        m_options.steps = m_steps->value();
        for (const std::string &p : validateLrFinder(m_options))
            problems << QString::fromStdString(p);
    }
    m_startStop->setEnabled(problems.isEmpty());
    if (!problems.isEmpty())
        m_status->setText(problems.join(QLatin1Char('\n')));
    else if (m_result.points.empty())
        m_status->setText(tr("Press Start: %1 steps from %2 to %3.").arg(m_options.steps).arg(number(m_options.minLr), number(m_options.maxLr)));
}

void LrFinderDialog::start()
{
    if (isRunning() || !m_startStop->isEnabled())
        return;
    if (QString busy = m_busy ? m_busy() : QString(); !busy.isEmpty()) {
        busy[0] = busy[0].toUpper();
        m_status->setText(busy + QLatin1Char('.'));
        return;
    }
    m_result = LrFinderResult();
    m_pending.clear();
    m_loss->clear();
    m_smoothed->clear();
    m_suggested->clear();
    m_lossTop = m_lossLow = 0.0;
    m_axisX->setRange(m_options.minLr, m_options.maxLr);
    m_axisY->setRange(0.0, 1.0);
    m_use->setEnabled(false);
    for (QWidget *w : {static_cast<QWidget *>(m_minLr), static_cast<QWidget *>(m_maxLr), static_cast<QWidget *>(m_steps)})
        w->setEnabled(false);
    m_startStop->setText(tr("&Stop"));
    m_status->setText(tr("Loading the data and building the model…"));
    m_stop = std::make_shared<StopFlag>(false);
    QPointer<LrFinderDialog> self(this);
    const ExperimentConfig config = m_config;
    const LrFinderOptions options = m_options;
    const std::shared_ptr<StopFlag> stopFlag = m_stop;
    m_thread = startWorker(
        this, QStringLiteral("lr-finder"),
        [self, config, options, stopFlag] {
            return findLearningRate(config, options, *stopFlag, [self](const LrFinderPoint &p) {
                QMetaObject::invokeMethod(self.data(), [self, p] {
                    if (!self)
                        return;
                    self->m_pending.append(p);
                    if (!self->m_flushTimer.isActive())
                        self->m_flushTimer.start();
                }, Qt::QueuedConnection);
            });
        },
        [this](const LrFinderResult &result) { done(result); });
    Q_EMIT started();
}

void LrFinderDialog::stop()
{
    if (m_stop)
        *m_stop = true;
    if (isRunning())
        m_status->setText(tr("Stopping after this step…"));
}

int LrFinderDialog::pointCount() const
{
    return m_smoothed->count();
}

QString LrFinderDialog::statusText() const
{
    return m_status->text();
}

void LrFinderDialog::flush()
{
    if (m_pending.isEmpty())
        return;
    // Only the new points: a test may have up to 100,000 steps.
    QList<QPointF> loss, smoothed;
    for (const LrFinderPoint &p : std::as_const(m_pending)) {
        // The first losses set the scale: a diverging step's loss would flatten the rest.
        if (m_lossTop == 0.0)
            m_lossTop = m_lossLow = p.smoothed * 1.4;
        loss.append(QPointF(p.learningRate, std::min(p.loss, m_lossTop)));
        smoothed.append(QPointF(p.learningRate, std::min(p.smoothed, m_lossTop)));
        m_lossLow = std::min({m_lossLow, loss.back().y(), smoothed.back().y()});
    }
    const LrFinderPoint last = m_pending.back();
    m_pending.clear();
    m_loss->append(loss);
    m_smoothed->append(smoothed);
    m_axisY->setRange(std::max(0.0, m_lossLow - 0.1 * (m_lossTop - m_lossLow)), m_lossTop);
    if (isRunning())
        m_status->setText(tr("Step %1 of %2: rate %3, loss %4, smoothed %5")
                              .arg(last.step).arg(m_options.steps).arg(number(last.learningRate))
                              .arg(last.loss, 0, 'f', 3).arg(last.smoothed, 0, 'f', 3));
}

void LrFinderDialog::done(const LrFinderResult &result)
{
    joinThread();
    m_flushTimer.stop();
    flush();
    m_result = result;
    for (QWidget *w : {static_cast<QWidget *>(m_minLr), static_cast<QWidget *>(m_maxLr), static_cast<QWidget *>(m_steps)})
        w->setEnabled(true);
    m_startStop->setText(tr("&Start"));
    if (!result.error.empty()) {
        m_status->setText(tr("The test failed: %1").arg(QString::fromStdString(result.error)));
    } else {
        QString text = QString::fromStdString(lrFinderSummary(result));
        text[0] = text[0].toUpper();
        m_status->setText(text + QLatin1Char('.'));
    }
    if (result.suggestedLr > 0) {
        const auto at = std::find_if(result.points.begin(), result.points.end(),
                                     [&](const LrFinderPoint &p) { return p.learningRate >= result.suggestedLr; });
        if (at != result.points.end())
            m_suggested->append(QPointF(at->learningRate, std::min(at->smoothed, m_lossTop)));
        m_use->setText(tr("&Use %1").arg(number(result.suggestedLr, 2)));
        m_use->setEnabled(true);
    }
    validate();
    Q_EMIT finished();
    if (m_deleteWhenDone)
        deleteLater();
}

void LrFinderDialog::joinThread()
{
    if (!m_thread)
        return;
    m_thread->wait();
    delete m_thread;
    m_thread = nullptr;
}

void LrFinderDialog::closeEvent(QCloseEvent *event)
{
    // The step in progress ends on the worker; the window goes now, and itself once the thread is done.
    if (isRunning()) {
        stop();
        hide();
        m_deleteWhenDone = testAttribute(Qt::WA_DeleteOnClose);
        event->ignore();
        return;
    }
    QDialog::closeEvent(event);
}

} // namespace trainlab
