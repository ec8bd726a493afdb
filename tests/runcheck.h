#pragma once

#include "core/runs/runrecord.h"

#include <QFile>
#include <QProcess>
#include <QStringList>

// What the resume and crash-safety tests compare between runs, and trainlab-cli as a child process.

inline QByteArray fileBytes(const std::string &path)
{
    QFile f(QString::fromStdString(path));
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The metrics.csv columns that do not depend on the clock (a resumed run keeps its earlier learning rates and norms).
inline QStringList learningColumns(const std::string &runDir)
{
    QStringList rows;
    for (const auto &m : trainlab::readMetrics(runDir))
        rows << QStringLiteral("%1,%2,%3,%4,%5,%6").arg(m.epoch).arg(m.trainLoss, 0, 'f', 6).arg(m.trainAcc, 0, 'f', 6)
                    .arg(m.testAcc, 0, 'f', 6).arg(m.learningRate, 0, 'g', 8).arg(m.gradNorm, 0, 'g', 6);
    return rows;
}

struct CliOutcome
{
    int exitCode = -1;   // -1: killed or crashed
    QString out, err;
};

inline QProcess *startCli(const QStringList &args, const QProcessEnvironment &env = QProcessEnvironment::systemEnvironment())
{
    auto *p = new QProcess;
    p->setProcessEnvironment(env);
    p->start(QStringLiteral(TRAINLAB_CLI), args);
    return p;
}

// Waits for (or kills, after timeoutMs) and deletes p.
inline CliOutcome finishCli(QProcess *p, int timeoutMs = 240000)
{
    CliOutcome o;
    if (!p->waitForFinished(timeoutMs))
        p->kill();
    p->waitForFinished();
    o.exitCode = p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -1;
    o.out = QString::fromUtf8(p->readAllStandardOutput());
    o.err = QString::fromUtf8(p->readAllStandardError());
    delete p;
    return o;
}
