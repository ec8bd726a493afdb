#include "ui/mainwindow.h"

#include "core/devices.h"
#include "core/paths.h"
#include "core/report.h"
#include "core/runrecord.h"
#include "core/runstorage.h"
#include "trainlab/version.h"
#include "core/sweepreport.h"
#include "ui/accuracychart.h"
#include "ui/compareview.h"
#include "ui/experimentform.h"
#include "ui/queuepanel.h"
#include "ui/resumeactions.h"
#include "ui/runhistorymodel.h"
#include "ui/runsstorage.h"
#include "ui/sweepdialog.h"
#include "ui/trainingrunner.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QRegularExpression>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QUrl>
#include <QVBoxLayout>

namespace trainlab {

namespace {

constexpr int kMaxRecentFiles = 8;

QString clock(qint64 ms)
{
    const qint64 s = ms / 1000;
    return s >= 3600 ? QStringLiteral("%1:%2:%3").arg(s / 3600).arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
                           .arg(s % 60, 2, 10, QLatin1Char('0'))
                     : QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

QString devicesText(const std::vector<std::string> &devices)
{
    QStringList list;
    for (const auto &d : devices)
        list << QString::fromStdString(d);
    return list.join(QStringLiteral(", "));
}

} // namespace

MainWindow::MainWindow(QWidget *parent)
    : QMainWindow(parent)
    , m_form(new ExperimentForm)
    , m_chart(new AccuracyChart)
    , m_runner(new TrainingRunner(this))
    , m_historyModel(new RunHistoryModel(this))
    , m_resumeActions(new ResumeActions(this))
    , m_queuePanel(new QueuePanel)
{
    setObjectName(QStringLiteral("mainWindow"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/org.trainlab.TrainLab.svg")));
    buildLayout();
    buildMenus();
    readSettings();

    connect(m_form, &ExperimentForm::changed, this, [this] {
        updateTitle();
        updateActions();
    });
    connect(m_form, &ExperimentForm::datasetFolderChosen, this, [this](const QString &folder) {
        m_lastDatasetDir = folder;
        m_form->setDatasetStartFolder(folder);
    });
    connect(m_runner, &TrainingRunner::runStarted, this, &MainWindow::onRunStarted);
    connect(m_runner, &TrainingRunner::batchDone, this, &MainWindow::onBatch);
    connect(m_runner, &TrainingRunner::epochDone, this, &MainWindow::onEpoch);
    connect(m_runner, &TrainingRunner::logLine, this, &MainWindow::appendLog);
    connect(m_runner, &TrainingRunner::finished, this, &MainWindow::onFinished);
    connect(m_runner, &TrainingRunner::idle, this, &MainWindow::onIdle);
    connect(m_resumeActions, &ResumeActions::resumeRequested, this, [this](const QString &dir, int epochs) { resumeRun(dir, epochs); });
    // After the window's own handlers: the panel sees a run the window has already shown.
    connect(m_runner, &TrainingRunner::runStarted, m_queuePanel, &QueuePanel::onRunStarted);
    connect(m_runner, &TrainingRunner::finished, m_queuePanel, &QueuePanel::onRunFinished);
    connect(m_runner, &TrainingRunner::idle, m_queuePanel, &QueuePanel::onRunnerIdle);
    m_queuePanel->setLauncher([this](const QueueEntry &entry, bool resume) { return launchQueued(entry, resume); });
    connect(m_queuePanel, &QueuePanel::stopRequested, this, &MainWindow::stopRun);
    connect(m_queuePanel, &QueuePanel::addCurrentRequested, this, &MainWindow::addCurrentToQueue);
    connect(m_queuePanel, &QueuePanel::addSweepRequested, this, &MainWindow::addSweepDialog);
    connect(m_queuePanel, &QueuePanel::compareRequested, this, &MainWindow::showCompare);

    setCleanConfig(ExperimentConfig{}, QString());
    m_historyModel->setRunsDir(runsDir());
    m_queuePanel->setRunsDir(runsDir());
    statusBar()->showMessage(tr("Ready"), 3000);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildLayout()
{
    m_startButton = new QPushButton(tr("Start"));
    m_startButton->setObjectName(QStringLiteral("startButton"));
    m_startButton->setDefault(true);
    m_stopButton = new QPushButton(tr("Stop"));
    m_stopButton->setObjectName(QStringLiteral("stopButton"));
    connect(m_startButton, &QPushButton::clicked, this, &MainWindow::startRun);
    connect(m_stopButton, &QPushButton::clicked, this, &MainWindow::stopRun);

    auto *formScroll = new QScrollArea;
    formScroll->setWidget(m_form);
    formScroll->setWidgetResizable(true);
    formScroll->setFrameShape(QFrame::NoFrame);
    auto *left = new QWidget;
    auto *leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(formScroll, 1);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_startButton);
    buttons->addWidget(m_stopButton);
    leftLayout->addLayout(buttons);

    m_epochLabel = new QLabel(tr("No run yet"));
    m_epochLabel->setObjectName(QStringLiteral("epochLabel"));
    m_batchBar = new QProgressBar;
    m_batchBar->setObjectName(QStringLiteral("batchProgress"));
    m_batchBar->setFormat(tr("batch %v of %m"));
    m_batchBar->setRange(0, 1);
    m_batchBar->setValue(0);
    m_speedLabel = new QLabel;
    m_speedLabel->setObjectName(QStringLiteral("speedLabel"));
    m_timeLabel = new QLabel;
    m_timeLabel->setObjectName(QStringLiteral("timeLabel"));
    auto *progress = new QHBoxLayout;
    progress->addWidget(m_epochLabel);
    progress->addWidget(m_batchBar, 1);
    progress->addWidget(m_speedLabel);
    progress->addWidget(m_timeLabel);

    auto *showTrainAcc = new QCheckBox(tr("train acc"));
    showTrainAcc->setObjectName(QStringLiteral("showTrainAcc"));
    showTrainAcc->setChecked(true);
    auto *showLoss = new QCheckBox(tr("train loss"));
    showLoss->setObjectName(QStringLiteral("showLoss"));
    showLoss->setChecked(true);
    connect(showTrainAcc, &QCheckBox::toggled, m_chart, &AccuracyChart::setTrainAccVisible);
    connect(showLoss, &QCheckBox::toggled, m_chart, &AccuracyChart::setLossVisible);
    auto *chartOptions = new QHBoxLayout;
    chartOptions->addWidget(new QLabel(tr("Show:")));
    chartOptions->addWidget(showTrainAcc);
    chartOptions->addWidget(showLoss);
    chartOptions->addStretch(1);

    auto *top = new QWidget;
    auto *topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addWidget(m_chart, 1);
    topLayout->addLayout(chartOptions);
    topLayout->addLayout(progress);

    m_log = new QPlainTextEdit;
    m_log->setObjectName(QStringLiteral("log"));
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(20000);
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));

    m_history = new QTableView;
    m_history->setObjectName(QStringLiteral("history"));
    m_history->setModel(m_historyModel);
    m_history->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_history->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_history->setAlternatingRowColors(true);
    m_history->verticalHeader()->hide();
    m_history->horizontalHeader()->setStretchLastSection(true);
    m_history->setContextMenuPolicy(Qt::ActionsContextMenu);
    connect(m_history->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &MainWindow::onHistorySelection);
    connect(m_historyModel, &QAbstractItemModel::modelReset, this, &MainWindow::onHistorySelection);
    connect(m_historyModel, &QAbstractItemModel::modelReset, m_history, &QTableView::resizeColumnsToContents);
    connect(m_history, &QTableView::doubleClicked, this, &MainWindow::useSelectedConfig);

    auto *tabs = new QTabWidget;
    tabs->setObjectName(QStringLiteral("tabs"));
    m_storage = new RunsStorage;
    auto *historyPage = new QWidget;
    auto *historyLayout = new QVBoxLayout(historyPage);
    historyLayout->setContentsMargins(0, 0, 0, 0);
    historyLayout->addWidget(m_history, 1);
    historyLayout->addWidget(m_storage);
    tabs->addTab(historyPage, tr("Run &history"));
    tabs->addTab(m_log, tr("&Log"));

    auto *right = new QSplitter(Qt::Vertical);
    right->setObjectName(QStringLiteral("rightSplitter"));
    right->addWidget(top);
    right->addWidget(tabs);
    right->setStretchFactor(0, 3);
    right->setStretchFactor(1, 2);
    right->setSizes({480, 220});

    auto *splitter = new QSplitter(Qt::Horizontal);
    splitter->setObjectName(QStringLiteral("mainSplitter"));
    splitter->addWidget(left);
    splitter->addWidget(right);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({380, 900});
    setCentralWidget(splitter);

    auto *queueDock = new QDockWidget(tr("Queue"), this);
    queueDock->setObjectName(QStringLiteral("queueDock"));
    queueDock->setWidget(m_queuePanel);
    addDockWidget(Qt::BottomDockWidgetArea, queueDock);

    m_statusDevices = new QLabel;
    m_statusDevices->setObjectName(QStringLiteral("statusDevices"));
    statusBar()->addPermanentWidget(m_statusDevices);
    statusBar()->addPermanentWidget(new QLabel(QString::fromStdString(buildDescription())));
}

void MainWindow::buildMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&New"), QKeySequence::New, this, &MainWindow::newExperiment);
    file->addAction(tr("&Open…"), QKeySequence::Open, this, &MainWindow::openDialog);
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
    file->addAction(tr("&Save"), QKeySequence::Save, this, &MainWindow::save);
    file->addAction(tr("Save &As…"), QKeySequence::SaveAs, this, &MainWindow::saveAs);
    file->addAction(tr("&Duplicate"), QKeySequence(tr("Ctrl+D")), this, &MainWindow::duplicate);
    file->addSeparator();
    file->addAction(tr("Export &Chart…"), this, &MainWindow::exportChartDialog);
    m_exportCsvAction = file->addAction(tr("Export &Metrics of Selected Runs…"), this, &MainWindow::exportCsvDialog);
    file->addSeparator();
    file->addAction(tr("Runs &Folder…"), this, &MainWindow::chooseRunsDir);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu *run = menuBar()->addMenu(tr("&Run"));
    m_startAction = run->addAction(tr("&Start"), QKeySequence(tr("Ctrl+R")), this, &MainWindow::startRun);
    m_stopAction = run->addAction(tr("S&top"), QKeySequence(tr("Ctrl+.")), this, &MainWindow::stopRun);
    run->addSeparator();
    run->addAction(m_resumeActions->resumeAction());
    run->addAction(m_resumeActions->continueAction());

    QMenu *queue = menuBar()->addMenu(tr("&Queue"));
    queue->addAction(tr("Add &Current Experiment"), this, &MainWindow::addCurrentToQueue);
    queue->addAction(tr("Add &Sweep…"), QKeySequence(tr("Ctrl+Shift+W")), this, &MainWindow::addSweepDialog);
    queue->addSeparator();
    queue->addAction(tr("S&tart Queue"), m_queuePanel, &QueuePanel::startQueue);
    queue->addAction(tr("Sto&p Queue"), m_queuePanel, &QueuePanel::stopQueue);
    queue->addSeparator();
    queue->addAction(tr("C&ompare Sweep…"), this, &MainWindow::chooseSweepToCompare);
    if (auto *dock = findChild<QDockWidget *>(QStringLiteral("queueDock")))
        queue->addAction(dock->toggleViewAction());

    QMenu *history = menuBar()->addMenu(tr("&History"));
    m_useConfigAction = history->addAction(tr("&Use This Run's Configuration"), this, &MainWindow::useSelectedConfig);
    m_openFolderAction = history->addAction(tr("&Open Run Folder"), this, &MainWindow::openSelectedFolder);
    m_deleteAction = history->addAction(tr("&Delete Run…"), this, &MainWindow::deleteSelectedRuns);
    m_deleteAction->setObjectName(QStringLiteral("deleteRunAction"));
    m_deleteAction->setShortcut(QKeySequence::Delete);
    m_deleteAction->setShortcutContext(Qt::WidgetShortcut);
    m_deleteCheckpointsAction = history->addAction(tr("Delete &Checkpoints…"), this, &MainWindow::deleteSelectedCheckpoints);
    m_deleteCheckpointsAction->setObjectName(QStringLiteral("deleteCheckpointsAction"));
    history->addSeparator();
    history->addAction(m_exportCsvAction);
    history->addAction(tr("&Refresh"), QKeySequence::Refresh, this, &MainWindow::refreshHistory);
    m_history->addActions({m_resumeActions->resumeAction(), m_resumeActions->continueAction(), m_useConfigAction,
                           m_openFolderAction, m_deleteAction, m_deleteCheckpointsAction, m_exportCsvAction});

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About TrainLab"), this, &MainWindow::about);

    QToolBar *toolbar = addToolBar(tr("Run"));
    toolbar->setObjectName(QStringLiteral("runToolbar"));
    toolbar->addAction(m_startAction);
    toolbar->addAction(m_stopAction);
}

void MainWindow::readSettings()
{
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    for (const char *name : {"mainSplitter", "rightSplitter"}) {
        if (auto *splitter = findChild<QSplitter *>(QLatin1String(name)))
            splitter->restoreState(settings.value(QStringLiteral("window/") + QLatin1String(name)).toByteArray());
    }
    if (!settings.contains(QStringLiteral("window/geometry")))
        resize(1280, 800);
    m_runsDir = settings.value(QStringLiteral("runsDir")).toString();
    m_savedRunsDir = m_runsDir;
    m_lastDatasetDir = settings.value(QStringLiteral("lastDatasetDir"), QDir::homePath()).toString();
    m_form->setDatasetStartFolder(m_lastDatasetDir);
    m_recentFiles = settings.value(QStringLiteral("recentFiles")).toStringList();
    rebuildRecentMenu();
}

void MainWindow::writeSettings()
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    for (const char *name : {"mainSplitter", "rightSplitter"}) {
        if (auto *splitter = findChild<QSplitter *>(QLatin1String(name)))
            settings.setValue(QStringLiteral("window/") + QLatin1String(name), splitter->saveState());
    }
    settings.setValue(QStringLiteral("runsDir"), m_savedRunsDir);
    settings.setValue(QStringLiteral("lastDatasetDir"), m_lastDatasetDir);
    settings.setValue(QStringLiteral("recentFiles"), m_recentFiles);
}

QString MainWindow::runsDir() const
{
    return m_runsDir.isEmpty() ? QString::fromStdString(defaultRunsDir()) : m_runsDir;
}

void MainWindow::setRunsDir(const QString &dir, bool remember)
{
    m_runsDir = dir;
    m_historyModel->setRunsDir(runsDir());
    m_queuePanel->setRunsDir(runsDir());
    if (remember)
        m_savedRunsDir = dir;
}

void MainWindow::chooseRunsDir()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Runs Folder"), runsDir());
    if (!dir.isEmpty())
        setRunsDir(dir);
}

void MainWindow::setCleanConfig(const ExperimentConfig &config, const QString &path)
{
    m_form->setConfig(config);
    m_filePath = path;
    // The file's own text: a value the form cannot show as it is leaves the experiment marked modified.
    m_cleanJson = QString::fromStdString(config.toJson());
    updateTitle();
    updateActions();
}

bool MainWindow::isModified() const
{
    // Text that is not a number is an edit too, though config() cannot hold it yet.
    return !m_form->unparsedText().isEmpty() || QString::fromStdString(m_form->config().toJson()) != m_cleanJson;
}

bool MainWindow::isRunning() const
{
    return m_runner->isRunning();
}

void MainWindow::updateTitle()
{
    QString name = QString::fromStdString(m_form->config().name);
    if (name.isEmpty())
        name = tr("untitled");
    setWindowTitle(QStringLiteral("%1[*] — TrainLab").arg(name));
    setWindowModified(isModified());
}

void MainWindow::updateActions()
{
    const bool running = m_runner->isRunning();
    const bool canStart = !running && m_form->isValid();
    m_startButton->setEnabled(canStart);
    m_startAction->setEnabled(canStart);
    const bool canStop = running && !m_runner->isStopping();
    m_stopButton->setEnabled(canStop);
    m_stopAction->setEnabled(canStop);
    const QList<int> rows = selectedRows();
    m_useConfigAction->setEnabled(rows.size() == 1);
    m_openFolderAction->setEnabled(rows.size() == 1);
    bool activeSelected = false;
    for (int row : rows)
        activeSelected |= QString::fromStdString(m_historyModel->summary(row).dir) == m_activeRunDir;
    m_deleteAction->setEnabled(!rows.isEmpty() && !activeSelected);
    m_deleteCheckpointsAction->setEnabled(!rows.isEmpty() && !activeSelected);
    QVector<RunSummary> selected;
    for (int row : rows)
        selected.append(m_historyModel->summary(row));
    m_resumeActions->update(selected, running);
    m_exportCsvAction->setEnabled(!rows.isEmpty());
}

void MainWindow::showError(const QString &title, const QString &text)
{
    m_lastError = text;
    statusBar()->showMessage(text, 10000);
    // Window-modal and not waited on, so nothing (a run, a test) is held up by an unanswered box.
    auto *box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(QStringLiteral("errorBox"));
    box->open();
}

bool MainWindow::maybeSave()
{
    if (!isModified())
        return true;
    const auto answer = QMessageBox::question(
        this, tr("Unsaved Changes"),
        tr("The experiment \"%1\" has unsaved changes. Save them?").arg(QString::fromStdString(m_form->config().name)),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Save)
        return save();
    return answer == QMessageBox::Discard;
}

void MainWindow::newExperiment()
{
    if (maybeSave())
        setCleanConfig(ExperimentConfig{}, QString());
}

bool MainWindow::loadPreset(const QString &name)
{
    try {
        setCleanConfig(trainlab::loadPreset(name.toStdString()), QString());
        return true;
    } catch (const std::exception &e) {
        showError(tr("Preset"), QString::fromStdString(e.what()));
        return false;
    }
}

void MainWindow::openDialog()
{
    if (!maybeSave())
        return;
    const QString recent = m_filePath.isEmpty() && !m_recentFiles.isEmpty() ? m_recentFiles.first() : m_filePath;
    const QString folder = recent.isEmpty() ? QDir::homePath() : QFileInfo(recent).path();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Experiment"), folder,
                                                      tr("TrainLab experiments (*.json);;All files (*)"));
    if (!path.isEmpty())
        openConfigFile(path);
}

bool MainWindow::openConfigFile(const QString &path)
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
        showError(tr("Open Experiment"), text);
        if (!QFileInfo::exists(path) && m_recentFiles.removeAll(QFileInfo(path).absoluteFilePath()) > 0) {
            QSettings().setValue(QStringLiteral("recentFiles"), m_recentFiles);
            QTimer::singleShot(0, this, &MainWindow::rebuildRecentMenu);
        }
        return false;
    }
    setCleanConfig(config, QFileInfo(path).absoluteFilePath());
    addRecentFile(m_filePath);
    statusBar()->showMessage(tr("Opened %1").arg(QDir::toNativeSeparators(path)), 5000);
    return true;
}

bool MainWindow::saveConfigTo(const QString &path)
{
    if (const QStringList unparsed = m_form->unparsedText(); !unparsed.isEmpty()) {
        showError(tr("Save Experiment"), tr("Not saved: correct these fields first.\n  %1").arg(unparsed.join(QStringLiteral("\n  "))));
        return false;
    }
    const ExperimentConfig config = m_form->config();
    try {
        config.save(path.toStdString());
    } catch (const std::exception &e) {
        showError(tr("Save Experiment"), QString::fromStdString(e.what()));
        return false;
    }
    m_filePath = QFileInfo(path).absoluteFilePath();
    m_cleanJson = QString::fromStdString(config.toJson());
    addRecentFile(m_filePath);
    updateTitle();
    statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 5000);
    return true;
}

bool MainWindow::save()
{
    return m_filePath.isEmpty() ? saveAs() : saveConfigTo(m_filePath);
}

bool MainWindow::saveAs()
{
    QString start = m_filePath;
    if (start.isEmpty()) {
        const QString folder = m_recentFiles.isEmpty() ? QDir::homePath() : QFileInfo(m_recentFiles.first()).path();
        start = folder + QLatin1Char('/')
                + QString::fromStdString(RunRecord::safeName(m_form->config().name)) + QStringLiteral(".json");
    }
    const QString path = askSavePath(tr("Save Experiment"), start, tr("TrainLab experiments (*.json)"));
    return !path.isEmpty() && saveConfigTo(path);
}

void MainWindow::duplicate()
{
    ExperimentConfig copy = m_form->config();
    copy.name += " copy";
    m_form->setConfig(copy);
    m_filePath.clear();
    m_cleanJson.clear();   // a duplicate has never been saved
    updateTitle();
}

void MainWindow::addRecentFile(const QString &path)
{
    m_recentFiles.removeAll(path);
    m_recentFiles.prepend(path);
    while (m_recentFiles.size() > kMaxRecentFiles)
        m_recentFiles.removeLast();
    QSettings().setValue(QStringLiteral("recentFiles"), m_recentFiles);
    // Later: this can run inside the triggered() of an action that the rebuild deletes.
    QTimer::singleShot(0, this, &MainWindow::rebuildRecentMenu);
}

void MainWindow::rebuildRecentMenu()
{
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
            QTimer::singleShot(0, this, &MainWindow::rebuildRecentMenu);
        });
    }
    m_recentMenu->setEnabled(!m_recentFiles.isEmpty());
}

void MainWindow::startRun()
{
    if (m_runner->isRunning() || !m_form->isValid())
        return;
    const ExperimentConfig config = m_form->config();
    prepareRunView(QString::fromStdString(config.name), config.epochs, devicesText(config.devices));
    m_runner->start(config, runsDir());
    updateActions();
}

void MainWindow::resumeRun(const QString &runDir, int epochs)
{
    if (m_runner->isRunning())
        return;
    ExperimentConfig config;
    try {
        config = ExperimentConfig::load(runDir.toStdString() + "/config.json");
    } catch (const std::exception &e) {
        showError(tr("Resume Run"), QString::fromStdString(e.what()));
        return;
    }
    prepareRunView(QString::fromStdString(config.name), epochs > 0 ? epochs : config.epochs, devicesText(config.devices));
    m_runner->resume(runDir, epochs);
    updateActions();
}

bool MainWindow::launchQueued(const QueueEntry &entry, bool resume)
{
    if (m_runner->isRunning())
        return false;
    m_queuedRun = true;
    const QString name = QString::fromStdString(entry.tag.empty() ? entry.config.name : entry.config.name + "  " + entry.tag.label());
    prepareRunView(name, entry.config.epochs, devicesText(entry.config.devices));
    if (resume)
        m_runner->resume(QString::fromStdString(entry.runDir));
    else
        m_runner->start(entry.config, runsDir(), entry.tag);
    updateActions();
    return true;
}

void MainWindow::addCurrentToQueue()
{
    if (!m_form->isValid()) {
        showError(tr("Add to Queue"), tr("The experiment is not valid: %1").arg(m_form->problems().join(QStringLiteral("; "))));
        return;
    }
    m_queuePanel->addExperiment(m_form->config());
}

void MainWindow::addSweepDialog()
{
    SweepDialog dialog(m_form->config(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    QString error;
    if (m_queuePanel->addSweep(dialog.sweep(), &error).isEmpty())
        showError(tr("Add Sweep"), error);
}

bool MainWindow::showCompare(const QString &sweepId)
{
    if (!m_compare) {
        m_compare = new CompareView(this);
        m_compare->setWindowFlag(Qt::Window);
        m_compare->setObjectName(QStringLiteral("compareView"));
        m_compare->resize(960, 640);
    }
    QString error;
    if (!m_compare->loadSweep(runsDir(), sweepId, &error)) {
        showError(tr("Compare Sweep"), error);
        return false;
    }
    m_compare->setWindowTitle(tr("Compare %1 — TrainLab").arg(sweepId));
    m_compare->show();
    m_compare->raise();
    return true;
}

void MainWindow::chooseSweepToCompare()
{
    QStringList ids;
    for (const std::string &id : listSweepIds(runsDir().toStdString()))
        ids << QString::fromStdString(id);
    if (ids.isEmpty()) {
        showError(tr("Compare Sweep"), tr("%1 holds no sweep runs yet: add a sweep to the queue and start it.").arg(runsDir()));
        return;
    }
    bool ok = false;
    const QString id = QInputDialog::getItem(this, tr("Compare Sweep"), tr("Sweep:"), ids, 0, false, &ok);
    if (ok)
        showCompare(id);
}

void MainWindow::prepareRunView(const QString &name, int epochs, const QString &devices)
{
    m_log->clear();
    m_chart->beginRun(name, epochs);
    m_runEpochs = epochs;
    m_epochsBefore = 0;
    m_runDevices = devices;
    m_lastResult = RunResult{};
    m_epochLabel->setText(tr("Loading data…"));
    m_batchBar->setRange(0, 1);
    m_batchBar->setValue(0);
    m_speedLabel->clear();
    m_timeLabel->clear();
    m_statusDevices->setText(tr("Training on %1").arg(m_runDevices));
    m_runClock.start();
}

void MainWindow::stopRun()
{
    if (!m_runner->isRunning())
        return;
    m_runner->stop();
    m_epochLabel->setText(tr("Stopping…"));
    updateActions();
}

void MainWindow::onRunStarted(const RunInfo &info)
{
    m_activeRunDir = QString::fromStdString(info.runDir);
    m_runDevices = devicesText(info.devices);
    m_statusDevices->setText(tr("Training on %1").arg(m_runDevices));
    appendLog(QString::fromStdString(runStartedLine(info)));
    // A resumed run is one curve: the epochs already trained first, then the new ones as they come.
    m_epochsBefore = info.epochsDone;
    for (const EpochMetrics &m : info.doneMetrics)
        m_chart->addEpoch(m);
    m_historyModel->setActiveRunDir(m_activeRunDir);
    refreshHistory();
}

void MainWindow::onBatch(const BatchProgress &p)
{
    if (m_runner->isStopping())
        return;
    m_epochLabel->setText(tr("Epoch %1 of %2").arg(p.epoch).arg(p.epochs));
    m_batchBar->setRange(0, static_cast<int>(p.batches));
    m_batchBar->setValue(static_cast<int>(p.batch));
    m_speedLabel->setText(tr("%1 img/s").arg(p.imagesPerSecond, 0, 'f', 0));
    const qint64 elapsed = m_runClock.elapsed();
    // Only this session's work: a resumed run's earlier epochs took no time here.
    const double done = (static_cast<double>(p.epoch - 1 - m_epochsBefore) * static_cast<double>(p.batches) + static_cast<double>(p.batch))
                        / (static_cast<double>(std::max(1, p.epochs - m_epochsBefore)) * static_cast<double>(std::max<std::int64_t>(1, p.batches)));
    const QString eta = done > 0.0 ? clock(static_cast<qint64>(static_cast<double>(elapsed) * (1.0 - done) / done))
                                   : QStringLiteral("–");
    m_timeLabel->setText(tr("elapsed %1, ETA %2").arg(clock(elapsed), eta));
}

void MainWindow::onEpoch(const EpochMetrics &metrics)
{
    m_chart->addEpoch(metrics);
    appendLog(QString::fromStdString(epochLine(metrics, m_runEpochs)));
}

void MainWindow::onFinished(const RunResult &result)
{
    m_lastResult = result;
    m_chart->flush();
    for (const std::string &line : finishedLines(result, deviceList({m_runDevices.toStdString()})))
        appendLog(QString::fromStdString(line));
    const QString status = QString::fromLatin1(toString(result.status));
    m_epochLabel->setText(tr("Run %1 after %2 of %3 epochs").arg(status).arg(result.epochs.size()).arg(m_runEpochs));
    m_timeLabel->setText(tr("took %1").arg(clock(m_runClock.elapsed())));
    if (result.status == RunStatus::Failed && m_queuedRun)
        statusBar()->showMessage(tr("A queued run failed: %1").arg(QString::fromStdString(result.error)), 10000);
    else if (result.status == RunStatus::Failed && !m_closeAfterStop)
        showError(tr("Run Failed"), QString::fromStdString(result.error));
}

void MainWindow::onIdle()
{
    m_queuedRun = false;
    m_activeRunDir.clear();
    m_historyModel->setActiveRunDir(QString());
    refreshHistory();
    m_statusDevices->setText(tr("Last run on %1").arg(m_runDevices));
    updateActions();
    Q_EMIT runEnded(m_lastResult);
    if (m_closeAfterStop)
        close();
}

void MainWindow::appendLog(const QString &line)
{
    m_log->appendPlainText(line);
}

void MainWindow::refreshHistory()
{
    // A reset clears the selection; the runs being compared stay selected and overlaid.
    QStringList selected;
    for (int row : selectedRows())
        selected << QString::fromStdString(m_historyModel->summary(row).dir);
    m_historyModel->refresh();
    m_storage->refresh(runsDir());
    QItemSelection selection;
    for (const QString &dir : std::as_const(selected)) {
        const int row = m_historyModel->rowOfDir(dir);
        if (row >= 0)
            selection.select(m_historyModel->index(row, 0), m_historyModel->index(row, RunHistoryModel::ColumnCount - 1));
    }
    if (!selection.isEmpty())
        m_history->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
}

QList<int> MainWindow::selectedRows() const
{
    QList<int> rows;
    if (!m_history || !m_history->selectionModel())
        return rows;
    for (const QModelIndex &index : m_history->selectionModel()->selectedRows())
        rows << index.row();
    std::sort(rows.begin(), rows.end());
    return rows;
}

void MainWindow::onHistorySelection()
{
    QVector<AccuracyChart::Overlay> overlays;
    for (int row : selectedRows()) {
        const RunSummary &s = m_historyModel->summary(row);
        AccuracyChart::Overlay overlay;
        overlay.name = QStringLiteral("%1 (%2)").arg(QString::fromStdString(s.name),
                                                     m_historyModel->data(m_historyModel->index(row, RunHistoryModel::Date)).toString());
        try {
            for (const EpochMetrics &m : readMetrics(s.dir))
                overlay.testAcc.append(QPointF(m.epoch, m.testAcc));
        } catch (const std::exception &e) {
            statusBar()->showMessage(QString::fromStdString(e.what()), 8000);
        }
        overlays.append(overlay);
    }
    m_chart->setOverlays(overlays);
    updateActions();
}

void MainWindow::useSelectedConfig()
{
    const QList<int> rows = selectedRows();
    if (rows.size() != 1)
        return;
    ExperimentConfig config;
    if (!m_historyModel->config(rows.first(), &config)) {
        showError(tr("Use Configuration"), tr("%1/config.json is missing or unreadable")
                                               .arg(QString::fromStdString(m_historyModel->summary(rows.first()).dir)));
        return;
    }
    if (!maybeSave())
        return;
    // Loaded as a new, unsaved experiment: the run's own copy stays as it was.
    m_form->setConfig(config);
    m_filePath.clear();
    m_cleanJson.clear();
    updateTitle();
    updateActions();
}

void MainWindow::openSelectedFolder()
{
    const QList<int> rows = selectedRows();
    if (rows.size() == 1)
        QDesktopServices::openUrl(QUrl::fromLocalFile(QString::fromStdString(m_historyModel->summary(rows.first()).dir)));
}

// The selected runs' folders; none while the run in progress is among them.
QStringList MainWindow::deletableSelectedDirs() const
{
    QStringList dirs;
    for (int row : selectedRows())
        dirs << QString::fromStdString(m_historyModel->summary(row).dir);
    return dirs.contains(m_activeRunDir) ? QStringList() : dirs;
}

void MainWindow::deleteSelectedRuns()
{
    const QStringList dirs = deletableSelectedDirs();
    if (dirs.isEmpty())
        return;
    const auto answer = QMessageBox::question(
        this, tr("Delete Runs"),
        tr("Delete %n run(s) and everything in their folders (config, metrics, checkpoint)?\n\n%1", nullptr,
           dirs.size()).arg(dirs.join(QLatin1Char('\n'))),
        QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
    if (answer != QMessageBox::Yes)
        return;
    QStringList errors;
    for (const QString &dir : std::as_const(dirs)) {
        try {
            trainlab::deleteRun(dir.toStdString());
        } catch (const std::exception &e) {
            errors << QString::fromStdString(e.what());
        }
    }
    refreshHistory();
    if (!errors.isEmpty())
        showError(tr("Delete Runs"), errors.join(QLatin1Char('\n')));
}

void MainWindow::deleteSelectedCheckpoints()
{
    const QStringList dirs = deletableSelectedDirs();
    if (dirs.isEmpty())
        return;
    const auto answer = QMessageBox::question(
        this, tr("Delete Checkpoints"),
        tr("Delete the checkpoints of %n run(s)? Their configuration, metrics and summary stay, but they can no "
           "longer be resumed or continued.\n\n%1", nullptr, dirs.size()).arg(dirs.join(QLatin1Char('\n'))),
        QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
    if (answer != QMessageBox::Yes)
        return;
    std::uint64_t freed = 0;
    QStringList errors;
    for (const QString &dir : std::as_const(dirs)) {
        try {
            freed += trainlab::deleteCheckpoints(dir.toStdString());
        } catch (const std::exception &e) {
            errors << QString::fromStdString(e.what());
        }
    }
    refreshHistory();
    statusBar()->showMessage(tr("%1 freed").arg(QString::fromStdString(trainlab::formatBytes(freed))), 5000);
    if (!errors.isEmpty())
        showError(tr("Delete Checkpoints"), errors.join(QLatin1Char('\n')));
}

bool MainWindow::exportChart(const QString &path)
{
    QString error;
    const bool svg = QFileInfo(path).suffix().compare(QLatin1String("svg"), Qt::CaseInsensitive) == 0;
    if (!(svg ? m_chart->saveSvg(path, &error) : m_chart->savePng(path, &error))) {
        showError(tr("Export Chart"), error);
        return false;
    }
    statusBar()->showMessage(tr("Chart saved to %1").arg(QDir::toNativeSeparators(path)), 5000);
    return true;
}

QString MainWindow::askSavePath(const QString &title, const QString &suggested, const QString &filter)
{
    QString chosenFilter;
    QString path = QFileDialog::getSaveFileName(this, title, suggested, filter, &chosenFilter);
    // A name typed without an extension gets the chosen filter's ("PNG image (*.png)"), or the suggested one.
    if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) {
        const QRegularExpression pattern(QStringLiteral("\\*\\.(\\w+)"));
        const QRegularExpressionMatch match = pattern.match(chosenFilter);
        path += QLatin1Char('.') + (match.hasMatch() ? match.captured(1) : QFileInfo(suggested).suffix());
    }
    return path;
}

void MainWindow::exportChartDialog()
{
    const QString path = askSavePath(tr("Export Chart"), QDir::homePath() + QStringLiteral("/accuracy.png"),
                                     tr("PNG image (*.png);;SVG drawing (*.svg)"));
    if (!path.isEmpty())
        exportChart(path);
}

bool MainWindow::exportMetricsCsv(const QString &path)
{
    const QList<int> rows = selectedRows();
    QByteArray csv = QByteArray("run,name,") + RunRecord::metricsHeader() + '\n';
    for (int row : rows) {
        const RunSummary &s = m_historyModel->summary(row);
        const QByteArray run = QFileInfo(QString::fromStdString(s.dir)).fileName().toUtf8();
        QByteArray name = QByteArray::fromStdString(s.name);
        name.replace('"', "\"\"");
        try {
            for (const EpochMetrics &m : readMetrics(s.dir)) {
                csv += run + ",\"" + name + "\"," + QByteArray::number(m.epoch) + ','
                       + QByteArray::number(m.trainLoss, 'g', 8) + ',' + QByteArray::number(m.trainAcc, 'g', 8) + ','
                       + QByteArray::number(m.testAcc, 'g', 8) + ',' + QByteArray::number(m.seconds, 'g', 8) + ','
                       + QByteArray::number(m.imagesPerSecond, 'g', 8) + '\n';
            }
        } catch (const std::exception &e) {
            showError(tr("Export Metrics"), QString::fromStdString(e.what()));
            return false;
        }
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(csv) != csv.size() || !file.commit()) {
        showError(tr("Export Metrics"), tr("%1: cannot write: %2").arg(path, file.errorString()));
        return false;
    }
    statusBar()->showMessage(tr("Metrics of %n run(s) saved to %1", nullptr, rows.size()).arg(path), 5000);
    return true;
}

void MainWindow::exportCsvDialog()
{
    if (selectedRows().isEmpty())
        return;
    const QString path = askSavePath(tr("Export Metrics"), QDir::homePath() + QStringLiteral("/metrics.csv"),
                                     tr("CSV files (*.csv)"));
    if (!path.isEmpty())
        exportMetricsCsv(path);
}

void MainWindow::about()
{
    QMessageBox::about(this, tr("About TrainLab"),
                       tr("<h3>TrainLab %1</h3><p>Train the d2l ResNet-18 on Fashion-MNIST on one or many devices, "
                          "and keep every run.</p><p>%2<br>Qt %3</p>")
                           .arg(QStringLiteral(TRAINLAB_VERSION), QString::fromStdString(buildDescription()),
                                QString::fromLatin1(qVersion())));
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_runner->isRunning()) {
        if (!m_closeAfterStop) {
            const auto answer = QMessageBox::question(
                this, tr("Run in Progress"), tr("A run is in progress. Stop it (it is kept as stopped) and quit?"),
                QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
            if (answer != QMessageBox::Yes) {
                event->ignore();
                return;
            }
            // The run may have ended while the question was open; then there is nothing to wait for.
            if (m_runner->isRunning()) {
                m_closeAfterStop = true;
                stopRun();
            }
        }
        if (m_runner->isRunning()) {
            // The window closes itself once the run has stopped; nothing here waits on training.
            event->ignore();
            return;
        }
    }
    if (!maybeSave()) {
        m_closeAfterStop = false;
        event->ignore();
        return;
    }
    writeSettings();
    event->accept();
}

} // namespace trainlab
