#pragma once

#include <QLabel>

namespace trainlab {

// The line under the run history: how many runs the runs folder holds and what they and their
// checkpoints take on disk (a ResNet-18 checkpoint is about 45 MB).
class RunsStorage : public QLabel
{
    Q_OBJECT

public:
    explicit RunsStorage(QWidget *parent = nullptr);
    void refresh(const QString &runsDir);
};

} // namespace trainlab
