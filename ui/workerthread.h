#pragma once

#include <QMetaObject>
#include <QPointer>
#include <QString>
#include <QThread>

namespace trainlab {

// Starts work() on a new thread and hands its result to done() on receiver's thread, unless receiver is gone by
// then. The owner joins and deletes the returned thread (in done, or in its destructor before it goes).
template <typename Receiver, typename Work, typename Done>
QThread *startWorker(Receiver *receiver, const QString &name, Work work, Done done)
{
    QPointer<Receiver> self(receiver);
    QThread *thread = QThread::create([self, work, done] {
        auto result = work();
        QMetaObject::invokeMethod(self.data(), [self, result, done] {
            if (self)
                done(result);
        }, Qt::QueuedConnection);
    });
    thread->setObjectName(name);
    thread->start();
    return thread;
}

} // namespace trainlab
