#pragma once

#include "core/eval/classify.h"

#include <QDialog>
#include <QStringList>

#include <optional>

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;
class QThread;

namespace trainlab {

// "Classify Images": the user's own pictures through a run's model, a row per file with the 28×28 the model
// saw, its three likeliest classes and a note (negated, or why the file was refused). Decoding and the model
// run on a worker thread.
class ClassifyDialog : public QDialog
{
    Q_OBJECT

public:
    explicit ClassifyDialog(const QString &runDir, QWidget *parent = nullptr);
    ~ClassifyDialog() override;

    // Adds a row per file once the worker is done; false while one is running or without files.
    bool classify(const QStringList &paths);
    bool isClassifying() const { return m_worker != nullptr; }
    QTableWidget *table() const { return m_table; }

Q_SIGNALS:
    void classified(int rows);

private:
    void addImages();
    void finished(const std::optional<ClassifyResult> &result, const QString &error);

    QString m_runDir;
    QThread *m_worker = nullptr;
    QLabel *m_status;
    QComboBox *m_invert;
    QPushButton *m_addButton;
    QTableWidget *m_table;
};

} // namespace trainlab
