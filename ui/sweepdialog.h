#pragma once

#include "core/sweeps/sweep.h"

#include <QDialog>
#include <QString>

#include <functional>

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QDoubleSpinBox;
class QSpinBox;
class QTimer;

namespace trainlab {

// Sets up a sweep over the current experiment (or a preset's base): each axis an editable list, the run count live.
class SweepDialog : public QDialog
{
    Q_OBJECT

public:
    // Asked before accepting a sweep of more than SweepConfig::kAskAbove runs; true goes on.
    using Confirm = std::function<bool(long long runs)>;

    explicit SweepDialog(const ExperimentConfig &base, QWidget *parent = nullptr);

    // Fills every field from a shipped sweep (d2l-scaling, lr-sweep-quick, random-search-quick); false when there is none so named.
    bool loadPreset(const QString &name);
    void setSweep(const SweepConfig &sweep);
    // The sweep the fields describe now; valid only when problems() is empty.
    SweepConfig sweep() const;
    QStringList problems() const { return m_problems; }
    // The person's notes for every run of the sweep, trimmed; "" for none.
    QString notes() const;
    long long runCount() const { return m_runCount; }
    QString countText() const;
    void setConfirm(Confirm confirm) { m_confirm = std::move(confirm); }
    // Checks the fields at once rather than after the typing pause.
    void revalidate();

    void accept() override;

private:
    // Sets the prune value box for the chosen rule (a share in % or a test accuracy) and shows value.
    void showPruneValue(double value);
    // The box's value, or the value given to showPruneValue where the box only rounded it.
    double pruneValue() const;
    QLineEdit *axisEdit(const char *axis, const QString &placeholder);
    SweepConfig parse(QStringList *problems) const;

    ExperimentConfig m_base;
    ExperimentConfig m_currentBase;   // the experiment the dialog was opened on
    QComboBox *m_preset;
    QLineEdit *m_name;
    QLineEdit *m_notes;
    QLabel *m_baseLabel;
    QComboBox *m_mode;
    QSpinBox *m_runs;
    QSpinBox *m_randomSeed;
    QLineEdit *m_learningRate;
    QLineEdit *m_batchSize;
    QLineEdit *m_devices;
    QLineEdit *m_epochs;
    QLineEdit *m_seed;
    QLineEdit *m_precision;
    QLineEdit *m_momentum;
    QLineEdit *m_weightDecay;
    QLineEdit *m_labelSmoothing;
    QLineEdit *m_gradClipNorm;
    QLineEdit *m_emaDecay;
    QLineEdit *m_schedule;
    QLineEdit *m_warmupEpochs;
    QLineEdit *m_augmentation;
    QLineEdit *m_init;
    QLineEdit *m_optimizer;
    QCheckBox *m_scaleLr;
    QCheckBox *m_stopOnFailure;
    QComboBox *m_prune;
    QDoubleSpinBox *m_pruneValue;   // percentile: the top share kept; threshold: the test acc to reach
    double m_givenPruneValue = 0;   // what showPruneValue was given, and what the box then showed
    double m_shownPruneValue = 0;
    QSpinBox *m_pruneStartup;
    QSpinBox *m_pruneMinEpochs;
    QLabel *m_count;
    QDialogButtonBox *m_buttons;
    QTimer *m_validateTimer;
    QStringList m_problems;
    long long m_runCount = 0;
    Confirm m_confirm;
};

} // namespace trainlab
