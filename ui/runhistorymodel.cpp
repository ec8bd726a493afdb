#include "ui/runhistorymodel.h"

#include "core/monitor/devicesampler.h"
#include "core/runs/runstorage.h"

#include <QDateTime>
#include <QDir>
#include <QHash>
#include <QLocale>

#include <iterator>

namespace trainlab {

RunHistoryModel::RunHistoryModel(QObject *parent)
    : QAbstractTableModel(parent)
{}

void RunHistoryModel::setRunsDir(const QString &dir)
{
    m_runsDir = dir;
    refresh();
}

void RunHistoryModel::setActiveRunDir(const QString &dir)
{
    m_activeRunDir = dir;
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, Status), index(rowCount() - 1, Status));
}

namespace {

std::pair<std::filesystem::file_time_type, std::uintmax_t> stampOf(const std::string &path)
{
    std::error_code ec;
    const auto time = std::filesystem::last_write_time(path, ec);
    return {ec ? std::filesystem::file_time_type::min() : time, std::filesystem::file_size(path, ec)};
}

} // namespace

void RunHistoryModel::refresh()
{
    beginResetModel();
    QHash<QString, Row> previous;
    for (Row &row : m_rows)
        previous.insert(QString::fromStdString(row.summary.dir), std::move(row));
    m_rows.clear();
    std::vector<RunSummary> runs;
    try {
        runs = listRuns(m_runsDir.toStdString());
    } catch (const std::exception &) {
        // Not a folder: no runs to list; the storage line under the table says why.
    }
    for (const RunSummary &s : runs) {
        Row row;
        row.summary = s;
        if (s.status == "unreadable") {
            m_rows.append(row);   // listed with its problem (tooltip), never read through
            continue;
        }
        row.configStamp = stampOf(s.dir + "/config.json");
        row.metricsStamp = stampOf(s.dir + "/metrics.csv");
        const auto known = previous.constFind(QString::fromStdString(s.dir));
        if (known != previous.constEnd() && known->configStamp == row.configStamp) {
            row.config = known->config;
            row.hasConfig = known->hasConfig;
        } else {
            try {
                row.config = ExperimentConfig::load(s.dir + "/config.json");
                row.hasConfig = true;
            } catch (const std::exception &) {
                row.hasConfig = false;   // listed all the same: its metrics are still worth comparing
            }
        }
        if (known != previous.constEnd() && known->metricsStamp == row.metricsStamp) {
            row.epochs = known->epochs;
        } else {
            try {
                row.epochs = readMetrics(s.dir);
            } catch (const std::exception &) {
                // No readable metrics.csv: the other columns come from summary.json.
            }
        }
        row.reached = timeToTarget(row.epochs, m_target);
        m_rows.append(row);
    }
    endResetModel();
}

void RunHistoryModel::setTarget(double target)
{
    m_target = target;
    for (Row &row : m_rows)
        row.reached = timeToTarget(row.epochs, m_target);
    Q_EMIT headerDataChanged(Qt::Horizontal, ToTarget, ToTarget);
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, ToTarget), index(rowCount() - 1, ToTarget));
}

bool RunHistoryModel::config(int row, ExperimentConfig *out) const
{
    if (row < 0 || row >= m_rows.size() || !m_rows[row].hasConfig)
        return false;
    *out = m_rows[row].config;
    return true;
}

int RunHistoryModel::rowOfDir(const QString &dir) const
{
    const QString clean = QDir::cleanPath(dir);
    for (int i = 0; i < m_rows.size(); ++i) {
        if (QDir::cleanPath(QString::fromStdString(m_rows[i].summary.dir)) == clean)
            return i;
    }
    return -1;
}

int RunHistoryModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : m_rows.size();
}

int RunHistoryModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString RunHistoryModel::statusText(const Row &row) const
{
    const QString status = QString::fromStdString(row.summary.status);
    if (status != QLatin1String("running"))
        return status;
    if (QDir::cleanPath(QString::fromStdString(row.summary.dir)) == QDir::cleanPath(m_activeRunDir))
        return status;
    return tr("running elsewhere or interrupted");
}

QVariant RunHistoryModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_rows.size())
        return {};
    const Row &row = m_rows[index.row()];
    const RunSummary &s = row.summary;
    if (role == DirRole)
        return QString::fromStdString(s.dir);
    if (role == NotesRole)
        return QString::fromStdString(s.notes);
    if (role == Qt::ToolTipRole) {
        QString tip = QString::fromStdString(s.dir);
        if (!s.error.empty())
            tip += QLatin1Char('\n') + QString::fromStdString(s.error);
        if (!s.note.empty())
            tip += QLatin1Char('\n') + QString::fromStdString(s.note);
        if (!s.notes.empty())
            tip += QLatin1Char('\n') + tr("Notes:") + QLatin1Char('\n') + QString::fromStdString(s.notes);
        if (s.warmupSeconds > 0)
            tip += QLatin1Char('\n') + tr("Warm-up before epoch 1: %1 s (in no epoch's time)").arg(QString::number(s.warmupSeconds, 'f', 1));
        // Read on hover only: devices.csv is a few rows per epoch, and most runs are never hovered.
        if (const auto rows = readDeviceEpochs(s.dir); !rows.empty()) {
            const int epochs = rows.back().epoch;
            tip += QLatin1Char('\n') + (epochs == 1 ? tr("Devices over 1 epoch:") : tr("Devices over %1 epochs:").arg(epochs));
            for (const DeviceEpochStats &d : summarizeDevices(rows))
                tip += QStringLiteral("\n  ") + QString::fromStdString(formatEpochStats(d));
        }
        return tip;
    }
    if (role == SortRole)
        return sortValue(index);
    if (role == Qt::TextAlignmentRole && index.column() >= Batch && index.column() <= ToTarget && index.column() != Recipe)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole)
        return {};
    const bool done = s.epochsDone > 0;
    switch (index.column()) {
    case Name:
        return QString::fromStdString(s.name);
    case Date: {
        QDateTime when = QDateTime::fromString(QString::fromStdString(s.startTime), Qt::ISODate);
        return when.isValid() ? when.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm:ss"))
                              : QString::fromStdString(s.startTime);
    }
    case Devices: {
        QStringList devices;
        for (const auto &d : s.devices)
            devices << QString::fromStdString(d);
        return devices.join(QStringLiteral(", "));
    }
    case Batch:
        return row.hasConfig ? QVariant(static_cast<qlonglong>(row.config.batchSize)) : QVariant();
    case LearningRate:
        return row.hasConfig ? QVariant(QString::number(row.config.learningRate, 'g', QLocale::FloatingPointShortest))
                             : QVariant();
    case Recipe:
        return row.hasConfig ? QString::fromStdString(recipeText(row.config)) : QString();
    case Epochs:
        return row.hasConfig ? QStringLiteral("%1/%2").arg(s.epochsDone).arg(row.config.epochs)
                             : QString::number(s.epochsDone);
    case BestAcc:
        return done ? QString::number(s.bestTestAcc, 'f', 3) : QString();
    case FinalAcc:
        return done ? QString::number(s.finalTestAcc, 'f', 3) : QString();
    case SecPerEpoch:
        return done ? QString::number(s.meanEpochSeconds, 'f', 1) : QString();
    case ToTarget:
        return row.reached ? tr("%1 s (%2)").arg(QString::number(row.reached->seconds, 'f', 1)).arg(row.reached->epoch)
                           : done ? QStringLiteral("–") : QString();
    case Status:
        return statusText(row);
    case Notes: {
        // The first line, cut: the tooltip has them all, as written, and the filter searches them all.
        return QString::fromStdString(notesHeadline(s.notes, kNotesShown));
    }
    default:
        return {};
    }
}

QVariant RunHistoryModel::sortValue(const QModelIndex &index) const
{
    const Row &row = m_rows[index.row()];
    const RunSummary &s = row.summary;
    const bool done = s.epochsDone > 0;
    switch (index.column()) {
    case Date:
        return QString::fromStdString(s.startTime);
    case Batch:
        return row.hasConfig ? QVariant(static_cast<qlonglong>(row.config.batchSize)) : QVariant();
    case LearningRate:
        return row.hasConfig ? QVariant(row.config.learningRate) : QVariant();
    case Epochs:
        return s.epochsDone;
    case BestAcc:
        return done ? QVariant(s.bestTestAcc) : QVariant();
    case FinalAcc:
        return done ? QVariant(s.finalTestAcc) : QVariant();
    case SecPerEpoch:
        return done ? QVariant(s.meanEpochSeconds) : QVariant();
    case ToTarget:
        return row.reached ? QVariant(row.reached->seconds) : QVariant();
    case Notes:
        return s.notes.empty() ? QVariant() : QVariant(QString::fromStdString(s.notes));
    default:
        return data(index);
    }
}

namespace {
const char *const kColumnKeys[] = {"name", "date", "devices", "batch", "lr", "recipe", "epochs",
                                   "best_acc", "final_acc", "sec_per_epoch", "to_target", "status", "notes"};
static_assert(std::size(kColumnKeys) == RunHistoryModel::ColumnCount, "one key per column");
}

QString RunHistoryModel::columnKey(int column)
{
    return column >= 0 && column < ColumnCount ? QLatin1String(kColumnKeys[column]) : QString();
}

int RunHistoryModel::columnOfKey(const QString &key)
{
    for (int column = 0; column < ColumnCount; ++column) {
        if (key == QLatin1String(kColumnKeys[column]))
            return column;
    }
    return -1;
}

QVariant RunHistoryModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == Recipe)
        return tr("What the run changes from the chapter's recipe: precision, initial weights, momentum, weight decay, label "
                  "smoothing, schedule, augmentation, early stopping (\"d2l\": fp32, the chapter's init, plain SGD, a constant "
                  "rate, no augmentation)");
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == ToTarget)
        return tr("Training seconds until the first epoch with test accuracy at or above %1, and that epoch (DAWNBench's measure)")
            .arg(QString::number(m_target, 'f', 2));
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name: return tr("Name");
    case Date: return tr("Date");
    case Devices: return tr("Devices");
    case Batch: return tr("Batch");
    case LearningRate: return tr("LR");
    case Recipe: return tr("Recipe");
    case Epochs: return tr("Epochs");
    case BestAcc: return tr("Best acc");
    case FinalAcc: return tr("Final acc");
    case SecPerEpoch: return tr("sec/epoch");
    case ToTarget: return tr("to %1").arg(QString::number(m_target, 'f', 2));
    case Status: return tr("Status");
    case Notes: return tr("Notes");
    default: return {};
    }
}

} // namespace trainlab
