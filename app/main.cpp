#include "core/config.h"
#include "core/train/hugepageallocator.h"
#include "core/util/paths.h"
#include "trainlab/version.h"
#include "ui/accuracychart.h"
#include "ui/classifydialog.h"
#include "ui/lrfinderdialog.h"
#include "ui/compareview.h"
#include "ui/evaluationview.h"
#include "ui/experimentform.h"
#include "ui/launchdialog.h"
#include "ui/mainwindow.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QItemSelectionModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>

#include <clocale>
#include <cstdio>
#include <filesystem>

namespace {

struct Options
{
    QString config;
    QString preset;
    QString runsDir;
    QString screenshot;
    QString compare;
    QString compareTab;
    QStringList classify;
    bool launchCommands = false;
    bool lrFind = false;
    bool smokeTest = false;
    int tab = 0;
};

// Parsed before any window exists, so --help and --version work without a display.
int parse(int argc, char **argv, Options &options)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationVersion(QStringLiteral(TRAINLAB_VERSION));
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "TrainLab: train the d2l ResNet-18 on Fashion-MNIST on one or many devices, and keep every run.\n"
        "Without a display, use trainlab-cli."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("config"), QStringLiteral("Experiment file (.json) to open."),
                                 QStringLiteral("[CONFIG.json]"));
    const QCommandLineOption preset(QStringLiteral("preset"), QStringLiteral("Load the preset NAME into the form."),
                                    QStringLiteral("NAME"));
    const QCommandLineOption runsDir(QStringLiteral("runs-dir"), QStringLiteral("Keep runs in DIR (for this session)."),
                                     QStringLiteral("DIR"));
    const QCommandLineOption smoke(QStringLiteral("smoke-test"),
                                   QStringLiteral("Open the window, load quick-demo, check it is ready and quit."));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("Start the loaded experiment; when it ends, select the earlier runs "
                                                       "in the history (their curves overlaid), save a picture of "
                                                       "the window to FILE and quit."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption compare(QStringLiteral("compare"),
                                     QStringLiteral("Open the Compare window on sweep ID of the runs folder, or on "
                                                    "run folders given as DIR,DIR,... (with --screenshot: save a "
                                                    "picture of it instead of training)."),
                                     QStringLiteral("ID"));
    const QCommandLineOption compareTab(QStringLiteral("compare-tab"),
                                        QStringLiteral("The Compare window's chart to show: epochs, lr, scaling, table or parallel."),
                                        QStringLiteral("TAB"), QStringLiteral("epochs"));
    const QCommandLineOption tab(QStringLiteral("tab"),
                                 QStringLiteral("The tab under the chart to show: history, log, time or evaluation."),
                                 QStringLiteral("TAB"), QStringLiteral("history"));
    const QCommandLineOption classify(QStringLiteral("classify"),
                                      QStringLiteral("Classify Images with the newest run's model, starting with IMAGE "
                                                     "(repeatable); with --screenshot, save the dialog once done."),
                                      QStringLiteral("IMAGE"));
    const QCommandLineOption launch(QStringLiteral("launch-commands"),
                                    QStringLiteral("Open Run > Launch on a Cluster for the loaded experiment (with "
                                                   "--screenshot: save a picture of it and quit)."));
    const QCommandLineOption lrFind(QStringLiteral("lr-find"),
                                    QStringLiteral("Open Run > Find Learning Rate for the loaded experiment and start it "
                                                   "(with --screenshot: save a picture once it ends and quit)."));
    parser.addOptions({preset, runsDir, smoke, screenshot, compare, compareTab, tab, classify, launch, lrFind});
    parser.process(app);
    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1) {
        std::fprintf(stderr, "trainlab: one experiment file at most, got %lld\n",
                     static_cast<long long>(positional.size()));
        return 2;
    }
    if (!positional.isEmpty() && parser.isSet(preset)) {
        std::fprintf(stderr, "trainlab: give an experiment file or --preset, not both\n");
        return 2;
    }
    options.config = positional.value(0);
    options.preset = parser.value(preset);
    options.runsDir = parser.value(runsDir);
    options.smokeTest = parser.isSet(smoke);
    options.screenshot = parser.value(screenshot);
    options.compare = parser.value(compare);
    options.compareTab = parser.value(compareTab);
    options.classify = parser.values(classify);
    options.launchCommands = parser.isSet(launch);
    options.lrFind = parser.isSet(lrFind);
    options.tab = QStringList({"history", "log", "time", "evaluation"}).indexOf(parser.value(tab));
    if (options.tab < 0) {
        std::fprintf(stderr, "trainlab: --tab must be history, log, time or evaluation, got \"%s\"\n", qPrintable(parser.value(tab)));
        return 2;
    }
    if (!QStringList({"epochs", "lr", "scaling", "table", "parallel"}).contains(options.compareTab)) {
        std::fprintf(stderr, "trainlab: --compare-tab must be epochs, lr, scaling, table or parallel, got \"%s\"\n",
                     qPrintable(options.compareTab));
        return 2;
    }
    return 0;
}

bool hasDisplay()
{
    return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
           || !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

// After delayMs (the layout and the charts settle), saves widget's picture to path and quits, 0 when written.
void saveScreenshotLater(QWidget *widget, const QString &path, int delayMs)
{
    QTimer::singleShot(delayMs, widget, [widget, path] {
        const bool ok = widget->grab().save(path);
        std::fprintf(ok ? stdout : stderr, "%s %s\n", ok ? "screenshot saved to" : "cannot write", qPrintable(path));
        QApplication::exit(ok ? 0 : 1);
    });
}

} // namespace

int main(int argc, char **argv)
{
    // Before any thread allocates: the allocator is process-wide.
    trainlab::useHugePagesForLargeTensors();
    Options options;
    if (const int status = parse(argc, argv, options))
        return status;
    if (options.smokeTest && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && !hasDisplay())
        qputenv("QT_QPA_PLATFORM", "offscreen");
    if (!hasDisplay()) {
        // Name the CLI as it can be typed: by path when it sits beside this binary outside the PATH.
        const std::filesystem::path beside = std::filesystem::path(trainlab::executablePath()).parent_path() / "trainlab-cli";
        std::error_code ec;
        std::string cli = "trainlab-cli";
        if (std::filesystem::exists(beside, ec) && beside.parent_path() != "/usr/bin") {
            cli = std::filesystem::relative(beside, std::filesystem::current_path(ec), ec).string();
            if (cli.empty() || cli.rfind("..", 0) == 0)
                cli = beside.string();
            else
                cli = "./" + cli;
        }
        std::fprintf(stderr, "trainlab: no display (DISPLAY and WAYLAND_DISPLAY are not set).\n"
                             "Train from the terminal instead:  %s run --preset quick-demo\n"
                             "(%s --help lists everything it does.)\n", cli.c_str(), cli.c_str());
        return 1;
    }
    QApplication app(argc, argv);
    // Qt set the user's LC_NUMERIC; C library number formatting (LibTorch's included) stays locale-free.
    std::setlocale(LC_NUMERIC, "C");
    QApplication::setOrganizationName(QStringLiteral("TrainLab"));
    QApplication::setApplicationName(QStringLiteral("TrainLab"));
    QApplication::setApplicationVersion(QStringLiteral(TRAINLAB_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("org.trainlab.TrainLab"));

    trainlab::MainWindow window;
    if (!options.runsDir.isEmpty())
        window.setRunsDir(options.runsDir, false);
    const QString preset = options.smokeTest && options.preset.isEmpty() && options.config.isEmpty()
                               ? QStringLiteral("quick-demo")
                               : options.preset;
    bool loaded = true;
    if (!options.config.isEmpty())
        loaded = window.openConfigFile(options.config);
    else if (!preset.isEmpty())
        loaded = window.loadPreset(preset);
    if (auto *tabs = window.findChild<QTabWidget *>(QStringLiteral("tabs")))
        tabs->setCurrentIndex(options.tab);
    // The evaluation's matrix needs rows to read: asked for, it gets half the height under the chart's.
    if (auto *right = window.findChild<QSplitter *>(QStringLiteral("rightSplitter")); right && options.tab == 3)
        right->setSizes({1, 1});
    window.show();

    if (options.smokeTest) {
        if (!loaded || !window.form()->isValid()) {
            std::fprintf(stderr, "trainlab: smoke test failed: %s\n",
                         qPrintable(loaded ? window.form()->problems().join(QStringLiteral("; ")) : window.lastError()));
            return 1;
        }
        QTimer::singleShot(options.screenshot.isEmpty() ? 200 : 800, &window, [&window, &options] {
            std::printf("trainlab %s: window opened with \"%s\", ready to start\n", TRAINLAB_VERSION,
                        window.form()->config().name.c_str());
            // --smoke-test --screenshot FILE: the window as it first opens, before any run.
            if (!options.screenshot.isEmpty() && !window.grab().save(options.screenshot))
                std::fprintf(stderr, "trainlab: cannot write %s\n", qPrintable(options.screenshot));
            window.close();
        });
        return QApplication::exec();
    }
    if (!options.compare.isEmpty()) {
        const QStringList runDirs = options.compare.split(QLatin1Char(','), Qt::SkipEmptyParts);
        if (!(runDirs.size() > 1 ? window.showCompareRuns(runDirs) : window.showCompare(options.compare))) {
            std::fprintf(stderr, "trainlab: --compare: %s\n", qPrintable(window.lastError()));
            return 1;
        }
        const QStringList tabs = {"epochs", "lr", "scaling", "table", "parallel"};
        window.compareView()->setCurrentTab(static_cast<trainlab::CompareView::Tab>(tabs.indexOf(options.compareTab)));
        if (!options.screenshot.isEmpty())
            saveScreenshotLater(window.compareView(), options.screenshot, 800);
        return QApplication::exec();
    }
    if (options.launchCommands) {
        trainlab::LaunchDialog *dialog = window.openLaunchDialog();
        dialog->show();
        if (!options.screenshot.isEmpty())
            saveScreenshotLater(dialog, options.screenshot, 500);
        return QApplication::exec();
    }
    if (options.lrFind) {
        trainlab::LrFinderDialog *dialog = window.openLrFinder();
        if (!dialog) {
            std::fprintf(stderr, "trainlab: --lr-find: %s\n", qPrintable(window.form()->problems().join(QStringLiteral("; "))));
            return 1;
        }
        dialog->show();
        if (!options.screenshot.isEmpty()) {
            QObject::connect(dialog, &trainlab::LrFinderDialog::finished, dialog, [dialog, &options] {
                saveScreenshotLater(dialog, options.screenshot, 300);
            });
        }
        dialog->start();
        return QApplication::exec();
    }
    if (!options.classify.isEmpty()) {
        // The newest run: the history lists it first, and the Evaluation tab follows the selection.
        const auto *model = window.history()->model();
        if (model->rowCount() == 0) {
            std::fprintf(stderr, "trainlab: --classify: no run in the runs folder to classify with\n");
            return 1;
        }
        window.history()->selectionModel()->select(model->index(0, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        auto *dialog = window.findChild<trainlab::EvaluationView *>(QStringLiteral("evaluationView"))->openClassifyDialog();
        dialog->show();
        if (!options.screenshot.isEmpty()) {
            QObject::connect(dialog, &trainlab::ClassifyDialog::classified, dialog, [dialog, &options] {
                saveScreenshotLater(dialog, options.screenshot, 300);
            });
        }
        dialog->classify(options.classify);
        return QApplication::exec();
    }
    if (!options.screenshot.isEmpty()) {
        if (!loaded || !window.form()->isValid()) {
            std::fprintf(stderr, "trainlab: cannot start for the screenshot: %s\n",
                         qPrintable(loaded ? window.form()->problems().join(QStringLiteral("; ")) : window.lastError()));
            return 1;
        }
        QObject::connect(&window, &trainlab::MainWindow::runEnded, &window,
                         [&window, &options](const trainlab::RunResult &result) {
            // The earlier runs, overlaid on the live curves of this one.
            const auto *model = window.history()->model();
            QItemSelection earlier;
            for (int row = 0; row < model->rowCount(); ++row) {
                if (model->index(row, 0).data(Qt::UserRole).toString() != QString::fromStdString(result.runDir))
                    earlier.select(model->index(row, 0), model->index(row, model->columnCount() - 1));
            }
            window.history()->selectionModel()->select(earlier, QItemSelectionModel::ClearAndSelect);
            // Let the overlays and the layout settle before the picture.
            saveScreenshotLater(&window, options.screenshot, 300);
        });
        QTimer::singleShot(500, &window, &trainlab::MainWindow::startRun);
    }
    return QApplication::exec();
}
