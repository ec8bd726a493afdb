#include "ui/historypanel.h"

#include "core/runs/runexport.h"
#include "core/runs/runstorage.h"
#include "ui/chartexport.h"
#include "ui/accuracychart.h"
#include "ui/experimentfile.h"
#include "ui/runhistoryfilter.h"
#include "ui/runhistorymodel.h"
#include "ui/runsstorage.h"

#include <QAction>
#include <QDesktopServices>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSet>
#include <QSignalBlocker>
#include <QTableView>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

namespace trainlab {

namespace {

QString runsText(qsizetype n)
{
    return n == 1 ? HistoryPanel::tr("1 run") : HistoryPanel::tr("%1 runs").arg(n);
}

} // namespace

HistoryPanel::HistoryPanel(AccuracyChart *chart, QWidget *parent)
    : QWidget(parent)
    , m_chart(chart)
    , m_model(new RunHistoryModel(this))
    , m_filter(new RunHistoryFilter(this))
    , m_table(new QTableView)
    , m_filterEdit(new QLineEdit)
    , m_shown(new QLabel)
    , m_storage(new RunsStorage)
    , m_target(new QDoubleSpinBox)
    , m_watcher(new QFileSystemWatcher(this))
    , m_refreshSoon(new QTimer(this))
{
    m_refreshSoon->setSingleShot(true);
    m_refreshSoon->setInterval(1000);
    connect(m_refreshSoon, &QTimer::timeout, this, &HistoryPanel::refresh);
    // Not restarted by each change: a run writing every second still refreshes the table once a second.
    connect(m_watcher, &QFileSystemWatcher::directoryChanged, this, [this] {
        if (!m_refreshSoon->isActive())
            m_refreshSoon->start();
    });
    m_filter->setSourceModel(m_model);
    m_table->setObjectName(QStringLiteral("history"));
    m_table->setModel(m_filter);
    m_table->setSortingEnabled(true);
    // Unsorted until a header is clicked: the model's order, newest first.
    m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);   // one line per run: long notes are cut at the column's edge, whole in the tooltip
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionsMovable(true);
    m_table->horizontalHeader()->setContextMenuPolicy(Qt::CustomContextMenu);
    m_columnsMenu = new QMenu(tr("Co&lumns"), this);
    m_columnsMenu->setObjectName(QStringLiteral("historyColumnsMenu"));
    for (int column = 0; column < RunHistoryModel::ColumnCount; ++column) {
        QAction *action = m_columnsMenu->addAction(QString());
        action->setCheckable(true);
        action->setChecked(true);
        action->setEnabled(column != RunHistoryModel::Name);   // a row always says which run it is
        connect(action, &QAction::toggled, m_table, [this, column](bool shown) { m_table->setColumnHidden(column, !shown); });
        m_columnActions << action;
    }
    m_columnsMenu->addSeparator();
    m_columnsMenu->addAction(tr("&Reset Columns"), this, [this] { setColumnLayout({}); });
    connect(m_columnsMenu, &QMenu::aboutToShow, this, &HistoryPanel::updateColumnsMenu);
    connect(m_table->horizontalHeader(), &QHeaderView::customContextMenuRequested, this, [this](const QPoint &pos) {
        m_columnsMenu->popup(m_table->horizontalHeader()->viewport()->mapToGlobal(pos));
    });
    m_table->setContextMenuPolicy(Qt::ActionsContextMenu);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &HistoryPanel::onSelection);
    connect(m_model, &QAbstractItemModel::modelReset, this, &HistoryPanel::onSelection);
    connect(m_model, &QAbstractItemModel::modelReset, this, &HistoryPanel::fitColumns);
    connect(m_model, &QAbstractItemModel::modelReset, this, &HistoryPanel::watchFolders);
    connect(m_table, &QTableView::doubleClicked, this, &HistoryPanel::useSelectedConfig);
    m_filterEdit->setObjectName(QStringLiteral("historyFilter"));
    m_filterEdit->setPlaceholderText(tr("Filter runs: words in any column, e.g. bf16 failed"));
    m_filterEdit->setClearButtonEnabled(true);
    m_filterEdit->setToolTip(tr("Shows the runs whose row contains every word (name, date, devices, recipe, status…); "
                                "Ctrl+F here"));
    connect(m_filterEdit, &QLineEdit::textChanged, m_filter, &RunHistoryFilter::setFilterText);
    // The count follows what the table shows: a refresh, a new filter, or a run whose row changes in or out of it.
    connect(m_filter, &QAbstractItemModel::modelReset, this, &HistoryPanel::updateShown);
    connect(m_filter, &QAbstractItemModel::rowsInserted, this, &HistoryPanel::updateShown);
    connect(m_filter, &QAbstractItemModel::rowsRemoved, this, &HistoryPanel::updateShown);
    connect(m_filter, &QAbstractItemModel::layoutChanged, this, &HistoryPanel::updateShown);
    auto *find = new QAction(this);
    find->setShortcut(QKeySequence::Find);
    find->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(find, &QAction::triggered, m_filterEdit, [this] {
        m_filterEdit->setFocus(Qt::ShortcutFocusReason);
        m_filterEdit->selectAll();
    });
    addAction(find);
    m_shown->setObjectName(QStringLiteral("historyShown"));
    m_target->setObjectName(QStringLiteral("targetAccuracy"));
    m_target->setRange(0.05, 1.0);
    m_target->setSingleStep(0.01);
    m_target->setDecimals(2);
    m_target->setValue(m_model->target());
    m_target->setToolTip(tr("The test accuracy of the \"to\" column: training seconds until a run first reaches it"));
    connect(m_target, &QDoubleSpinBox::valueChanged, m_model, &RunHistoryModel::setTarget);
    auto *bottom = new QHBoxLayout;
    bottom->addWidget(m_storage, 1);
    bottom->addWidget(new QLabel(tr("Time to test accuracy:")));
    bottom->addWidget(m_target);
    auto *top = new QHBoxLayout;
    top->addWidget(m_filterEdit, 1);
    top->addWidget(m_shown);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(top);
    layout->addWidget(m_table, 1);
    layout->addLayout(bottom);
}

void HistoryPanel::addActions(QMenu *history, const QList<QAction *> &leading)
{
    m_useConfig = history->addAction(tr("&Use This Run's Configuration"), this, &HistoryPanel::useSelectedConfig);
    m_openFolder = history->addAction(tr("&Open Run Folder"), this, &HistoryPanel::openSelectedFolder);
    m_editNotes = history->addAction(tr("Edit &Notes…"), this, &HistoryPanel::editSelectedNotes);
    m_editNotes->setObjectName(QStringLiteral("editNotesAction"));
    m_editNotes->setShortcut(Qt::Key_F2);
    m_editNotes->setShortcutContext(Qt::WidgetShortcut);
    m_editNotes->setToolTip(tr("What this run tried and showed, in the run's notes.txt; the filter searches them"));
    m_compare = history->addAction(tr("Co&mpare Selected Runs"), this, [this] {
        QStringList dirs;
        for (int row : selectedRows())
            dirs << QString::fromStdString(m_model->summary(row).dir);
        Q_EMIT compareRequested(dirs);
    });
    m_compare->setObjectName(QStringLiteral("compareRunsAction"));
    m_compare->setToolTip(tr("The selected runs in the Compare window: any metric per epoch, and a table by the "
                             "settings that differ between them"));
    m_delete = history->addAction(tr("&Delete Run…"), this, &HistoryPanel::deleteSelectedRuns);
    m_delete->setObjectName(QStringLiteral("deleteRunAction"));
    m_delete->setShortcut(QKeySequence::Delete);
    m_delete->setShortcutContext(Qt::WidgetShortcut);
    m_deleteCheckpoints = history->addAction(tr("Delete &Checkpoints…"), this, &HistoryPanel::deleteSelectedCheckpoints);
    m_deleteCheckpoints->setObjectName(QStringLiteral("deleteCheckpointsAction"));
    history->addSeparator();
    m_exportCsv = history->addAction(tr("Export &Metrics of Selected Runs…"), this, [this] { exportDialog(false); });
    m_exportDevices = history->addAction(tr("Export De&vices of Selected Runs…"), this, [this] { exportDialog(true); });
    m_refresh = history->addAction(tr("&Refresh"), QKeySequence::Refresh, this, &HistoryPanel::refresh);
    history->addMenu(m_columnsMenu);
    m_table->addActions(leading);
    m_table->addActions({m_useConfig, m_openFolder, m_editNotes, m_compare, m_delete, m_deleteCheckpoints, m_exportCsv, m_exportDevices});
    updateActions();
}

void HistoryPanel::fitColumns()
{
    m_table->resizeColumnsToContents();
    // Notes moved away from the end would take the table's width; their whole text is in the tooltip.
    constexpr int kNotesWidth = 320;
    if (m_table->columnWidth(RunHistoryModel::Notes) > kNotesWidth)
        m_table->setColumnWidth(RunHistoryModel::Notes, kNotesWidth);
}

void HistoryPanel::watchFolders()
{
    // The window's own run refreshes the table when it starts and ends; only other processes' runs are followed.
    QStringList wanted;
    if (!m_runsDir.isEmpty() && QFileInfo(m_runsDir).isDir())
        wanted << QFileInfo(m_runsDir).absoluteFilePath();
    const QString active = m_activeRunDir.isEmpty() ? QString() : QFileInfo(m_activeRunDir).absoluteFilePath();
    for (int row = 0; row < m_model->rowCount(); ++row) {
        const RunSummary &s = m_model->summary(row);
        const QString dir = QFileInfo(QString::fromStdString(s.dir)).absoluteFilePath();
        if (s.status == "running" && dir != active)
            wanted << dir;
    }
    const QStringList watched = m_watcher->directories();
    for (const QString &dir : watched) {
        if (!wanted.contains(dir))
            m_watcher->removePath(dir);
    }
    for (const QString &dir : std::as_const(wanted)) {
        if (!watched.contains(dir))
            m_watcher->addPath(dir);
    }
}

void HistoryPanel::updateColumnsMenu()
{
    for (int column = 0; column < m_columnActions.size(); ++column) {
        const QSignalBlocker quiet(m_columnActions[column]);
        m_columnActions[column]->setText(m_model->headerData(column, Qt::Horizontal).toString());
        m_columnActions[column]->setChecked(!m_table->isColumnHidden(column));
    }
}

QStringList HistoryPanel::columnLayout() const
{
    const QHeaderView *header = m_table->horizontalHeader();
    QStringList layout;
    for (int visual = 0; visual < header->count(); ++visual) {
        const int column = header->logicalIndex(visual);
        layout << (header->isSectionHidden(column) ? QStringLiteral("-") : QString()) + RunHistoryModel::columnKey(column);
    }
    return layout;
}

void HistoryPanel::setColumnLayout(const QStringList &layout)
{
    QHeaderView *header = m_table->horizontalHeader();
    // From the model's order, all shown; then the layout's columns first, in its order.
    for (int column = 0; column < RunHistoryModel::ColumnCount; ++column) {
        header->moveSection(header->visualIndex(column), column);
        header->setSectionHidden(column, false);
    }
    int visual = 0;
    QSet<int> placed;
    for (const QString &entry : layout) {
        const bool hidden = entry.startsWith(QLatin1Char('-'));
        const int column = RunHistoryModel::columnOfKey(hidden ? entry.mid(1) : entry);
        if (column < 0 || placed.contains(column))
            continue;
        placed.insert(column);
        header->moveSection(header->visualIndex(column), visual++);
        header->setSectionHidden(column, hidden && column != RunHistoryModel::Name);
    }
    updateColumnsMenu();
}

void HistoryPanel::setRunsDir(const QString &dir)
{
    m_runsDir = dir;
    m_model->setRunsDir(dir);
    m_storage->refresh(dir);
}

void HistoryPanel::setActiveRunDir(const QString &dir)
{
    m_activeRunDir = dir;
    m_model->setActiveRunDir(dir);
    watchFolders();
}

void HistoryPanel::refresh()
{
    // A reset clears the selection and the current cell; the runs being compared stay selected and overlaid, and the
    // current cell stays (a refresh comes by itself while another process trains; the scroll position is kept by Qt).
    QStringList selected;
    for (int row : selectedRows())
        selected << QString::fromStdString(m_model->summary(row).dir);
    const QModelIndex current = m_filter->mapToSource(m_table->currentIndex());
    const QString currentDir = current.isValid() ? QString::fromStdString(m_model->summary(current.row()).dir) : QString();
    m_model->refresh();
    m_storage->refresh(m_runsDir);
    QItemSelection selection;
    for (const QString &dir : std::as_const(selected)) {
        const QModelIndex first = m_filter->mapFromSource(m_model->index(m_model->rowOfDir(dir), 0));
        if (first.isValid())
            selection.select(first, first.siblingAtColumn(RunHistoryModel::ColumnCount - 1));
    }
    if (!selection.isEmpty())
        m_table->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    if (!currentDir.isEmpty()) {
        const QModelIndex again = m_filter->mapFromSource(m_model->index(m_model->rowOfDir(currentDir), current.column()));
        if (again.isValid())
            m_table->selectionModel()->setCurrentIndex(again, QItemSelectionModel::NoUpdate);
    }
}

void HistoryPanel::updateActions()
{
    if (!m_useConfig)
        return;
    const QList<int> rows = selectedRows();
    m_useConfig->setEnabled(rows.size() == 1);
    m_openFolder->setEnabled(rows.size() == 1);
    m_editNotes->setEnabled(rows.size() == 1 && m_model->summary(rows.first()).status != "unreadable");
    bool readable = rows.size() >= 2;
    for (int row : rows)
        readable = readable && m_model->summary(row).status != "unreadable";
    m_compare->setEnabled(readable);
    bool activeSelected = false;
    for (int row : rows)
        activeSelected |= QString::fromStdString(m_model->summary(row).dir) == m_activeRunDir;
    m_delete->setEnabled(!rows.isEmpty() && !activeSelected);
    m_deleteCheckpoints->setEnabled(!rows.isEmpty() && !activeSelected);
    m_exportCsv->setEnabled(!rows.isEmpty());
    m_exportDevices->setEnabled(!rows.isEmpty());
}

QList<int> HistoryPanel::selectedRows() const
{
    QList<int> rows;
    if (!m_table->selectionModel())
        return rows;
    for (const QModelIndex &index : m_table->selectionModel()->selectedRows())
        rows << m_filter->mapToSource(index).row();
    std::sort(rows.begin(), rows.end());
    return rows;
}

QVector<RunSummary> HistoryPanel::selectedRuns() const
{
    QVector<RunSummary> runs;
    for (int row : selectedRows())
        runs.append(m_model->summary(row));
    return runs;
}

void HistoryPanel::onSelection()
{
    QVector<AccuracyChart::Overlay> overlays;
    for (int row : selectedRows()) {
        const RunSummary &s = m_model->summary(row);
        AccuracyChart::Overlay overlay;
        // The date without its year ("12-06 20:53:00"): the legend has room for a name and a time, not more.
        const QString date = m_model->data(m_model->index(row, RunHistoryModel::Date)).toString();
        overlay.name = QStringLiteral("%1 (%2)").arg(QString::fromStdString(s.name), date.size() == 19 ? date.mid(5) : date);
        try {
            for (const EpochMetrics &m : readMetrics(s.dir))
                overlay.testAcc.append(QPointF(m.epoch, m.testAcc));
        } catch (const std::exception &e) {
            Q_EMIT status(QString::fromStdString(e.what()), 8000);
        }
        overlays.append(overlay);
    }
    m_chart->setOverlays(overlays);
    updateActions();
    Q_EMIT selectionChanged();
}

int HistoryPanel::sortColumn() const
{
    return m_table->horizontalHeader()->sortIndicatorSection();
}

Qt::SortOrder HistoryPanel::sortOrder() const
{
    return m_table->horizontalHeader()->sortIndicatorOrder();
}

void HistoryPanel::sortBy(int column, Qt::SortOrder order)
{
    const bool known = column >= 0 && column < RunHistoryModel::ColumnCount;
    m_table->sortByColumn(known ? column : -1, order == Qt::DescendingOrder ? order : Qt::AscendingOrder);
}

void HistoryPanel::updateShown()
{
    const int all = m_model->rowCount();
    const int shown = m_filter->rowCount();
    const QString runs = all == 1 ? tr("1 run") : tr("%1 runs").arg(all);
    m_shown->setText(shown == all ? runs : tr("%1 of %2").arg(shown).arg(runs));
}

void HistoryPanel::useSelectedConfig()
{
    const QList<int> rows = selectedRows();
    if (rows.size() != 1)
        return;
    ExperimentConfig config;
    if (!m_model->config(rows.first(), &config)) {
        Q_EMIT error(tr("Use Configuration"), tr("%1/config.json is missing or unreadable")
                                                  .arg(QString::fromStdString(m_model->summary(rows.first()).dir)));
        return;
    }
    Q_EMIT useConfigRequested(config);
}

void HistoryPanel::openSelectedFolder()
{
    const QList<int> rows = selectedRows();
    if (rows.size() == 1)
        QDesktopServices::openUrl(QUrl::fromLocalFile(QString::fromStdString(m_model->summary(rows.first()).dir)));
}

// The selected runs' folders; none while the run in progress is among them.
QStringList HistoryPanel::deletableSelectedDirs() const
{
    QStringList dirs;
    for (int row : selectedRows())
        dirs << QString::fromStdString(m_model->summary(row).dir);
    return dirs.contains(m_activeRunDir) ? QStringList() : dirs;
}

void HistoryPanel::deleteSelectedRuns()
{
    const QStringList dirs = deletableSelectedDirs();
    if (dirs.isEmpty())
        return;
    // The trash first: a run deleted by a slip of the key comes back from the desktop's trash.
    QMessageBox ask(QMessageBox::Question, tr("Delete Runs"),
                    tr("Move %1 to the trash? They can be restored from there; Delete Permanently removes "
                       "them and everything in their folders (config, metrics, checkpoints).\n\n%2")
                        .arg(runsText(dirs.size()), dirs.join(QLatin1Char('\n'))),
                    QMessageBox::Yes | QMessageBox::Discard | QMessageBox::No, window());
    ask.button(QMessageBox::Yes)->setText(tr("Move to Trash"));
    ask.button(QMessageBox::Discard)->setText(tr("Delete Permanently"));
    ask.button(QMessageBox::No)->setText(tr("Cancel"));
    ask.setDefaultButton(QMessageBox::Yes);
    ask.setEscapeButton(QMessageBox::No);
    const int answer = ask.exec();
    if (answer != QMessageBox::Yes && answer != QMessageBox::Discard)
        return;
    QStringList errors, trashed;
    for (const QString &dir : std::as_const(dirs)) {
        try {
            if (answer == QMessageBox::Discard) {
                deleteRun(dir.toStdString());
                continue;
            }
            trashed << QString::fromStdString(trashRun(dir.toStdString()));
        } catch (const std::exception &e) {
            errors << QString::fromStdString(e.what());
        }
    }
    refresh();
    if (!trashed.isEmpty())
        Q_EMIT status(tr("Moved to the trash: %1").arg(trashed.join(QStringLiteral(", "))), 10000);
    if (!errors.isEmpty())
        Q_EMIT error(tr("Delete Runs"), errors.join(QLatin1Char('\n')));
}

void HistoryPanel::deleteSelectedCheckpoints()
{
    const QStringList dirs = deletableSelectedDirs();
    if (dirs.isEmpty())
        return;
    const auto answer = QMessageBox::question(
        window(), tr("Delete Checkpoints"),
        tr("Delete the checkpoints of %1? Their configuration, metrics and summary stay, but they can no "
           "longer be resumed or continued.\n\n%2")
            .arg(runsText(dirs.size()), dirs.join(QLatin1Char('\n'))),
        QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
    if (answer != QMessageBox::Yes)
        return;
    std::uint64_t freed = 0;
    QStringList errors;
    for (const QString &dir : std::as_const(dirs)) {
        try {
            freed += deleteCheckpoints(dir.toStdString());
        } catch (const std::exception &e) {
            errors << QString::fromStdString(e.what());
        }
    }
    refresh();
    Q_EMIT status(tr("%1 freed").arg(QString::fromStdString(formatBytes(freed))), 5000);
    if (!errors.isEmpty())
        Q_EMIT error(tr("Delete Checkpoints"), errors.join(QLatin1Char('\n')));
}

void HistoryPanel::editSelectedNotes()
{
    const QList<int> rows = selectedRows();
    if (rows.size() != 1)
        return;
    const RunSummary &run = m_model->summary(rows.first());
    const QString dir = QString::fromStdString(run.dir);
    QString current;
    try {
        current = QString::fromStdString(readRunNotes(run.dir));
    } catch (const std::exception &e) {
        Q_EMIT error(tr("Edit Notes"), QString::fromStdString(e.what()));
        return;
    }
    bool ok = false;
    const QString notes = QInputDialog::getMultiLineText(
        window(), tr("Notes on %1").arg(QString::fromStdString(run.name)),
        tr("What this run tried and what it showed (kept in %1):").arg(dir + QStringLiteral("/notes.txt")), current, &ok);
    if (ok && notes != current)
        setRunNotes(dir, notes);
}

bool HistoryPanel::setRunNotes(const QString &dir, const QString &notes)
{
    try {
        writeRunNotes(dir.toStdString(), notes.toStdString());
    } catch (const std::exception &e) {
        Q_EMIT error(tr("Edit Notes"), QString::fromStdString(e.what()));
        return false;
    }
    refresh();
    return true;
}

bool HistoryPanel::exportMetricsCsv(const QString &path)
{
    return exportTable(path, tr("Export Metrics"), runsMetricsCsv);
}

bool HistoryPanel::exportDevicesCsv(const QString &path)
{
    return exportTable(path, tr("Export Devices"), runsDevicesCsv);
}

bool HistoryPanel::exportTable(const QString &path, const QString &title,
                               std::string (*table)(const std::vector<RunSummary> &))
{
    const QVector<RunSummary> runs = selectedRuns();
    QString problem;
    try {
        if (saveTextFile(path, QByteArray::fromStdString(table({runs.begin(), runs.end()})), &problem)) {
            Q_EMIT status(tr("%1 of %2 saved to %3").arg(title, runsText(runs.size()), path), 5000);
            return true;
        }
    } catch (const std::exception &e) {
        problem = QString::fromStdString(e.what());
    }
    Q_EMIT error(title, problem);
    return false;
}

void HistoryPanel::exportDialog(bool devices)
{
    if (selectedRows().isEmpty())
        return;
    const QString title = devices ? tr("Export Devices") : tr("Export Metrics");
    const QString path = ExperimentFile::askSavePath(window(), title,
                                                     QDir::homePath() + (devices ? QStringLiteral("/devices.csv")
                                                                                 : QStringLiteral("/metrics.csv")),
                                                     tr("CSV files (*.csv)"));
    if (!path.isEmpty())
        devices ? exportDevicesCsv(path) : exportMetricsCsv(path);
}

} // namespace trainlab
