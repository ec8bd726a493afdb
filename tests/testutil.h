#pragma once

#include "core/train/observer.h"

#include <QProcess>
#include <QTest>

#include <atomic>
#include <vector>

// Time bounds in tests are for an ordinary build; an ASan/UBSan build starts, allocates and exits slower.
constexpr long long timeLimitMs(long long ms)
{
#ifdef TRAINLAB_SANITIZED
    return 4 * ms;
#else
    return ms;
#endif
}

// Rows about what is learned (loss, determinism, early stopping), about timing, or a longer twin of a path a
// shorter row already runs: an ASan/UBSan build, which trains about ten times slower, leaves them to the main build.
#ifdef TRAINLAB_SANITIZED
#define SKIP_WHEN_SANITIZED() QSKIP("learning, timing or a covered path, not memory: runs in the main build")
#else
#define SKIP_WHEN_SANITIZED() static_cast<void>(0)
#endif

// Whether Debian's /usr/bin/python3 (not a pyenv's first on PATH) runs `import modules`.
inline bool systemPythonImports(const char *modules)
{
    QProcess probe;
    probe.start(QStringLiteral("/usr/bin/python3"), {QStringLiteral("-c"), QStringLiteral("import ") + QLatin1String(modules)});
    return probe.waitForFinished(60000) && probe.exitStatus() == QProcess::NormalExit && probe.exitCode() == 0;
}

// Skips the test without those modules, or fails it when the variable `required` is set (as CI sets it).
#define SKIP_WITHOUT_SYSTEM_PYTHON(modules, required, packages)                                                 \
    if (!systemPythonImports(modules)) {                                                                       \
        if (qEnvironmentVariableIsSet(required))                                                                \
            QFAIL(required " is set and /usr/bin/python3 cannot import " modules " (" packages ")");            \
        QSKIP("/usr/bin/python3 cannot import " modules " (Debian's " packages ")");                           \
    }

// Keeps every event a run reports, for the tests to compare with what was written.
class RecordingObserver : public trainlab::TrainingObserver
{
public:
    void onRunStarted(const trainlab::RunInfo &info) override { started = info; ++startedCount; }
    bool onBatch(const trainlab::BatchProgress &p) override
    {
        batches.push_back(p);
        ++batchCount;
        if (stopAfterBatches > 0 && static_cast<int>(batches.size()) >= stopAfterBatches)
            return false;
        return true;
    }
    void onEpoch(const trainlab::EpochMetrics &m) override { epochs.push_back(m); }
    void onLog(const std::string &line) override { logs.push_back(line); }
    void onFinished(const trainlab::RunResult &r) override { result = r; ++finishedCount; }

    trainlab::RunInfo started;
    int startedCount = 0;
    std::vector<trainlab::BatchProgress> batches;
    std::vector<trainlab::EpochMetrics> epochs;
    std::vector<std::string> logs;
    trainlab::RunResult result;
    int finishedCount = 0;
    int stopAfterBatches = 0;
    std::atomic<int> batchCount{0};
};
