#include "ui/experimentfile.h"

#include "core/runs/runrecord.h"
#include "ui/experimentform.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSettings>
#include <QTimer>

namespace trainlab {

namespace {

constexpr int kMaxRecentFiles = 8;

} // namespace

ExperimentFile::ExperimentFile(ExperimentForm *form, QWidget *window)
    : QObject(window)
    , m_form(form)
    , m_window(window)
{}

void ExperimentFile::addActions(QMenu *file)
{
    file->addAction(tr("&New"), QKeySequence::New, this, &ExperimentFile::newExperiment);
    file->addAction(tr("&Open…"), QKeySequence::Open, this, &ExperimentFile::openDialog);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    QMenu *presets = file->addMenu(tr("&Presets"));
    for (const std::string &name : presetNames()) {
        const QString preset = QString::fromStdString(name);
        presets->addAction(preset, this, [this, preset] {
            if (maybeSave())
                loadPreset(preset);
        });
    }
    file->addSeparator();
    file->addAction(tr("&Save"), QKeySequence::Save, this, &ExperimentFile::save);
    file->addAction(tr("Save &As…"), QKeySequence::SaveAs, this, &ExperimentFile::saveAs);
    file->addAction(tr("&Duplicate"), QKeySequence(tr("Ctrl+D")), this, &ExperimentFile::duplicate);
    rebuildRecentMenu();
}

void ExperimentFile::readSettings()
{
    m_recentFiles = QSettings().value(QStringLiteral("recentFiles")).toStringList();
    rebuildRecentMenu();
}

void ExperimentFile::setClean(const ExperimentConfig &config, const QString &path)
{
    m_form->setConfig(config);
    m_filePath = path;
    // The file's own text: a value the form cannot show as it is leaves the experiment marked modified.
    m_cleanJson = QString::fromStdString(config.toJson());
    Q_EMIT changed();
}

void ExperimentFile::loadUnsaved(const ExperimentConfig &config)
{
    m_form->setConfig(config);
    m_filePath.clear();
    m_cleanJson.clear();   // never saved
    Q_EMIT changed();
}

bool ExperimentFile::isModified() const
{
    // Text that is not a number is an edit too, though config() cannot hold it yet.
    return !m_form->unparsedText().isEmpty() || QString::fromStdString(m_form->config().toJson()) != m_cleanJson;
}

bool ExperimentFile::maybeSave()
{
    if (!isModified())
        return true;
    const auto answer = QMessageBox::question(
        m_window, tr("Unsaved Changes"),
        tr("The experiment \"%1\" has unsaved changes. Save them?").arg(QString::fromStdString(m_form->config().name)),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Save)
        return save();
    return answer == QMessageBox::Discard;
}

void ExperimentFile::newExperiment()
{
    if (maybeSave())
        setClean(ExperimentConfig{}, QString());
}

bool ExperimentFile::loadPreset(const QString &name)
{
    try {
        setClean(trainlab::loadPreset(name.toStdString()), QString());
        return true;
    } catch (const std::exception &e) {
        Q_EMIT error(tr("Preset"), QString::fromStdString(e.what()));
        return false;
    }
}

void ExperimentFile::openDialog()
{
    if (!maybeSave())
        return;
    const QString recent = m_filePath.isEmpty() && !m_recentFiles.isEmpty() ? m_recentFiles.first() : m_filePath;
    const QString folder = recent.isEmpty() ? QDir::homePath() : QFileInfo(recent).path();
    const QString path = QFileDialog::getOpenFileName(m_window, tr("Open Experiment"), folder,
                                                      tr("TrainLab experiments (*.json);;All files (*)"));
    if (!path.isEmpty())
        openConfigFile(path);
}

bool ExperimentFile::openConfigFile(const QString &path)
{
    ExperimentConfig config;
    try {
        config = ExperimentConfig::load(path.toStdString());
    } catch (const ConfigError &e) {
        QString text = QString::fromStdString(e.what());
        if (!e.problems().empty()) {
            text = tr("%1 is not a TrainLab experiment:").arg(path);
            for (const auto &p : e.problems())
                text += QStringLiteral("\n  ") + QString::fromStdString(p);
        }
        Q_EMIT error(tr("Open Experiment"), text);
        if (!QFileInfo::exists(path) && m_recentFiles.removeAll(QFileInfo(path).absoluteFilePath()) > 0) {
            QSettings().setValue(QStringLiteral("recentFiles"), m_recentFiles);
            QTimer::singleShot(0, this, &ExperimentFile::rebuildRecentMenu);
        }
        return false;
    }
    setClean(config, QFileInfo(path).absoluteFilePath());
    addRecentFile(m_filePath);
    Q_EMIT status(tr("Opened %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

bool ExperimentFile::saveConfigTo(const QString &path)
{
    if (const QStringList unparsed = m_form->unparsedText(); !unparsed.isEmpty()) {
        Q_EMIT error(tr("Save Experiment"),
                     tr("Not saved: correct these fields first.\n  %1").arg(unparsed.join(QStringLiteral("\n  "))));
        return false;
    }
    const ExperimentConfig config = m_form->config();
    try {
        config.save(path.toStdString());
    } catch (const std::exception &e) {
        Q_EMIT error(tr("Save Experiment"), QString::fromStdString(e.what()));
        return false;
    }
    m_filePath = QFileInfo(path).absoluteFilePath();
    m_cleanJson = QString::fromStdString(config.toJson());
    addRecentFile(m_filePath);
    Q_EMIT changed();
    Q_EMIT status(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

bool ExperimentFile::save()
{
    return m_filePath.isEmpty() ? saveAs() : saveConfigTo(m_filePath);
}

bool ExperimentFile::saveAs()
{
    QString start = m_filePath;
    if (start.isEmpty()) {
        const QString folder = m_recentFiles.isEmpty() ? QDir::homePath() : QFileInfo(m_recentFiles.first()).path();
        start = folder + QLatin1Char('/')
                + QString::fromStdString(RunRecord::safeName(m_form->config().name)) + QStringLiteral(".json");
    }
    const QString path = askSavePath(m_window, tr("Save Experiment"), start, tr("TrainLab experiments (*.json)"));
    return !path.isEmpty() && saveConfigTo(path);
}

void ExperimentFile::duplicate()
{
    ExperimentConfig copy = m_form->config();
    copy.name += " copy";
    loadUnsaved(copy);
}

void ExperimentFile::addRecentFile(const QString &path)
{
    m_recentFiles.removeAll(path);
    m_recentFiles.prepend(path);
    while (m_recentFiles.size() > kMaxRecentFiles)
        m_recentFiles.removeLast();
    QSettings().setValue(QStringLiteral("recentFiles"), m_recentFiles);
    // Later: this can run inside the triggered() of an action that the rebuild deletes.
    QTimer::singleShot(0, this, &ExperimentFile::rebuildRecentMenu);
}

void ExperimentFile::rebuildRecentMenu()
{
    if (!m_recentMenu)
        return;
    m_recentMenu->clear();
    for (const QString &path : std::as_const(m_recentFiles)) {
        m_recentMenu->addAction(QDir::toNativeSeparators(path), this, [this, path] {
            if (maybeSave())
                openConfigFile(path);
        });
    }
    if (!m_recentFiles.isEmpty()) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear List"), this, [this] {
            m_recentFiles.clear();
            QSettings().setValue(QStringLiteral("recentFiles"), m_recentFiles);
            QTimer::singleShot(0, this, &ExperimentFile::rebuildRecentMenu);
        });
    }
    m_recentMenu->setEnabled(!m_recentFiles.isEmpty());
}

QString ExperimentFile::askSavePath(QWidget *parent, const QString &title, const QString &suggested, const QString &filter)
{
    QString chosenFilter;
    QString path = QFileDialog::getSaveFileName(parent, title, suggested, filter, &chosenFilter);
    // A name typed without an extension gets the chosen filter's ("PNG image (*.png)"), or the suggested one.
    if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) {
        const QRegularExpression pattern(QStringLiteral("\\*\\.(\\w+)"));
        const QRegularExpressionMatch match = pattern.match(chosenFilter);
        path += QLatin1Char('.') + (match.hasMatch() ? match.captured(1) : QFileInfo(suggested).suffix());
    }
    return path;
}

} // namespace trainlab
