#pragma once

#include "core/train/observer.h"

#include <QMetaType>

// Core events travel between threads in queued signals.
Q_DECLARE_METATYPE(trainlab::RunInfo)
Q_DECLARE_METATYPE(trainlab::BatchProgress)
Q_DECLARE_METATYPE(trainlab::EpochMetrics)
Q_DECLARE_METATYPE(trainlab::RunResult)
