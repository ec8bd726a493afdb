#include "ui/mainwindow.h"

#include "core/runs/report.h"
#include "core/train/devices.h"
#include "core/util/paths.h"
#include "trainlab/version.h"
#include "ui/accuracychart.h"
#include "ui/compareview.h"
#include "ui/devicestrip.h"
#include "ui/evaluationview.h"
#include "ui/experimentfile.h"
#include "ui/experimentform.h"
#include "ui/historypanel.h"
#include "ui/launchdialog.h"
#include "ui/lrfinderdialog.h"
#include "ui/queuepanel.h"
#include "ui/resumeactions.h"
#include "ui/runpanel.h"
#include "ui/timeview.h"
#include "ui/trainingrunner.h"

#include <QAction>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

namespace trainlab {

MainWindow::MainWindow(QWidget *parent)
    : QMainWindow(parent)
    , m_form(new ExperimentForm)
    , m_file(new ExperimentFile(m_form, this))
    , m_chart(new AccuracyChart)
    , m_runner(new TrainingRunner(this))
    , m_runPanel(new RunPanel(this))
    , m_historyPanel(new HistoryPanel(m_chart))
    , m_resumeActions(new ResumeActions(this))
    , m_queuePanel(new QueuePanel)
    , m_timeView(new TimeView)
    , m_evaluationView(new EvaluationView)
{
    setObjectName(QStringLiteral("mainWindow"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/org.trainlab.TrainLab.svg")));
    buildLayout();
    buildMenus();
    readSettings();

    const auto refresh = [this] {
        updateTitle();
        updateActions();
    };
    connect(m_form, &ExperimentForm::changed, this, refresh);
    connect(m_file, &ExperimentFile::changed, this, refresh);
    connect(m_form, &ExperimentForm::datasetFolderChosen, this, [this](const QString &folder) {
        m_lastDatasetDir = folder;
        m_form->setDatasetStartFolder(folder);
    });
    connect(m_file, &ExperimentFile::error, this, &MainWindow::showError);
    connect(m_file, &ExperimentFile::status, this, [this](const QString &text) { statusBar()->showMessage(text, 5000); });
    connect(m_runPanel, &RunPanel::startClicked, this, &MainWindow::startRun);
    connect(m_runPanel, &RunPanel::stopClicked, this, &MainWindow::stopRun);
    connect(m_historyPanel, &HistoryPanel::selectionChanged, this, &MainWindow::updateActions);
    connect(m_historyPanel, &HistoryPanel::selectionChanged, this, [this] {
        const QVector<RunSummary> runs = m_historyPanel->selectedRuns();
        const QString dir = runs.isEmpty() ? QString() : QString::fromStdString(runs.front().dir);
        m_evaluationView->setRunDir(dir, runs.size() == 2 ? QString::fromStdString(runs.back().dir) : QString());
        m_timeView->followSelection(dir, m_runner->isRunning());
    });
    connect(m_evaluationView, &EvaluationView::evaluationFailed, this,
            [this](const QString &, const QString &error) { statusBar()->showMessage(tr("Evaluation failed: %1").arg(error), 8000); });
    connect(m_evaluationView, &EvaluationView::status, this, [this](const QString &text) { statusBar()->showMessage(text, 10000); });
    connect(m_historyPanel, &HistoryPanel::useConfigRequested, this, &MainWindow::useRunConfig);
    connect(m_historyPanel, &HistoryPanel::compareRequested, this, &MainWindow::showCompareRuns);
    connect(m_historyPanel, &HistoryPanel::error, this, &MainWindow::showError);
    connect(m_historyPanel, &HistoryPanel::status, this,
            [this](const QString &text, int timeoutMs) { statusBar()->showMessage(text, timeoutMs); });
    connect(m_runner, &TrainingRunner::runStarted, this, &MainWindow::onRunStarted);
    connect(m_runner, &TrainingRunner::batchDone, this, &MainWindow::onBatch);
    connect(m_runner, &TrainingRunner::epochDone, this, &MainWindow::onEpoch);
    connect(m_runner, &TrainingRunner::logLine, m_runPanel, &RunPanel::appendLog);
    connect(m_runner, &TrainingRunner::finished, this, &MainWindow::onFinished);
    connect(m_runner, &TrainingRunner::idle, this, &MainWindow::onIdle);
    connect(m_resumeActions, &ResumeActions::resumeRequested, this, [this](const QString &dir, int epochs) { resumeRun(dir, epochs); });
    // After the window's own handlers: the panel sees a run the window has already shown.
    connect(m_runner, &TrainingRunner::runStarted, m_queuePanel, &QueuePanel::onRunStarted);
    connect(m_runner, &TrainingRunner::finished, m_queuePanel, &QueuePanel::onRunFinished);
    connect(m_runner, &TrainingRunner::epochDone, m_queuePanel, &QueuePanel::onEpochDone);
    connect(m_runner, &TrainingRunner::idle, m_queuePanel, &QueuePanel::onRunnerIdle);
    m_queuePanel->setLauncher([this](const QueueEntry &entry, bool resume) { return launchQueued(entry, resume); });
    connect(m_queuePanel, &QueuePanel::stopRequested, this, &MainWindow::stopRun);
    connect(m_queuePanel, &QueuePanel::addCurrentRequested, this, &MainWindow::addCurrentToQueue);
    connect(m_queuePanel, &QueuePanel::addSweepRequested, this, &MainWindow::addSweepDialog);
    connect(m_queuePanel, &QueuePanel::compareRequested, this, &MainWindow::showCompare);

    m_file->setClean(ExperimentConfig{}, QString());
    m_historyPanel->setRunsDir(runsDir());
    m_queuePanel->setRunsDir(runsDir());
    // The queue takes room only once it holds something (Queue > Queue shows it any time).
    if (m_queuePanel->queue().size() > 0)
        m_queueDock->show();
    statusBar()->showMessage(tr("Ready"), 3000);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildLayout()
{
    auto *formScroll = new QScrollArea;
    formScroll->setWidget(m_form);
    formScroll->setWidgetResizable(true);
    formScroll->setFrameShape(QFrame::NoFrame);
    // The form is as wide as it needs: never a horizontal scroll bar, only a vertical one on short screens. Advanced's
    // previews need more than the collapsed form, so the panel widens while it is open.
    formScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    const auto fitForm = [this, formScroll] {
        formScroll->setMinimumWidth(m_form->minimumSizeHint().width() + formScroll->verticalScrollBar()->sizeHint().width());
    };
    fitForm();
    connect(m_form, &ExperimentForm::advancedToggled, formScroll, fitForm);
    auto *left = new QWidget;
    auto *leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(formScroll, 1);
    leftLayout->addWidget(m_runPanel->buttons());

    QWidget *top = AccuracyChart::withOptions(m_chart, m_runPanel->progress());

    auto *tabs = new QTabWidget;
    tabs->setObjectName(QStringLiteral("tabs"));
    tabs->addTab(m_historyPanel, tr("Run &history"));
    tabs->addTab(m_runPanel->log(), tr("&Log"));
    tabs->addTab(m_timeView, tr("&Time"));
    tabs->addTab(m_evaluationView, tr("E&valuation"));
    connect(m_evaluationView->evaluateAction(), &QAction::triggered, tabs, [this, tabs] { tabs->setCurrentWidget(m_evaluationView); });

    // The chart is what the window is for: it keeps most of the height.
    auto *right = new QSplitter(Qt::Vertical);
    right->setObjectName(QStringLiteral("rightSplitter"));
    right->addWidget(top);
    right->addWidget(tabs);
    right->setStretchFactor(0, 4);
    right->setStretchFactor(1, 1);
    right->setSizes({560, 200});

    auto *splitter = new QSplitter(Qt::Horizontal);
    splitter->setObjectName(QStringLiteral("mainSplitter"));
    splitter->addWidget(left);
    splitter->addWidget(right);
    splitter->setStretchFactor(1, 1);
    splitter->setCollapsible(0, false);
    splitter->setSizes({left->minimumSizeHint().width(), 900});
    setCentralWidget(splitter);

    m_queueDock = new QDockWidget(tr("Queue"), this);
    m_queueDock->setObjectName(QStringLiteral("queueDock"));
    m_queueDock->setWidget(m_queuePanel);
    addDockWidget(Qt::BottomDockWidgetArea, m_queueDock);
    m_queueDock->hide();

    statusBar()->addPermanentWidget(m_runPanel->devicesLabel());
    statusBar()->addPermanentWidget(new DeviceStrip);
    statusBar()->addPermanentWidget(new QLabel(QString::fromStdString(buildDescription())));
    setMinimumSize(960, 600);
}

void MainWindow::buildMenus()
{
    // Built first so the File menu can share its export action.
    auto *history = new QMenu(tr("&History"), this);
    m_historyPanel->addActions(history, {m_resumeActions->resumeAction(), m_resumeActions->continueAction(),
                                         m_evaluationView->evaluateAction()});
    history->insertAction(history->actions().value(0), m_evaluationView->evaluateAction());

    QMenu *file = menuBar()->addMenu(tr("&File"));
    m_file->addActions(file);
    file->addSeparator();
    file->addAction(tr("Export &Chart…"), this, &MainWindow::exportChartDialog);
    file->addAction(m_historyPanel->exportCsvAction());
    file->addSeparator();
    file->addAction(tr("Runs &Folder…"), this, &MainWindow::chooseRunsDir);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu *run = menuBar()->addMenu(tr("&Run"));
    QToolBar *toolbar = addToolBar(tr("Run"));
    toolbar->setObjectName(QStringLiteral("runToolbar"));
    m_runPanel->addActions(run, toolbar);
    run->addSeparator();
    run->addAction(m_resumeActions->resumeAction());
    run->addAction(m_resumeActions->continueAction());
    run->addSeparator();
    run->addAction(tr("&Launch on a Cluster…"), this, [this] { openLaunchDialog()->show(); });
    run->addAction(tr("Find &Learning Rate…"), this, [this] {
        if (LrFinderDialog *dialog = openLrFinder())
            dialog->show();
    });

    QMenu *queue = menuBar()->addMenu(tr("&Queue"));
    queue->addAction(tr("Add &Current Experiment"), this, &MainWindow::addCurrentToQueue);
    queue->addAction(tr("Add &Sweep…"), QKeySequence(tr("Ctrl+Shift+W")), this, &MainWindow::addSweepDialog);
    queue->addSeparator();
    queue->addAction(tr("S&tart Queue"), m_queuePanel, &QueuePanel::startQueue);
    queue->addAction(tr("Sto&p Queue"), m_queuePanel, &QueuePanel::stopQueue);
    queue->addSeparator();
    queue->addAction(tr("C&ompare Sweep…"), this, &MainWindow::chooseSweepToCompare);
    queue->addAction(m_queueDock->toggleViewAction());

    menuBar()->addMenu(history);

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About TrainLab"), this, [this] {
        QMessageBox::about(this, tr("About TrainLab"),
                           tr("<h3>TrainLab %1</h3><p>Train the d2l ResNet-18 on Fashion-MNIST on one or many devices, "
                              "and keep every run.</p><p>%2<br>Qt %3</p>")
                               .arg(QStringLiteral(TRAINLAB_VERSION), QString::fromStdString(buildDescription()),
                                    QString::fromLatin1(qVersion())));
    });
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
    if (!settings.contains(QStringLiteral("window/geometry"))) {
        // First launch: 1280x800, or most of a larger screen, never more than the screen.
        const QSize screen = this->screen() ? this->screen()->availableGeometry().size() : QSize(1280, 800);
        resize(std::min(screen.width(), std::max(1280, screen.width() * 4 / 5)),
               std::min(screen.height(), std::max(800, screen.height() * 17 / 20)));
    }
    m_runsDir = settings.value(QStringLiteral("runsDir")).toString();
    m_savedRunsDir = m_runsDir;
    m_lastDatasetDir = settings.value(QStringLiteral("lastDatasetDir"), QDir::homePath()).toString();
    m_form->setDatasetStartFolder(m_lastDatasetDir);
    m_form->setAdvancedOpen(settings.value(QStringLiteral("form/advancedOpen"), false).toBool());
    m_historyPanel->setColumnLayout(settings.value(QStringLiteral("history/columns")).toStringList());
    m_historyPanel->sortBy(settings.value(QStringLiteral("history/sortColumn"), -1).toInt(),
                           Qt::SortOrder(settings.value(QStringLiteral("history/sortOrder"), 0).toInt()));
    m_file->readSettings();
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
    settings.setValue(QStringLiteral("form/advancedOpen"), m_form->advancedOpen());
    settings.setValue(QStringLiteral("history/columns"), m_historyPanel->columnLayout());
    settings.setValue(QStringLiteral("history/sortColumn"), m_historyPanel->sortColumn());
    settings.setValue(QStringLiteral("history/sortOrder"), int(m_historyPanel->sortOrder()));
}

QString MainWindow::runsDir() const
{
    return m_runsDir.isEmpty() ? QString::fromStdString(defaultRunsDir()) : m_runsDir;
}

void MainWindow::setRunsDir(const QString &dir, bool remember)
{
    m_runsDir = dir;
    m_historyPanel->setRunsDir(runsDir());
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
    const bool canStart = !running && !isRangeTestRunning() && m_form->isValid();
    const bool canStop = running && !m_runner->isStopping();
    m_runPanel->setEnabled(canStart, canStop);
    m_historyPanel->updateActions();
    m_resumeActions->update(m_historyPanel->selectedRuns(), running || isRangeTestRunning());
}

LrFinderDialog *MainWindow::openLrFinder()
{
    if (m_lrFinder && m_lrFinder->isClosing()) {
        statusBar()->showMessage(tr("Find Learning Rate: the closed test is ending its step; try again in a moment"), 8000);
        return nullptr;
    }
    // One test at a time: the one that trains comes back; an idle one gives way to the form as it is now.
    if (m_lrFinder && m_lrFinder->isRunning())
        return m_lrFinder;
    if (m_lrFinder)
        m_lrFinder->close();
    const QString busy = devicesBusy();
    if (!busy.isEmpty() || !m_form->isValid()) {
        statusBar()->showMessage(!busy.isEmpty() ? tr("Find Learning Rate: %1").arg(busy)
                                                 : tr("Find Learning Rate: the form has problems (listed under it)"), 8000);
        return nullptr;
    }
    auto *dialog = new LrFinderDialog(m_form->config(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setBusyCheck([this] { return devicesBusy(); });
    connect(dialog, &LrFinderDialog::learningRateChosen, m_form, &ExperimentForm::setLearningRate);
    connect(dialog, &LrFinderDialog::started, this, &MainWindow::updateActions);
    // The devices are free again: a queue that waited for them goes on.
    connect(dialog, &LrFinderDialog::finished, this, [this] {
        updateActions();
        m_queuePanel->onRunnerIdle();
    });
    m_lrFinder = dialog;
    return dialog;
}

QString MainWindow::devicesBusy() const
{
    if (isRunning())
        return tr("a run trains on these devices: stop it first");
    if (m_queuePanel->isActive())
        return tr("the queue starts its next run on these devices: stop the queue first");
    return {};
}

bool MainWindow::isRangeTestRunning() const
{
    return m_lrFinder && m_lrFinder->isRunning();
}

LaunchDialog *MainWindow::openLaunchDialog()
{
    auto *dialog = new LaunchDialog(m_form->config(), m_file->currentFile(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    return dialog;
}

bool MainWindow::isRunning() const
{
    return m_runner->isRunning();
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

void MainWindow::useRunConfig(const ExperimentConfig &config)
{
    // Loaded as a new, unsaved experiment: the run's own copy stays as it was.
    if (m_file->maybeSave())
        m_file->loadUnsaved(config);
}

bool MainWindow::refusedForRangeTest()
{
    if (!isRangeTestRunning())
        return false;
    statusBar()->showMessage(tr("A learning-rate range test trains on these devices: stop it first"), 8000);
    return true;
}

void MainWindow::startRun()
{
    if (m_runner->isRunning() || !m_form->isValid() || refusedForRangeTest())
        return;
    const ExperimentConfig config = m_form->config();
    prepareRunView(QString::fromStdString(config.name), config.epochs, config.devices);
    m_runner->start(config, runsDir());
    updateActions();
}

void MainWindow::resumeRun(const QString &runDir, int epochs)
{
    if (m_runner->isRunning() || refusedForRangeTest())
        return;
    ExperimentConfig config;
    try {
        config = ExperimentConfig::load(runDir.toStdString() + "/config.json");
    } catch (const std::exception &e) {
        showError(tr("Resume Run"), QString::fromStdString(e.what()));
        return;
    }
    prepareRunView(QString::fromStdString(config.name), epochs > 0 ? epochs : config.epochs, config.devices);
    m_runner->resume(runDir, epochs);
    updateActions();
}

bool MainWindow::launchQueued(const QueueEntry &entry, bool resume)
{
    // The range test's end brings the queue back (openLrFinder).
    if (m_runner->isRunning() || isRangeTestRunning())
        return false;
    m_queuedRun = true;
    const QString name = QString::fromStdString(entry.tag.empty() ? entry.config.name : entry.config.name + "  " + entry.tag.label());
    prepareRunView(name, entry.config.epochs, entry.config.devices);
    if (resume)
        m_runner->resume(QString::fromStdString(entry.runDir));
    else
        m_runner->start(entry.config, runsDir(), entry.tag, entry.notes);
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
    m_queueDock->show();
}

void MainWindow::addSweepDialog()
{
    QString error;
    if (m_queuePanel->addSweepDialog(m_form->config(), &error))
        m_queueDock->show();
    else if (!error.isEmpty())
        showError(tr("Add Sweep"), error);
}

bool MainWindow::showCompare(const QString &sweepId)
{
    QString error;
    const bool shown = CompareView::showSweep(this, m_compare, runsDir(), sweepId, &error);
    if (!shown)
        showError(tr("Compare Sweep"), error);
    else
        connect(m_compare, &CompareView::useConfigRequested, this, &MainWindow::useRunConfig, Qt::UniqueConnection);
    return shown;
}

bool MainWindow::showCompareRuns(const QStringList &runDirs)
{
    QString error;
    const bool shown = CompareView::showRuns(this, m_compare, runDirs, &error);
    if (!shown)
        showError(tr("Compare Runs"), error);
    else
        connect(m_compare, &CompareView::useConfigRequested, this, &MainWindow::useRunConfig, Qt::UniqueConnection);
    return shown;
}

void MainWindow::chooseSweepToCompare()
{
    QString error;
    const QString id = CompareView::chooseSweep(this, runsDir(), &error);
    if (!id.isEmpty())
        showCompare(id);
    else if (!error.isEmpty())
        showError(tr("Compare Sweep"), error);
}

void MainWindow::prepareRunView(const QString &name, int epochs, const std::vector<std::string> &devices)
{
    m_chart->beginRun(name, epochs);
    m_timeView->clear();
    m_runPanel->prepare(epochs, devices);
    m_lastResult = RunResult{};
}

void MainWindow::stopRun()
{
    if (!m_runner->isRunning())
        return;
    m_runner->stop();
    m_runPanel->showStopping();
    updateActions();
}

void MainWindow::onRunStarted(const RunInfo &info)
{
    m_activeRunDir = QString::fromStdString(info.runDir);
    m_runPanel->onRunStarted(info);
    // A resumed run is one curve: the epochs already trained first, then the new ones as they come.
    for (const EpochMetrics &m : info.doneMetrics)
        m_chart->addEpoch(m);
    m_historyPanel->setActiveRunDir(m_activeRunDir);
    m_historyPanel->refresh();
}

void MainWindow::onBatch(const BatchProgress &p)
{
    if (m_runner->isStopping())
        return;
    m_runPanel->onBatch(p);
    m_chart->addBatch(p);
}

void MainWindow::onEpoch(const EpochMetrics &metrics)
{
    m_chart->addEpoch(metrics);
    m_timeView->addEpoch(metrics);
    m_runPanel->onEpoch(metrics);
}

void MainWindow::onFinished(const RunResult &result)
{
    m_lastResult = result;
    m_chart->flush();
    m_runPanel->onFinished(result);
    if (result.status == RunStatus::Failed && m_queuedRun)
        statusBar()->showMessage(tr("A queued run failed: %1").arg(QString::fromStdString(result.error)), 10000);
    else if (result.status == RunStatus::Failed && !m_closeAfterStop)
        showError(tr("Run Failed"), QString::fromStdString(result.error));
}

void MainWindow::onIdle()
{
    m_queuedRun = false;
    m_activeRunDir.clear();
    m_historyPanel->setActiveRunDir(QString());
    m_historyPanel->refresh();
    m_evaluationView->reload();   // the run that ended wrote its evaluation.json
    m_runPanel->onIdle();
    updateActions();
    Q_EMIT runEnded(m_lastResult);
    if (m_closeAfterStop)
        close();
}

bool MainWindow::exportChart(const QString &path)
{
    QString error;
    if (!m_chart->save(path, &error)) {
        showError(tr("Export Chart"), error);
        return false;
    }
    statusBar()->showMessage(tr("Chart saved to %1").arg(QDir::toNativeSeparators(path)), 5000);
    return true;
}

void MainWindow::exportChartDialog()
{
    const QString path = ExperimentFile::askSavePath(this, tr("Export Chart"), QDir::homePath() + QStringLiteral("/accuracy.png"),
                                                     tr("PNG image (*.png);;SVG drawing (*.svg)"));
    if (!path.isEmpty())
        exportChart(path);
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
    if (!m_file->maybeSave()) {
        m_closeAfterStop = false;
        event->ignore();
        return;
    }
    writeSettings();
    event->accept();
}

} // namespace trainlab
