#include "ui/datasetdownload.h"

#include "core/data/download.h"

#include <QMetaObject>
#include <QPointer>
#include <QThread>

namespace trainlab {

namespace {

// Runs on the download thread; its signals are emitted there and queued to the GUI thread.
class SignalDownloadObserver : public DownloadObserver
{
public:
    explicit SignalDownloadObserver(DatasetDownload &download) : m_download(download) {}

    void onProgress(const DownloadProgress &p) override
    {
        Q_EMIT m_download.progress(QString::fromStdString(p.file), p.fileIndex, p.fileCount,
                                   static_cast<qint64>(p.bytes), static_cast<qint64>(p.total), p.bytesPerSecond);
    }
    void onLog(const std::string &line) override { Q_EMIT m_download.logLine(QString::fromStdString(line)); }

private:
    DatasetDownload &m_download;
};

} // namespace

DatasetDownload::DatasetDownload(QObject *parent)
    : QObject(parent)
{}

DatasetDownload::~DatasetDownload()
{
    if (m_thread) {
        m_cancel->store(true);
        m_thread->wait();
        delete m_thread;
    }
}

void DatasetDownload::start(const QString &dir, const DatasetManifest &manifest, const QStringList &mirrors)
{
    if (m_thread)
        return;
    m_cancel = std::make_shared<StopFlag>(false);
    DownloadOptions options;
    for (const QString &m : mirrors)
        options.mirrors.push_back(m.toStdString());
    const std::string target = dir.toStdString();
    auto cancel = m_cancel;
    QPointer<DatasetDownload> self(this);
    m_thread = QThread::create([this, self, target, manifest, options, cancel] {
        SignalDownloadObserver observer(*this);
        const DownloadResult r = downloadDataset(target, manifest, observer, *cancel, options);
        const bool ok = r.ok;
        const bool cancelled = r.cancelled;
        const QString error = QString::fromStdString(r.error);
        // The destructor joins this thread before the object goes, so self is valid here.
        QMetaObject::invokeMethod(self.data(), [self, ok, cancelled, error] {
            if (self)
                self->onThreadDone(ok, cancelled, error);
        }, Qt::QueuedConnection);
    });
    m_thread->setObjectName(QStringLiteral("dataset download"));
    m_thread->start();
}

void DatasetDownload::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

void DatasetDownload::onThreadDone(bool ok, bool cancelled, const QString &error)
{
    if (m_thread) {
        m_thread->wait();
        delete m_thread;
        m_thread = nullptr;
    }
    Q_EMIT finished(ok, cancelled, error);
}

} // namespace trainlab
