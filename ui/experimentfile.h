#pragma once

#include "core/config.h"

#include <QObject>
#include <QString>
#include <QStringList>

class QMenu;
class QWidget;

namespace trainlab {

class ExperimentForm;

// The experiment as a file: new, open, recent files, presets, save, save as, duplicate, and whether the
// form differs from what was last loaded or saved. Dialogs open on the given window.
class ExperimentFile : public QObject
{
    Q_OBJECT

public:
    ExperimentFile(ExperimentForm *form, QWidget *window);

    // The File menu's experiment actions: New, Open…, Open Recent, Presets, Save, Save As…, Duplicate.
    void addActions(QMenu *file);
    void readSettings();

    bool isModified() const;
    QString currentFile() const { return m_filePath; }
    // Each returns false and says why (error()) when it cannot; the form is then left as it was.
    bool loadPreset(const QString &name);
    bool openConfigFile(const QString &path);
    bool saveConfigTo(const QString &path);
    bool save();
    bool saveAs();
    // Asks to save unsaved changes; false when the user cancels (or saving failed).
    bool maybeSave();
    void setClean(const ExperimentConfig &config, const QString &path);
    // Loaded as a new, unsaved experiment (a run's configuration, a duplicate).
    void loadUnsaved(const ExperimentConfig &config);

    // A save dialog whose answer gets the chosen filter's extension when the name has none.
    static QString askSavePath(QWidget *parent, const QString &title, const QString &suggested, const QString &filter);

Q_SIGNALS:
    void changed();
    void error(const QString &title, const QString &text);
    void status(const QString &text);

private:
    void newExperiment();
    void openDialog();
    void duplicate();
    void addRecentFile(const QString &path);
    void rebuildRecentMenu();

    ExperimentForm *m_form;
    QWidget *m_window;
    QMenu *m_recentMenu = nullptr;
    QString m_filePath;
    QString m_cleanJson;            // the form as last loaded or saved; modified = the form differs from it
    QStringList m_recentFiles;
};

} // namespace trainlab
