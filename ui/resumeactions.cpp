#include "ui/resumeactions.h"

#include <QAction>
#include <QInputDialog>
#include <QWidget>

namespace trainlab {

ResumeActions::ResumeActions(QWidget *dialogParent)
    : QObject(dialogParent)
    , m_dialogParent(dialogParent)
    , m_resume(new QAction(tr("&Resume Run"), this))
    , m_continue(new QAction(tr("&Continue Run…"), this))
{
    m_resume->setObjectName(QStringLiteral("resumeRunAction"));
    m_resume->setToolTip(tr("Go on from the last checkpoint of a stopped, failed or interrupted run"));
    m_continue->setObjectName(QStringLiteral("continueRunAction"));
    m_continue->setToolTip(tr("Train a completed run for more epochs"));
    m_resume->setEnabled(false);
    m_continue->setEnabled(false);
    connect(m_resume, &QAction::triggered, this,
            [this] { Q_EMIT resumeRequested(QString::fromStdString(m_selected.dir), 0); });
    connect(m_continue, &QAction::triggered, this, &ResumeActions::askToContinue);
}

void ResumeActions::update(const QVector<RunSummary> &selected, bool training)
{
    const bool one = selected.size() == 1 && !training;
    m_selected = one ? selected.first() : RunSummary{};
    m_resume->setEnabled(one && m_selected.canResume());
    m_continue->setEnabled(one && m_selected.status == "completed");
}

void ResumeActions::askToContinue()
{
    if (m_selected.dir.empty())
        return;
    bool ok = false;
    const int more = QInputDialog::getInt(m_dialogParent, tr("Continue Run"),
                                          (m_selected.epochsDone == 1 ? tr("%1 has trained 1 epoch. Train how many more?")
                                                                      : tr("%1 has trained %2 epochs. Train how many more?")
                                                                            .arg(m_selected.epochsDone))
                                              .arg(QString::fromStdString(m_selected.name)),
                                          5, 1, 100000, 1, &ok);
    if (ok)
        Q_EMIT resumeRequested(QString::fromStdString(m_selected.dir), m_selected.epochsDone + more);
}

} // namespace trainlab
