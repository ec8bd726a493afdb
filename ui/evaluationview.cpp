#include "ui/evaluationview.h"

#include "ui/classifydialog.h"
#include "ui/workerthread.h"

#include "core/eval/export.h"
#include "core/util/atomicfile.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QStandardPaths>
#include <QTableWidget>
#include <QThread>
#include <QValueAxis>
#include <QVBoxLayout>

namespace trainlab {

namespace {

QString pct(double share)
{
    return QString::number(100.0 * share, 'f', 1) + QLatin1Char('%');
}

} // namespace

EvaluationView::EvaluationView(QWidget *parent)
    : QWidget(parent)
    , m_summary(new QLabel)
    , m_evaluateButton(new QPushButton(tr("&Evaluate")))
    , m_classifyButton(new QPushButton(tr("&Classify Images…")))
    , m_exportButton(new QPushButton(tr("Export for &PyTorch…")))
    , m_matrix(new QTableWidget)
    , m_classChart(new QChartView(new QChart))
{
    setObjectName(QStringLiteral("evaluationView"));
    m_summary->setObjectName(QStringLiteral("evaluationSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_evaluateButton->setObjectName(QStringLiteral("evaluateButton"));
    m_evaluateButton->setToolTip(tr("Run the selected run's model (best.pt, else checkpoint.pt) over its test set"));
    m_classifyButton->setObjectName(QStringLiteral("classifyButton"));
    m_classifyButton->setToolTip(tr("Your own pictures through the selected run's model: its three likeliest classes"));
    m_exportButton->setObjectName(QStringLiteral("exportButton"));
    m_exportButton->setToolTip(tr("The selected run's weights as a state_dict for the chapter's PyTorch resnet18(10, 1)"));
    m_matrix->setObjectName(QStringLiteral("confusionMatrix"));
    m_matrix->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_matrix->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_matrix->verticalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_matrix->verticalHeader()->setMinimumSectionSize(14);
    m_matrix->setToolTip(tr("Rows: true class; columns: predicted class; colour: share of the true class"));
    m_classChart->setObjectName(QStringLiteral("classChart"));
    m_classChart->setRenderHint(QPainter::Antialiasing);
    m_classChart->chart()->setMargins(QMargins(2, 2, 2, 2));
    m_classChart->chart()->legend()->setAlignment(Qt::AlignBottom);

    auto *top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(m_evaluateButton);
    top->addWidget(m_classifyButton);
    top->addWidget(m_exportButton);
    auto *body = new QHBoxLayout;
    body->addWidget(m_matrix, 3);
    body->addWidget(m_classChart, 2);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addLayout(top);
    layout->addLayout(body, 1);

    connect(m_evaluateButton, &QPushButton::clicked, this, [this] { evaluate(); });
    connect(m_classifyButton, &QPushButton::clicked, this, [this] {
        if (ClassifyDialog *dialog = openClassifyDialog())
            dialog->show();
    });
    connect(m_exportButton, &QPushButton::clicked, this, [this] {
        const QString suggested = QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
                                      .filePath(QFileInfo(m_runDir).fileName() + QStringLiteral(".pth"));
        const QString path = QFileDialog::getSaveFileName(this, tr("Export for PyTorch"), suggested,
                                                          tr("PyTorch state_dict (*.pth *.pt)"));
        if (!path.isEmpty())
            exportModel(path);
    });
    setRunDir(QString());
}

EvaluationView::~EvaluationView()
{
    if (m_worker) {
        m_worker->wait();
        delete m_worker;
    }
}

void EvaluationView::setRunDir(const QString &dir)
{
    m_runDir = dir;
    m_evaluation.reset();
    updateButtons();
    if (dir.isEmpty()) {
        showMessage(tr("Select a run in the history to see how its model does on each class."));
        return;
    }
    const QString file = QDir(dir).filePath(QString::fromLatin1(kEvaluationFile));
    if (!QFileInfo::exists(file)) {
        showMessage(tr("%1 has no evaluation yet: Evaluate runs its model over the test set.").arg(QFileInfo(dir).fileName()));
        return;
    }
    try {
        showEvaluation(evaluationFromJson(readFile(file.toStdString()), file.toStdString()));
    } catch (const std::exception &e) {
        showMessage(tr("%1\nEvaluate writes a new one.").arg(QString::fromStdString(e.what())));
    }
}

bool EvaluationView::evaluate()
{
    if (m_runDir.isEmpty() || m_worker)
        return false;
    const QString dir = m_runDir;
    showMessage(tr("Evaluating %1…").arg(QFileInfo(dir).fileName()));
    using Outcome = std::pair<std::optional<Evaluation>, QString>;
    m_worker = startWorker(this, QStringLiteral("evaluation"), [dir]() -> Outcome {
        try {
            Evaluation result = evaluateRun(dir.toStdString());
            writeFileAtomic(QDir(dir).filePath(QString::fromLatin1(kEvaluationFile)).toStdString(), evaluationJson(result));
            return {result, QString()};
        } catch (const std::exception &e) {
            return {std::nullopt, QString::fromStdString(e.what())};
        }
    }, [this, dir](const Outcome &o) { finished(dir, o.first, o.second); });
    updateButtons();
    return true;
}

bool EvaluationView::exportModel(const QString &path)
{
    if (m_runDir.isEmpty() || m_worker || path.isEmpty())
        return false;
    const QString dir = m_runDir;
    m_worker = startWorker(this, QStringLiteral("export"), [dir, path]() -> QString {
        try {
            const ExportResult r = exportPyTorch(dir.toStdString(), "", path.toStdString());
            return tr("Exported %1 (epoch %2) of %3 to %4: torch.load(path, weights_only=True) in PyTorch")
                .arg(QString::fromStdString(r.checkpoint))
                .arg(r.epoch)
                .arg(QFileInfo(dir).fileName(), path);
        } catch (const std::exception &e) {
            return tr("Export failed: %1").arg(QString::fromStdString(e.what()));
        }
    }, [this](const QString &message) { exportFinished(message); });
    updateButtons();
    return true;
}

void EvaluationView::exportFinished(const QString &message)
{
    m_worker->wait();
    delete m_worker;
    m_worker = nullptr;
    updateButtons();
    Q_EMIT status(message);
}

ClassifyDialog *EvaluationView::openClassifyDialog()
{
    if (m_runDir.isEmpty())
        return nullptr;
    auto *dialog = new ClassifyDialog(m_runDir, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    return dialog;
}

void EvaluationView::updateButtons()
{
    const bool run = !m_runDir.isEmpty();
    m_evaluateButton->setEnabled(run && !m_worker);
    m_exportButton->setEnabled(run && !m_worker);
    m_classifyButton->setEnabled(run);
}

void EvaluationView::finished(const QString &dir, const std::optional<Evaluation> &result, const QString &error)
{
    m_worker->wait();
    delete m_worker;
    m_worker = nullptr;
    updateButtons();
    if (dir != m_runDir) {
        setRunDir(m_runDir);   // the user moved on: show what the current run has
    } else if (result) {
        m_evaluation = result;
        showEvaluation(*result);
    } else {
        showMessage(tr("Evaluation failed: %1").arg(error));
    }
    if (result)
        Q_EMIT evaluated(dir);
    else
        Q_EMIT evaluationFailed(dir, error);
}

void EvaluationView::showMessage(const QString &text)
{
    m_summary->setText(text);
    m_matrix->clear();
    m_matrix->setRowCount(0);
    m_matrix->setColumnCount(0);
    m_classChart->chart()->removeAllSeries();
    for (QAbstractAxis *axis : m_classChart->chart()->axes()) {
        m_classChart->chart()->removeAxis(axis);
        delete axis;
    }
}

void EvaluationView::showEvaluation(const Evaluation &e)
{
    showMessage(QString());
    m_evaluation = e;
    QStringList pairs;
    for (const ConfusedPair &p : e.mostConfused)
        pairs << tr("%1 → %2 (%3)").arg(QString::fromStdString(e.classNames[static_cast<std::size_t>(p.truth)]),
                                        QString::fromStdString(e.classNames[static_cast<std::size_t>(p.predicted)]))
                     .arg(p.count);
    m_summary->setText(tr("%1 (epoch %2), %3 test images: top-1 %4, top-3 %5. Most confused: %6")
                           .arg(QString::fromStdString(e.checkpoint))
                           .arg(e.epoch)
                           .arg(e.samples)
                           .arg(pct(e.top1), pct(e.top3), pairs.isEmpty() ? tr("none") : pairs.join(QStringLiteral(", "))));

    const int n = static_cast<int>(e.classNames.size());
    QStringList names;
    for (const std::string &name : e.classNames)
        names << QString::fromStdString(name);
    m_matrix->setRowCount(n);
    m_matrix->setColumnCount(n);
    // Columns by number, as narrow as the counts; rows by number and name, the header tooltips say the names.
    for (int c = 0; c < n; ++c) {
        auto *column = new QTableWidgetItem(QString::number(c));
        column->setToolTip(tr("predicted %1").arg(names[c]));
        m_matrix->setHorizontalHeaderItem(c, column);
        auto *row = new QTableWidgetItem(QStringLiteral("%1 %2").arg(c).arg(names[c]));
        row->setToolTip(tr("true %1").arg(names[c]));
        m_matrix->setVerticalHeaderItem(c, row);
    }
    for (int r = 0; r < n; ++r) {
        const auto &row = e.confusion[static_cast<std::size_t>(r)];
        std::int64_t support = 0;
        for (const auto count : row)
            support += count;
        for (int c = 0; c < n; ++c) {
            const auto count = row[static_cast<std::size_t>(c)];
            const double share = support ? static_cast<double>(count) / static_cast<double>(support) : 0.0;
            auto *item = new QTableWidgetItem(QString::number(count));
            item->setTextAlignment(Qt::AlignCenter);
            // Right answers in blue, wrong ones in red, deeper as the share of the true class grows.
            const QColor base = r == c ? QColor(0x1f77b4) : QColor(0xd62728);
            QColor fill = base;
            fill.setAlphaF(static_cast<float>(0.08 + 0.92 * share));
            item->setBackground(count ? fill : QColor(Qt::transparent));
            if (share > 0.55)
                item->setForeground(Qt::white);
            item->setToolTip(tr("true %1, predicted %2: %3 of %4 (%5)")
                                 .arg(names[r], names[c])
                                 .arg(count)
                                 .arg(support)
                                 .arg(pct(share)));
            m_matrix->setItem(r, c, item);
        }
    }

    auto *accuracy = new QBarSet(tr("accuracy"));
    auto *precision = new QBarSet(tr("precision"));
    accuracy->setColor(QColor(0x1f77b4));
    precision->setColor(QColor(0xff7f0e));
    for (const ClassStats &s : e.classes) {
        *accuracy << s.recall;
        *precision << s.precision;
    }
    auto *series = new QBarSeries;
    series->append(accuracy);
    series->append(precision);
    QChart *chart = m_classChart->chart();
    chart->addSeries(series);
    // Classes by number, as the matrix's columns: names do not fit under ten bars.
    QStringList numbers;
    for (int c = 0; c < n; ++c)
        numbers << QString::number(c);
    auto *x = new QBarCategoryAxis;
    x->append(numbers);
    auto *y = new QValueAxis;
    y->setRange(0.0, 1.0);
    y->setTickCount(6);
    y->setLabelFormat(QStringLiteral("%.1f"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
}

} // namespace trainlab
