#pragma once

#include "core/config.h"

#include <QDialog>

class QLabel;
class QPlainTextEdit;
class QSpinBox;

namespace trainlab {

// "Launch on a Cluster": the command lines that start the current experiment file under torchrun and under Slurm,
// one process per GPU (or one per node for CPU devices), each with a Copy button.
class LaunchDialog : public QDialog
{
    Q_OBJECT

public:
    LaunchDialog(const ExperimentConfig &config, const QString &configPath, QWidget *parent = nullptr);

    QString torchrunText() const;
    QString slurmText() const;
    QSpinBox *nodes() const { return m_nodes; }

private:
    void update();

    ExperimentConfig m_config;
    QString m_path;
    QSpinBox *m_nodes;
    QLabel *m_layout;
    QPlainTextEdit *m_torchrun;
    QPlainTextEdit *m_slurm;
};

} // namespace trainlab
