#pragma once

#include "core/eval/evaluation.h"

#include <QString>
#include <QWidget>

#include <optional>

class QAction;
class QChartView;
class QCheckBox;
class QLabel;
class QListWidget;
class QPainter;
class QPushButton;
class QTableWidget;
class QThread;
class QToolButton;

namespace trainlab {

// "Evaluation": the selected run's model on its test set, from its evaluation.json: the confusion matrix as a
// heatmap (counts, coloured by the share of the true class, a tooltip per cell), accuracy and precision per class
// as bars, top-1/top-3 and the most confused pairs, and a gallery of the most confident mistakes (a cell of the
// matrix filters it). Every run writes its evaluation.json when it ends; "Evaluate" computes one on a worker thread
// for older runs. The matrix exports as PNG or SVG, the per-class table as CSV. From here the run's model also
// classifies the user's pictures and goes to PyTorch as a state_dict.
class EvaluationView : public QWidget
{
    Q_OBJECT

public:
    explicit EvaluationView(QWidget *parent = nullptr);
    ~EvaluationView() override;

    // The run folder to show; "" shows nothing. Reads evaluation.json if the run has one. With `against` (a second
    // run selected), its evaluation.json is held against it: its accuracy per class beside this run's bars, and the
    // summary says what changed.
    void setRunDir(const QString &dir, const QString &against = QString());
    QString againstDir() const { return m_againstDir; }
    // The comparison shown, when `against` has an evaluation of the same test set.
    const std::optional<EvaluationDiff> &diff() const { return m_diff; }
    // Reads the current run's evaluation.json again (a run that just ended wrote it); not while evaluating.
    void reload();
    // "Evaluate Model": for History's menus; evaluates the current run.
    QAction *evaluateAction() const { return m_evaluateAction; }
    QString runDir() const { return m_runDir; }
    // Starts the evaluation of the current run on a worker thread; false if none is selected or one is running.
    bool evaluate();
    bool isEvaluating() const { return m_worker != nullptr; }
    // The run's model at path, on a worker thread: an ONNX model for a path ending in .onnx, else a PyTorch
    // state_dict; false if busy or nothing is selected.
    bool exportModel(const QString &path);
    // Opens "Classify Images" for the current run; nullptr when none is selected.
    class ClassifyDialog *openClassifyDialog();
    const std::optional<Evaluation> &evaluation() const { return m_evaluation; }
    QTableWidget *matrix() const { return m_matrix; }
    QListWidget *gallery() const { return m_gallery; }
    // Shows in the gallery only the mistakes of true class `truth` taken for `predicted`; (-1, -1) shows all.
    void filterGallery(int truth, int predicted);
    // Cells show the share of their true class instead of counts.
    void setRowNormalized(bool on);
    // The matrix as an image (.svg: SVG, else PNG) and the per-class table as CSV, each written atomically;
    // false with *error naming the file.
    bool saveMatrix(const QString &path, QString *error) const;
    bool savePerClassCsv(const QString &path, QString *error) const;

Q_SIGNALS:
    void evaluated(const QString &runDir);
    void evaluationFailed(const QString &runDir, const QString &error);
    // A line for the status bar: the export's result or why it failed.
    void status(const QString &text);

private:
    void showEvaluation(const Evaluation &e);
    void fillMatrix();
    void fillGallery();
    void paintMatrix(QPainter &painter, const QSize &size) const;
    void exportDialog(bool csv);
    void showMessage(const QString &text);
    void finished(const QString &dir, const std::optional<Evaluation> &result, const QString &error);
    void exportFinished(const QString &message);
    void updateButtons();

    // The summary's line on the run held against this one; fills m_diff.
    QString againstText();

    QString m_runDir;
    QString m_againstDir;
    std::optional<Evaluation> m_evaluation;
    std::optional<EvaluationDiff> m_diff;
    QThread *m_worker = nullptr;
    QLabel *m_summary;
    QPushButton *m_evaluateButton;
    QPushButton *m_classifyButton;
    QPushButton *m_exportButton;
    QTableWidget *m_matrix;
    QChartView *m_classChart;
    QCheckBox *m_rowNormalized;
    QToolButton *m_exportEvaluation;
    QLabel *m_galleryLabel;
    QPushButton *m_showAll;
    QListWidget *m_gallery;
    QAction *m_evaluateAction;
    int m_filterTruth = -1, m_filterPredicted = -1;
};

} // namespace trainlab
