#include "ui/queuepanel.h"

#include "core/util/atomicfile.h"
#include "ui/sweepdialog.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <utility>

namespace trainlab {

namespace {

QString valuesText(const QueueEntry &e)
{
    if (!e.tag.empty())
        return QString::fromStdString(e.tag.label());
    QStringList devices;
    for (const std::string &d : e.config.devices)
        devices << QString::fromStdString(d);
    return QStringLiteral("devices=%1 batch_size=%2 learning_rate=%3")
        .arg(devices.join(QLatin1Char(',')))
        .arg(e.config.batchSize)
        .arg(e.config.learningRate);
}

QColor stateColour(EntryState state)
{
    switch (state) {
    case EntryState::Running: return QColor(0x1f77b4);
    case EntryState::Completed: return QColor(0x2ca02c);
    case EntryState::Failed: return QColor(0xd62728);
    case EntryState::Stopped: return QColor(0xff7f0e);
    case EntryState::Pruned: return QColor(0x7f7f7f);
    case EntryState::Waiting: break;
    }
    return QColor(0x7f7f7f);
}

QPushButton *button(const QString &text, const QString &name, QWidget *parent)
{
    auto *b = new QPushButton(text, parent);
    b->setObjectName(name);
    return b;
}

} // namespace

QueuePanel::QueuePanel(QWidget *parent)
    : QWidget(parent)
    , m_queue(std::make_unique<Queue>())
    , m_table(new QTableWidget(0, ColumnCount, this))
    , m_message(new QLabel(this))
    , m_estimate(new QLabel(this))
    , m_addCurrent(button(tr("Add Current"), QStringLiteral("queueAddCurrent"), this))
    , m_addSweep(button(tr("Add Sweep…"), QStringLiteral("queueAddSweep"), this))
    , m_up(button(tr("Up"), QStringLiteral("queueUp"), this))
    , m_down(button(tr("Down"), QStringLiteral("queueDown"), this))
    , m_remove(button(tr("Remove"), QStringLiteral("queueRemove"), this))
    , m_retry(button(tr("Run Again"), QStringLiteral("queueRetry"), this))
    , m_clear(button(tr("Clear Finished"), QStringLiteral("queueClear"), this))
    , m_start(button(tr("Start Queue"), QStringLiteral("queueStart"), this))
    , m_stop(button(tr("Stop Queue"), QStringLiteral("queueStop"), this))
    , m_compare(button(tr("Compare…"), QStringLiteral("queueCompare"), this))
{
    setObjectName(QStringLiteral("queuePanel"));
    m_table->setObjectName(QStringLiteral("queueTable"));
    m_table->setHorizontalHeaderLabels({tr("#"), tr("Name"), tr("Values"), tr("State"), tr("Best test acc"),
                                        tr("sec/epoch"), tr("img/s")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(ValuesColumn, QHeaderView::Stretch);
    m_message->setObjectName(QStringLiteral("queueMessage"));
    m_message->setWordWrap(true);
    m_estimate->setObjectName(QStringLiteral("queueEstimate"));

    auto *edit = new QHBoxLayout;
    for (QPushButton *b : {m_addCurrent, m_addSweep, m_up, m_down, m_remove, m_retry, m_clear})
        edit->addWidget(b);
    edit->addStretch();
    auto *control = new QHBoxLayout;
    for (QPushButton *b : {m_start, m_stop, m_compare})
        control->addWidget(b);
    control->addWidget(m_message, 1);
    control->addWidget(m_estimate);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(edit);
    layout->addWidget(m_table, 1);
    layout->addLayout(control);

    connect(m_addCurrent, &QPushButton::clicked, this, &QueuePanel::addCurrentRequested);
    connect(m_addSweep, &QPushButton::clicked, this, &QueuePanel::addSweepRequested);
    connect(m_up, &QPushButton::clicked, this, [this] { moveSelected(-1); });
    connect(m_down, &QPushButton::clicked, this, [this] { moveSelected(1); });
    connect(m_remove, &QPushButton::clicked, this, &QueuePanel::removeSelected);
    connect(m_retry, &QPushButton::clicked, this, &QueuePanel::retrySelected);
    connect(m_clear, &QPushButton::clicked, this, &QueuePanel::clearFinished);
    connect(m_start, &QPushButton::clicked, this, &QueuePanel::startQueue);
    connect(m_stop, &QPushButton::clicked, this, &QueuePanel::stopQueue);
    connect(m_compare, &QPushButton::clicked, this, [this] {
        const int row = selectedRow();
        if (row >= 0 && !m_queue->at(static_cast<std::size_t>(row)).tag.empty())
            Q_EMIT compareRequested(QString::fromStdString(m_queue->at(static_cast<std::size_t>(row)).tag.id));
    });
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &QueuePanel::updateButtons);
    refresh();
}

QueuePanel::~QueuePanel() = default;

QString QueuePanel::stateFile() const
{
    return QString::fromStdString(m_queue->stateFile());
}

void QueuePanel::setRunsDir(const QString &runsDir)
{
    if (m_active || m_current >= 0 || runsDir == m_runsDir)
        return;
    m_runsDir = runsDir;
    const QString file = QDir(runsDir).filePath(QStringLiteral("queue.json"));
    setMessage(QString());
    if (QFileInfo::exists(file)) {
        try {
            m_queue = std::make_unique<Queue>(Queue::load(file.toStdString()));
        } catch (const std::exception &e) {
            // Set aside, never overwritten: the user may still want what it held.
            const std::string suffix = ".damaged-"
                                       + QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss")).toStdString();
            try {
                const QString aside = QString::fromStdString(moveAside(file.toStdString(), suffix));
                m_queue = std::make_unique<Queue>(file.toStdString());
                setMessage(tr("%1 could not be read (%2); it was kept as %3 and the queue starts empty.")
                               .arg(file, QString::fromStdString(e.what()), aside));
            } catch (const std::exception &aside) {
                // Not set aside: the queue lives in memory only, so the damaged file is never overwritten.
                m_queue = std::make_unique<Queue>(std::string());
                setMessage(tr("%1 could not be read (%2) nor set aside (%3); the queue is not saved until the file is "
                              "moved away.")
                               .arg(file, QString::fromStdString(e.what()), QString::fromStdString(aside.what())));
            }
        }
    } else {
        m_queue = std::make_unique<Queue>(file.toStdString());
    }
    refresh();
}

void QueuePanel::addExperiment(const ExperimentConfig &config)
{
    QueueEntry entry;
    entry.config = config;
    m_queue->add(std::move(entry));
    refresh();
    selectRow(static_cast<int>(m_queue->size()) - 1);
}

QString QueuePanel::addSweep(const SweepConfig &sweep, QString *error, const std::string &notes)
{
    try {
        const std::string runs = m_runsDir.toStdString();
        const std::string id = newSweepId(runs, sweep.name);
        // The sweep's own file first: the Compare view and the CLI's --resume find the sweep by it.
        if (!QDir().mkpath(QString::fromStdString(sweepDir(runs, id))))
            throw std::runtime_error(sweepDir(runs, id) + ": cannot create the folder");
        sweep.save(sweepDir(runs, id) + "/sweep.json");
        if (!notes.empty())
            writeFileAtomic(sweepDir(runs, id) + "/notes.txt", notes + "\n");
        const std::size_t before = m_queue->size();
        m_queue->addSweep(sweep, id, notes);
        refresh();
        if (m_queue->size() > before)
            selectRow(static_cast<int>(before));
        return QString::fromStdString(id);
    } catch (const std::exception &e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return QString();
    }
}

QString QueuePanel::message() const
{
    return m_message->text();
}

void QueuePanel::setMessage(const QString &text)
{
    m_message->setText(text);
}

int QueuePanel::selectedRow() const
{
    const QList<QTableWidgetSelectionRange> ranges = m_table->selectedRanges();
    return ranges.isEmpty() ? -1 : ranges.first().topRow();
}

void QueuePanel::selectRow(int row)
{
    if (row >= 0 && row < m_table->rowCount())
        m_table->selectRow(row);
    else
        m_table->clearSelection();
}

void QueuePanel::moveSelected(int delta)
{
    const int row = selectedRow();
    if (row < 0 || m_current == row)
        return;
    const int to = row + delta;
    if (to < 0 || to >= static_cast<int>(m_queue->size()))
        return;
    if (m_queue->move(static_cast<std::size_t>(row), static_cast<std::size_t>(to))) {
        refresh();
        selectRow(to);
    } else {
        setMessage(tr("Only runs that have not started can be moved."));
    }
}

void QueuePanel::removeSelected()
{
    const int row = selectedRow();
    if (row < 0 || m_current == row)
        return;
    if (m_queue->remove(static_cast<std::size_t>(row))) {
        if (m_current > row)
            --m_current;
        refresh();
        selectRow(std::min(row, static_cast<int>(m_queue->size()) - 1));
    } else {
        setMessage(tr("The running entry cannot be removed: stop the queue first."));
    }
}

void QueuePanel::retrySelected()
{
    const int row = selectedRow();
    if (row < 0 || m_current == row)
        return;
    if (m_queue->requeue(static_cast<std::size_t>(row)))
        refresh();
    selectRow(row);
}

void QueuePanel::clearFinished()
{
    if (m_current >= 0)
        return;   // indexes would shift under the running entry
    m_queue->clearFinished();
    refresh();
}

void QueuePanel::startQueue()
{
    if (m_active)
        return;
    if (!m_queue->hasWork()) {
        setMessage(m_queue->failureStopped() ? tr("A run failed and the queue stops on failure: use Run Again.")
                                             : tr("Nothing is waiting in the queue."));
        return;
    }
    m_active = true;
    m_stopping = false;
    setMessage(QString());
    launchNext();
}

void QueuePanel::stopQueue()
{
    if (!m_active)
        return;
    if (m_current >= 0) {
        m_stopping = true;
        setMessage(tr("Stopping…"));
        updateButtons();
        Q_EMIT stopRequested();
        return;
    }
    m_active = false;
    setMessage(tr("Queue stopped."));
    updateButtons();
    Q_EMIT queueEnded();
}

void QueuePanel::launchNext()
{
    if (!m_active || m_current >= 0)
        return;
    const int i = m_queue->next();
    if (i < 0) {
        m_active = false;
        setMessage(m_queue->failureStopped() ? tr("A run failed: the queue stopped (stop on failure).")
                                             : tr("The queue is done."));
        updateButtons();
        Q_EMIT queueEnded();
        return;
    }
    const auto at = static_cast<std::size_t>(i);
    // Busy with a run of its own: the window's next idle brings the queue back here.
    if (!m_launcher || !m_launcher(m_queue->at(at), m_queue->resumes(at))) {
        setMessage(tr("Waiting for the devices: a run or a learning-rate range test is using them."));
        return;
    }
    m_current = i;
    m_pruneReason.clear();
    m_queue->markStarted(at);
    refresh();
}

void QueuePanel::onRunStarted(const RunInfo &info)
{
    if (m_current < 0 || info.runDir.empty())
        return;
    m_queue->setRunDir(static_cast<std::size_t>(m_current), info.runDir);
    refresh();
}

void QueuePanel::onRunFinished(const RunResult &result)
{
    if (m_current < 0)
        return;
    const int finished = m_current;
    const std::string pruned = std::exchange(m_pruneReason, std::string());
    m_current = -1;
    if (!pruned.empty() && !m_stopping && result.status == RunStatus::Stopped) {
        m_queue->markPruned(static_cast<std::size_t>(finished), result, pruned);
        setMessage(tr("Run %1 pruned: %2").arg(finished + 1).arg(QString::fromStdString(pruned)));
        refresh();
        return;   // the runner's idle starts the next one
    }
    m_queue->markFinished(static_cast<std::size_t>(finished), result);
    // A stop from anywhere (this panel or the window's Stop) stops the queue; Start resumes that run.
    if (m_stopping || result.status == RunStatus::Stopped) {
        m_active = false;
        m_stopping = false;
        setMessage(tr("Queue stopped; Start Queue resumes the stopped run."));
        Q_EMIT queueEnded();
    } else if (result.status == RunStatus::Failed) {
        // No dialog: a queue left overnight must not wait on a click; the row and this line say why.
        setMessage(tr("Run %1 failed: %2").arg(finished + 1).arg(QString::fromStdString(result.error)));
    }
    if (!m_queue->saveError().empty())
        setMessage(tr("The queue's state could not be saved: %1").arg(QString::fromStdString(m_queue->saveError())));
    refresh();
}

void QueuePanel::onEpochDone(const EpochMetrics &metrics)
{
    if (m_current < 0 || !m_pruneReason.empty() || m_stopping)
        return;
    m_pruneReason = m_queue->pruneReason(static_cast<std::size_t>(m_current), metrics);
    if (!m_pruneReason.empty()) {
        setMessage(tr("Pruning run %1: %2").arg(m_current + 1).arg(QString::fromStdString(m_pruneReason)));
        Q_EMIT stopRequested();
    }
}

void QueuePanel::onRunnerIdle()
{
    // Not from inside the runner's own signal: the window first finishes its own idle handling.
    if (m_active)
        QTimer::singleShot(0, this, &QueuePanel::launchNext);
}

void QueuePanel::refresh()
{
    const int selected = selectedRow();
    const auto &entries = m_queue->entries();
    m_table->setRowCount(static_cast<int>(entries.size()));
    for (int r = 0; r < static_cast<int>(entries.size()); ++r) {
        const QueueEntry &e = entries[static_cast<std::size_t>(r)];
        const bool finished = e.state == EntryState::Completed || e.state == EntryState::Stopped
                              || e.state == EntryState::Failed || e.state == EntryState::Pruned;
        QString state = QString::fromLatin1(toString(e.state));
        if (e.state == EntryState::Completed)
            state = tr("done");
        const QStringList cells = {
            QString::number(r + 1),
            QString::fromStdString(e.config.name),
            valuesText(e),
            state,
            finished && e.epochsDone > 0 ? QString::number(e.bestTestAcc, 'f', 3) : QString(),
            finished && e.epochsDone > 0 ? QString::number(e.meanEpochSeconds, 'f', 1) : QString(),
            finished && e.epochsDone > 0 ? QString::number(e.imagesPerSecond, 'f', 1) : QString(),
        };
        for (int c = 0; c < ColumnCount; ++c) {
            auto *item = new QTableWidgetItem(cells[c]);
            if (c == StateColumn) {
                item->setForeground(stateColour(e.state));
                if (!e.error.empty())
                    item->setToolTip(QString::fromStdString(e.error));
            }
            if (c == ValuesColumn && !e.runDir.empty())
                item->setToolTip(QString::fromStdString(e.runDir));
            m_table->setItem(r, c, item);
        }
    }
    m_table->resizeColumnToContents(IndexColumn);
    m_table->resizeColumnToContents(StateColumn);
    const auto left = m_active ? m_queue->estimate() : std::nullopt;
    m_estimate->setText(left ? QString::fromStdString(left->text()) : QString());
    selectRow(selected);
    updateButtons();
}

void QueuePanel::updateButtons()
{
    const int row = selectedRow();
    const QueueEntry *e = row >= 0 ? &m_queue->at(static_cast<std::size_t>(row)) : nullptr;
    const bool waiting = e && e->state == EntryState::Waiting && row != m_current;
    m_up->setEnabled(waiting && row > 0);
    m_down->setEnabled(waiting && row + 1 < static_cast<int>(m_queue->size()));
    m_remove->setEnabled(e && row != m_current && e->state != EntryState::Running);
    m_retry->setEnabled(e && row != m_current
                        && (e->state == EntryState::Failed || e->state == EntryState::Stopped
                            || e->state == EntryState::Completed || e->state == EntryState::Pruned));
    m_clear->setEnabled(m_current < 0);
    m_compare->setEnabled(e && !e->tag.empty());
    if (!m_active)
        m_estimate->clear();
    m_start->setEnabled(!m_active && m_queue->size() > 0);
    m_stop->setEnabled(m_active && !m_stopping);
}

bool QueuePanel::addSweepDialog(const ExperimentConfig &base, QString *error)
{
    SweepDialog dialog(base, window());
    if (dialog.exec() != QDialog::Accepted)
        return false;
    return !addSweep(dialog.sweep(), error, dialog.notes().toStdString()).isEmpty();
}

} // namespace trainlab
