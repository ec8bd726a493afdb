#pragma once

#include "core/config.h"
#include "core/data/datasetstore.h"

#include <QMap>
#include <QStringList>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QToolButton;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace trainlab {

class AugmentPreview;
class SchedulePreview;

// The experiment being edited: every field of an ExperimentConfig, checked by the core's validate().
class ExperimentForm : public QWidget
{
    Q_OBJECT

public:
    explicit ExperimentForm(QWidget *parent = nullptr);

    // Keys the form has no field for (model, timeout) are kept as given.
    void setConfig(const ExperimentConfig &config);
    ExperimentConfig config() const;
    // As if typed into the field: the experiment is marked changed.
    void setLearningRate(double learningRate);
    SchedulePreview *schedulePreview() const { return m_schedulePreview; }
    AugmentPreview *augmentPreview() const { return m_augmentPreview; }
    // Text that does not parse, then the core's validate(); each "key: what is wrong, got value".
    QStringList problems() const;
    bool isValid() const { return m_problemsList.isEmpty(); }
    // Fields whose text is not a number: config() still holds their last good value.
    QStringList unparsedText() const;
    void setDatasetStartFolder(const QString &folder) { m_datasetStartFolder = folder; }
    // The Advanced section shown or folded (the window remembers it between sessions).
    bool advancedOpen() const;
    void setAdvancedOpen(bool open);
    // Where Download… fetches the managed Fashion-MNIST from; empty mirrors: the manifest's own.
    void setDownloadSource(const DatasetManifest &manifest, const QStringList &mirrors = {});
    bool isDownloading() const;
    void startDownload();
    void cancelDownload();

Q_SIGNALS:
    void changed();
    void datasetFolderChosen(const QString &folder);
    void downloadFinished(bool ok, const QString &error);
    // Advanced opened or closed: the form's minimum width changed with it.
    void advancedToggled(bool open);

private:
    void buildDevices(const std::vector<std::string> &configured);
    void chooseDatasetFolder();
    void onEdited();
    void refreshDerived();
    void onOptimizerPicked();
    void showProblems();
    void onDownloadProgress(const QString &file, int fileIndex, int fileCount, qint64 bytes, qint64 total,
                            double bytesPerSecond);
    void onDownloadFinished(bool ok, bool cancelled, const QString &error);

    ExperimentConfig m_base;
    QStringList m_problemsList;
    QMap<QString, QWidget *> m_fields;   // config key -> the widget that edits it
    QString m_datasetStartFolder;
    bool m_loading = false;
    // SGD's momentum and Nesterov while AdamW is picked ("": none set aside).
    QString m_setAsideMomentum;
    bool m_setAsideNesterov = false;

    QLineEdit *m_name;
    QComboBox *m_datasetKind;
    QLineEdit *m_datasetPath;
    QPushButton *m_chooseFolder;
    QLabel *m_datasetStatus;
    QPushButton *m_download;
    QProgressBar *m_downloadProgress;
    QLabel *m_downloadRate;
    QPushButton *m_cancelDownload;
    class DatasetDownload *m_downloader;
    DatasetManifest m_manifest;
    QStringList m_mirrors;
    QString m_downloadError;
    QListWidget *m_devices;
    QSpinBox *m_cpuReplicas;
    QSpinBox *m_batchSize;
    QLabel *m_perDevice;
    QLineEdit *m_learningRate;
    QSpinBox *m_epochs;
    QLineEdit *m_seed;
    QComboBox *m_optimizer;
    QLineEdit *m_adamBeta1;
    QLineEdit *m_adamBeta2;
    QLineEdit *m_adamEps;
    QLineEdit *m_momentum;
    QLineEdit *m_weightDecay;
    QComboBox *m_precision;
    QComboBox *m_init;
    QComboBox *m_schedule;
    SchedulePreview *m_schedulePreview;
    AugmentPreview *m_augmentPreview;
    QLineEdit *m_warmup;
    QCheckBox *m_nesterov;
    QCheckBox *m_decayNormAndBias;
    QLineEdit *m_labelSmoothing;
    QLineEdit *m_gradClip;
    QLineEdit *m_emaDecay;
    QSpinBox *m_patience;
    QCheckBox *m_flip;
    QSpinBox *m_cropPadding;
    QLineEdit *m_erasing;
    QComboBox *m_channelsLast;
    QComboBox *m_speedWarmup;
    QCheckBox *m_fusedSgd;
    QCheckBox *m_cudaGraphs;
    QCheckBox *m_winograd;
    QSpinBox *m_cpuThreads;
    QSpinBox *m_trainLimit;
    QSpinBox *m_testLimit;
    QLabel *m_problemsLabel;
    QToolButton *m_advancedToggle = nullptr;
};

} // namespace trainlab
