#pragma once

#include "core/runs/runrecord.h"

#include <QObject>
#include <QVector>

class QAction;
class QWidget;

namespace trainlab {

// The Resume and Continue… actions of the run history (Run menu and the history's context menu).
class ResumeActions : public QObject
{
    Q_OBJECT

public:
    // dialogParent: where Continue… asks how many more epochs.
    explicit ResumeActions(QWidget *dialogParent);

    QAction *resumeAction() const { return m_resume; }
    QAction *continueAction() const { return m_continue; }
    // Resume: one stopped, failed or interrupted run; Continue…: one completed run; never while one trains.
    void update(const QVector<RunSummary> &selected, bool training);

Q_SIGNALS:
    // epochs 0: go on to the planned epochs; otherwise continue to that many in total.
    void resumeRequested(const QString &runDir, int epochs);

private:
    void askToContinue();

    QWidget *m_dialogParent;
    QAction *m_resume;
    QAction *m_continue;
    RunSummary m_selected;
};

} // namespace trainlab
