#pragma once

#include "core/eval/evaluation.h"

#include <QString>
#include <QWidget>

#include <optional>

class QChartView;
class QLabel;
class QPushButton;
class QTableWidget;
class QThread;

namespace trainlab {

// "Evaluation": the selected run's model on its test set, from its evaluation.json: the confusion matrix as a
// heatmap (counts, coloured by the share of the true class, a tooltip per cell), accuracy and precision per class
// as bars, top-1/top-3 and the most confused pairs. "Evaluate" computes it on a worker thread where the run has
// none yet (or again, after a resume). From here the run's model also classifies the user's pictures and goes to
// PyTorch as a state_dict.
class EvaluationView : public QWidget
{
    Q_OBJECT

public:
    explicit EvaluationView(QWidget *parent = nullptr);
    ~EvaluationView() override;

    // The run folder to show; "" shows nothing. Reads evaluation.json if the run has one.
    void setRunDir(const QString &dir);
    QString runDir() const { return m_runDir; }
    // Starts the evaluation of the current run on a worker thread; false if none is selected or one is running.
    bool evaluate();
    bool isEvaluating() const { return m_worker != nullptr; }
    // The run's weights as a PyTorch state_dict at path, on a worker thread; false if busy or nothing is selected.
    bool exportModel(const QString &path);
    // Opens "Classify Images" for the current run; nullptr when none is selected.
    class ClassifyDialog *openClassifyDialog();
    const std::optional<Evaluation> &evaluation() const { return m_evaluation; }
    QTableWidget *matrix() const { return m_matrix; }

Q_SIGNALS:
    void evaluated(const QString &runDir);
    void evaluationFailed(const QString &runDir, const QString &error);
    // A line for the status bar: the export's result or why it failed.
    void status(const QString &text);

private:
    void showEvaluation(const Evaluation &e);
    void showMessage(const QString &text);
    void finished(const QString &dir, const std::optional<Evaluation> &result, const QString &error);
    void exportFinished(const QString &message);
    void updateButtons();

    QString m_runDir;
    std::optional<Evaluation> m_evaluation;
    QThread *m_worker = nullptr;
    QLabel *m_summary;
    QPushButton *m_evaluateButton;
    QPushButton *m_classifyButton;
    QPushButton *m_exportButton;
    QTableWidget *m_matrix;
    QChartView *m_classChart;
};

} // namespace trainlab
