#pragma once

#include "core/config.h"
#include "core/train/lrfinder.h"

#include <QDialog>
#include <QTimer>
#include <QVector>

#include <functional>
#include <memory>

class QLabel;
class QLineEdit;
class QLineSeries;
class QLogValueAxis;
class QPushButton;
class QScatterSeries;
class QSpinBox;
class QThread;
class QValueAxis;

namespace trainlab {

// "Find Learning Rate": the range test (core/train/lrfinder.h) on the form's experiment, on a worker thread, its
// loss against the rate drawn as it comes; "Use" hands the suggested rate back to the form.
class LrFinderDialog : public QDialog
{
    Q_OBJECT

public:
    explicit LrFinderDialog(const ExperimentConfig &config, QWidget *parent = nullptr);
    ~LrFinderDialog() override;

    // Asked before each start: why the devices are busy (a run, the queue), or empty when the test may train.
    void setBusyCheck(std::function<QString()> check) { m_busy = std::move(check); }
    void start();
    void stop();
    bool isRunning() const { return m_thread != nullptr; }
    // Closed while its test ran: it goes once the step in progress ends.
    bool isClosing() const { return m_deleteWhenDone; }
    int pointCount() const;
    double suggestedLearningRate() const { return m_result.suggestedLr; }
    QString statusText() const;

Q_SIGNALS:
    void learningRateChosen(double learningRate);
    void started();
    void finished();

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void validate();
    void flush();
    void done(const LrFinderResult &result);
    void joinThread();

    ExperimentConfig m_config;
    QLineEdit *m_minLr;
    QLineEdit *m_maxLr;
    QSpinBox *m_steps;
    QPushButton *m_startStop;
    QPushButton *m_use;
    QLabel *m_status;
    QLineSeries *m_loss;
    QLineSeries *m_smoothed;
    QScatterSeries *m_suggested;
    QLogValueAxis *m_axisX;
    QValueAxis *m_axisY;
    LrFinderOptions m_options;
    LrFinderResult m_result;
    QVector<LrFinderPoint> m_pending;
    QTimer m_flushTimer;
    std::shared_ptr<StopFlag> m_stop;
    QThread *m_thread = nullptr;
    bool m_deleteWhenDone = false;
    std::function<QString()> m_busy;
    double m_lossTop = 0.0;
    double m_lossLow = 0.0;   // the lowest point drawn
};

} // namespace trainlab
