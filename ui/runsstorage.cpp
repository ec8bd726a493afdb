#include "ui/runsstorage.h"

#include "core/runs/runstorage.h"

namespace trainlab {

RunsStorage::RunsStorage(QWidget *parent)
    : QLabel(parent)
{
    setObjectName(QStringLiteral("runsStorage"));
    setTextInteractionFlags(Qt::TextSelectableByMouse);
}

void RunsStorage::refresh(const QString &runsDir)
{
    RunsFolderUsage usage;
    try {
        usage = runsFolderUsage(runsDir.toStdString());
    } catch (const std::exception &e) {
        setText(QString::fromStdString(e.what()));
        setToolTip(runsDir);
        return;
    }
    const QString runs = usage.runs == 1 ? tr("1 run") : tr("%1 runs").arg(usage.runs);
    setText(tr("Runs folder: %1, %2 (checkpoints %3)")
                .arg(runs, QString::fromStdString(formatBytes(usage.totalBytes)),
                     QString::fromStdString(formatBytes(usage.checkpointBytes))));
    setToolTip(runsDir);
}

} // namespace trainlab
