#pragma once

#include "core/data/datasetstore.h"
#include "core/train/observer.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>

class QThread;

namespace trainlab {

// Downloads a dataset on its own QThread; progress and the end arrive as queued signals, and the GUI
// thread never waits on the network (only the destructor joins, after cancelling).
class DatasetDownload : public QObject
{
    Q_OBJECT

public:
    explicit DatasetDownload(QObject *parent = nullptr);
    ~DatasetDownload() override;

    // mirrors empty: the manifest's own list.
    void start(const QString &dir, const DatasetManifest &manifest, const QStringList &mirrors = {});
    void cancel();
    bool isRunning() const { return m_thread != nullptr; }

Q_SIGNALS:
    void progress(const QString &file, int fileIndex, int fileCount, qint64 bytes, qint64 total, double bytesPerSecond);
    void logLine(const QString &line);
    void finished(bool ok, bool cancelled, const QString &error);

private:
    void onThreadDone(bool ok, bool cancelled, const QString &error);

    QThread *m_thread = nullptr;
    std::shared_ptr<StopFlag> m_cancel;   // shared with the thread, set from the GUI thread
};

} // namespace trainlab
