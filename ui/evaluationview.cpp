#include "ui/evaluationview.h"

#include "ui/classifydialog.h"
#include "ui/workerthread.h"

#include "ui/chartexport.h"

#include "core/eval/export.h"
#include "core/runs/runrecord.h"
#include "core/util/atomicfile.h"

#include <QAction>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QPainter>
#include <QPushButton>
#include <QStandardPaths>
#include <QTableWidget>
#include <QThread>
#include <QToolButton>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace trainlab {

namespace {

QString pct(double share)
{
    return QString::number(100.0 * share, 'f', 1) + QLatin1Char('%');
}

std::int64_t rowTotal(const std::vector<std::int64_t> &row)
{
    std::int64_t total = 0;
    for (const auto count : row)
        total += count;
    return total;
}

// Right answers in blue, wrong ones in red, deeper as the share of the true class grows.
QColor cellColor(bool diagonal, double share)
{
    QColor fill = diagonal ? QColor(0x1f77b4) : QColor(0xd62728);
    fill.setAlphaF(static_cast<float>(0.08 + 0.92 * share));
    return fill;
}

QString cellText(std::int64_t count, double share, bool normalized)
{
    return normalized ? QString::number(100.0 * share, 'f', share < 0.1 && share > 0 ? 1 : 0) : QString::number(count);
}

// The run folder's evaluation.json; nullopt where it has none, an exception where it cannot be read.
std::optional<Evaluation> keptEvaluation(const QString &dir)
{
    const QString file = QDir(dir).filePath(QString::fromLatin1(kEvaluationFile));
    if (!QFileInfo::exists(file))
        return std::nullopt;
    return evaluationFromJson(readFile(file.toStdString()), file.toStdString());
}

// "Evaluated epoch 3 of checkpoint.pt, which now holds epoch 5": an evaluation.json older than a resume.
QString staleNote(const QString &dir, const Evaluation &e)
{
    try {
        const RunSummary s = readRunSummary(dir.toStdString());
        const int holds = e.checkpoint == "best.pt" ? s.bestCheckpointEpoch : e.checkpoint == "checkpoint.pt" ? s.checkpointEpoch : e.epoch;
        if (holds != e.epoch && holds > 0)
            return EvaluationView::tr(" %1 now holds epoch %2: Evaluate again.").arg(QString::fromStdString(e.checkpoint)).arg(holds);
    } catch (const std::exception &) {
    }
    return QString();
}

} // namespace

EvaluationView::EvaluationView(QWidget *parent)
    : QWidget(parent)
    , m_summary(new QLabel)
    , m_evaluateButton(new QPushButton(tr("&Evaluate")))
    , m_classifyButton(new QPushButton(tr("&Classify Images…")))
    , m_exportButton(new QPushButton(tr("Export &Model…")))
    , m_matrix(new QTableWidget)
    , m_classChart(new QChartView(new QChart))
    , m_rowNormalized(new QCheckBox(tr("&Row %")))
    , m_exportEvaluation(new QToolButton)
    , m_galleryLabel(new QLabel)
    , m_showAll(new QPushButton(tr("Show &All")))
    , m_gallery(new QListWidget)
    , m_evaluateAction(new QAction(tr("E&valuate Model"), this))
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
    m_exportButton->setToolTip(tr("The selected run's model as a state_dict for the chapter's PyTorch resnet18(10, 1) "
                                  "(.pth), or as an ONNX model for ONNX Runtime and other engines (.onnx)"));
    m_matrix->setObjectName(QStringLiteral("confusionMatrix"));
    m_matrix->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_matrix->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_matrix->verticalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_matrix->verticalHeader()->setMinimumSectionSize(14);
    m_matrix->horizontalHeader()->setMinimumSectionSize(14);
    QFont smaller = m_matrix->font();
    smaller.setPointSizeF(smaller.pointSizeF() * 0.85);
    m_matrix->setFont(smaller);
    m_matrix->setToolTip(tr("Rows: true class; columns: predicted class; colour: share of the true class"));
    m_classChart->setObjectName(QStringLiteral("classChart"));
    m_classChart->setRenderHint(QPainter::Antialiasing);
    m_classChart->chart()->setMargins(QMargins(2, 2, 2, 2));
    m_classChart->chart()->legend()->setAlignment(Qt::AlignBottom);

    m_matrix->setSelectionMode(QAbstractItemView::SingleSelection);
    m_rowNormalized->setObjectName(QStringLiteral("rowNormalized"));
    m_rowNormalized->setToolTip(tr("Each cell as a share of its true class, in percent"));
    m_exportEvaluation->setObjectName(QStringLiteral("exportEvaluation"));
    m_exportEvaluation->setText(tr("E&xport"));
    m_exportEvaluation->setPopupMode(QToolButton::InstantPopup);
    auto *exportMenu = new QMenu(m_exportEvaluation);
    exportMenu->addAction(tr("Matrix as PNG or SVG…"), this, [this] { exportDialog(false); });
    exportMenu->addAction(tr("Per-Class Table as CSV…"), this, [this] { exportDialog(true); });
    m_exportEvaluation->setMenu(exportMenu);
    m_galleryLabel->setObjectName(QStringLiteral("galleryLabel"));
    m_galleryLabel->setWordWrap(true);
    m_showAll->setObjectName(QStringLiteral("showAllMistakes"));
    m_gallery->setObjectName(QStringLiteral("mistakesGallery"));
    m_gallery->setViewMode(QListView::IconMode);
    m_gallery->setIconSize(QSize(56, 56));
    m_gallery->setGridSize(QSize(104, 96));
    m_gallery->setResizeMode(QListView::Adjust);
    m_gallery->setMovement(QListView::Static);
    m_gallery->setWordWrap(true);
    m_gallery->setSelectionMode(QAbstractItemView::NoSelection);
    m_evaluateAction->setObjectName(QStringLiteral("evaluateAction"));
    m_evaluateAction->setToolTip(m_evaluateButton->toolTip());

    auto *top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(m_evaluateButton);
    top->addWidget(m_classifyButton);
    top->addWidget(m_exportButton);
    auto *matrixTools = new QHBoxLayout;
    matrixTools->addWidget(m_rowNormalized);
    matrixTools->addStretch(1);
    matrixTools->addWidget(m_exportEvaluation);
    auto *matrixColumn = new QVBoxLayout;
    matrixColumn->addWidget(m_matrix, 1);
    matrixColumn->addLayout(matrixTools);
    auto *galleryTop = new QHBoxLayout;
    galleryTop->addWidget(m_galleryLabel, 1);
    galleryTop->addWidget(m_showAll);
    auto *rightColumn = new QVBoxLayout;
    rightColumn->addWidget(m_classChart, 1);
    rightColumn->addLayout(galleryTop);
    rightColumn->addWidget(m_gallery, 1);
    auto *body = new QHBoxLayout;
    body->addLayout(matrixColumn, 3);
    body->addLayout(rightColumn, 2);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addLayout(top);
    layout->addLayout(body, 1);

    connect(m_matrix, &QTableWidget::cellClicked, this, [this](int row, int column) {
        if (row == column)
            filterGallery(-1, -1);
        else
            filterGallery(row, column);
    });
    connect(m_showAll, &QPushButton::clicked, this, [this] { filterGallery(-1, -1); });
    connect(m_rowNormalized, &QCheckBox::toggled, this, &EvaluationView::setRowNormalized);
    connect(m_evaluateAction, &QAction::triggered, this, [this] { evaluate(); });

    connect(m_evaluateButton, &QPushButton::clicked, this, [this] { evaluate(); });
    connect(m_classifyButton, &QPushButton::clicked, this, [this] {
        if (ClassifyDialog *dialog = openClassifyDialog())
            dialog->show();
    });
    connect(m_exportButton, &QPushButton::clicked, this, [this] {
        const QString suggested = QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
                                      .filePath(QFileInfo(m_runDir).fileName() + QStringLiteral(".pth"));
        const QString pytorch = tr("PyTorch state_dict (*.pth *.pt)"), onnx = tr("ONNX model (*.onnx)");
        QString filter = pytorch;
        QString path = QFileDialog::getSaveFileName(this, tr("Export Model"), suggested, pytorch + QStringLiteral(";;") + onnx,
                                                    &filter);
        // The filter chosen gives a name typed without a suffix its own; the suffix decides the format.
        if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty())
            path += filter == onnx ? QStringLiteral(".onnx") : QStringLiteral(".pth");
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

void EvaluationView::setRunDir(const QString &dir, const QString &against)
{
    m_runDir = dir;
    m_againstDir = against;
    m_evaluation.reset();
    updateButtons();
    if (dir.isEmpty()) {
        showMessage(tr("Select a run in the history to see how its model does on each class."));
        return;
    }
    try {
        const std::optional<Evaluation> kept = keptEvaluation(dir);
        if (!kept) {
            showMessage(tr("%1 has no evaluation yet: Evaluate runs its model over the test set.").arg(QFileInfo(dir).fileName()));
            return;
        }
        showEvaluation(*kept);
    } catch (const std::exception &e) {
        showMessage(tr("%1\nEvaluate writes a new one.").arg(QString::fromStdString(e.what())));
    }
}

void EvaluationView::reload()
{
    if (!m_worker)
        setRunDir(m_runDir, m_againstDir);
}

QString EvaluationView::againstText()
{
    m_diff.reset();
    if (m_againstDir.isEmpty() || !m_evaluation)
        return QString();
    const QString name = QFileInfo(m_againstDir).fileName();
    try {
        const std::optional<Evaluation> other = keptEvaluation(m_againstDir);
        if (!other)
            return tr("\nAgainst %1: it has no evaluation yet (select it alone and Evaluate).").arg(name);
        m_diff = diffEvaluations(*m_evaluation, *other);
    } catch (const std::exception &e) {
        return tr("\nAgainst %1: not comparable: %2.").arg(name, QString::fromStdString(e.what()));
    }
    const EvaluationDiff &d = *m_diff;
    QStringList classes;
    std::vector<ClassChange> byChange = d.classes;
    std::stable_sort(byChange.begin(), byChange.end(), [](const ClassChange &a, const ClassChange &b) {
        return std::fabs(a.here - a.there) > std::fabs(b.here - b.there);
    });
    for (std::size_t i = 0; i < std::min<std::size_t>(3, byChange.size()); ++i) {
        const ClassChange &c = byChange[i];
        classes << tr("%1 %2 → %3").arg(QString::fromStdString(c.name), pct(c.there), pct(c.here));
    }
    return tr("\nAgainst %1 (there, the grey bars): top-1 %2 there, %3 here; most changed: %4.")
        .arg(name, pct(d.top1There), pct(d.top1Here), classes.join(QStringLiteral(", ")));
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
    const bool onnx = path.endsWith(QStringLiteral(".onnx"), Qt::CaseInsensitive);
    m_worker = startWorker(this, QStringLiteral("export"), [dir, path, onnx]() -> QString {
        try {
            const ExportResult r = onnx ? exportOnnx(dir.toStdString(), "", path.toStdString())
                                        : exportPyTorch(dir.toStdString(), "", path.toStdString());
            return (onnx ? tr("Exported %1 (epoch %2) of %3 to %4: an ONNX model, input \"image\" (pixels / 255), "
                              "output \"logits\"")
                         : tr("Exported %1 (epoch %2) of %3 to %4: torch.load(path, weights_only=True) in PyTorch"))
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
    m_evaluateAction->setEnabled(run && !m_worker);
    m_exportEvaluation->setEnabled(m_evaluation.has_value());
    m_rowNormalized->setEnabled(m_evaluation.has_value());
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
    m_evaluation.reset();
    m_diff.reset();
    m_summary->setText(text);
    m_matrix->clear();
    m_matrix->setRowCount(0);
    m_matrix->setColumnCount(0);
    m_gallery->clear();
    m_galleryLabel->clear();
    m_showAll->setEnabled(false);
    m_filterTruth = m_filterPredicted = -1;
    updateButtons();
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
    m_summary->setText(tr("%1 (epoch %2), %3 test images: top-1 %4, top-3 %5. Most confused: %6.")
                           .arg(QString::fromStdString(e.checkpoint))
                           .arg(e.epoch)
                           .arg(e.samples)
                           .arg(pct(e.top1), pct(e.top3), pairs.isEmpty() ? tr("none") : pairs.join(QStringLiteral(", "))));

    m_summary->setText(m_summary->text() + staleNote(m_runDir, e) + againstText());
    fillMatrix();
    fillGallery();
    updateButtons();

    const int n = static_cast<int>(e.classNames.size());
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
    if (m_diff) {
        auto *there = new QBarSet(tr("accuracy there"));
        there->setColor(QColor(0x9a9a9a));
        for (const ClassChange &c : m_diff->classes)
            *there << c.there;
        series->append(there);
    }
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
    y->setTickCount(3);
    y->setLabelFormat(QStringLiteral("%.1f"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
}

void EvaluationView::fillMatrix()
{
    const Evaluation &e = *m_evaluation;
    const int n = static_cast<int>(e.classNames.size());
    const bool normalized = m_rowNormalized->isChecked();
    QStringList names;
    for (const std::string &name : e.classNames)
        names << QString::fromStdString(name);
    m_matrix->clear();
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
        const std::int64_t support = rowTotal(row);
        for (int c = 0; c < n; ++c) {
            const auto count = row[static_cast<std::size_t>(c)];
            const double share = support ? static_cast<double>(count) / static_cast<double>(support) : 0.0;
            auto *item = new QTableWidgetItem(cellText(count, share, normalized));
            item->setTextAlignment(Qt::AlignCenter);
            item->setBackground(count ? cellColor(r == c, share) : QColor(Qt::transparent));
            if (share > 0.55)
                item->setForeground(Qt::white);
            item->setToolTip(tr("true %1, predicted %2: %3 of %4 (%5)%6")
                                 .arg(names[r], names[c])
                                 .arg(count)
                                 .arg(support)
                                 .arg(pct(share))
                                 .arg(r != c && count ? tr("; click to see these mistakes") : QString()));
            m_matrix->setItem(r, c, item);
        }
    }
}

void EvaluationView::fillGallery()
{
    const Evaluation &e = *m_evaluation;
    m_gallery->clear();
    for (const Mistake &m : e.mistakes) {
        const QString truth = QString::fromStdString(e.classNames[static_cast<std::size_t>(m.truth)]);
        const QString predicted = QString::fromStdString(e.classNames[static_cast<std::size_t>(m.predicted)]);
        auto *item = new QListWidgetItem(tr("%1 → %2 %3").arg(truth, predicted, pct(m.probability)));
        if (!m.pixels.empty()) {
            const QImage image(reinterpret_cast<const uchar *>(m.pixels.data()), e.imageWidth, e.imageHeight, e.imageWidth,
                               QImage::Format_Grayscale8);
            // Pixels stay pixels: twice as large, no smoothing.
            item->setIcon(QIcon(QPixmap::fromImage(image.scaled(e.imageWidth * 2, e.imageHeight * 2))));
        }
        item->setToolTip(tr("test image #%1: true %2, predicted %3 with probability %4")
                             .arg(m.index)
                             .arg(truth, predicted, QString::number(m.probability, 'f', 3)));
        item->setData(Qt::UserRole, m.truth);
        item->setData(Qt::UserRole + 1, m.predicted);
        m_gallery->addItem(item);
    }
    filterGallery(-1, -1);
}

void EvaluationView::filterGallery(int truth, int predicted)
{
    if (!m_evaluation)
        return;
    const Evaluation &e = *m_evaluation;
    m_filterTruth = truth;
    m_filterPredicted = predicted;
    int shown = 0;
    for (int i = 0; i < m_gallery->count(); ++i) {
        QListWidgetItem *item = m_gallery->item(i);
        const bool match = truth < 0 || (item->data(Qt::UserRole).toInt() == truth && item->data(Qt::UserRole + 1).toInt() == predicted);
        item->setHidden(!match);
        shown += match ? 1 : 0;
    }
    m_showAll->setEnabled(truth >= 0);
    if (e.mistakes.empty()) {
        m_galleryLabel->setText(tr("No mistakes kept: %1").arg(e.samples && e.top1 >= 1.0 ? tr("every test image is right.") : tr("Evaluate again to see them.")));
    } else if (truth < 0) {
        m_galleryLabel->setText(tr("Mistakes, most confident first (%1): click a cell to see its own").arg(m_gallery->count()));
    } else {
        const auto count = e.confusion[static_cast<std::size_t>(truth)][static_cast<std::size_t>(predicted)];
        m_galleryLabel->setText(tr("%1 taken for %2: %3 of %4 shown")
                                    .arg(QString::fromStdString(e.classNames[static_cast<std::size_t>(truth)]),
                                         QString::fromStdString(e.classNames[static_cast<std::size_t>(predicted)]))
                                    .arg(shown)
                                    .arg(count));
    }
}

void EvaluationView::setRowNormalized(bool on)
{
    if (m_rowNormalized->isChecked() != on)
        m_rowNormalized->setChecked(on);   // toggled() calls back here
    else if (m_evaluation)
        fillMatrix();
}

void EvaluationView::paintMatrix(QPainter &painter, const QSize &size) const
{
    const Evaluation &e = *m_evaluation;
    const int n = static_cast<int>(e.classNames.size());
    const bool normalized = m_rowNormalized->isChecked();
    const int label = 130, header = 74, cell = (size.width() - label - 12) / std::max(1, n);
    painter.fillRect(QRect(QPoint(0, 0), size), Qt::white);
    painter.setPen(Qt::black);
    QFont font = painter.font();
    font.setPixelSize(13);
    painter.setFont(font);
    painter.drawText(QRect(8, 4, size.width() - 16, 20), Qt::AlignLeft | Qt::AlignVCenter,
                     tr("%1, %2 (epoch %3): top-1 %4")
                         .arg(QFileInfo(m_runDir).fileName(), QString::fromStdString(e.checkpoint))
                         .arg(e.epoch)
                         .arg(pct(e.top1)));
    painter.drawText(QRect(8, 24, size.width() - 16, 20), Qt::AlignLeft | Qt::AlignVCenter,
                     normalized ? tr("Rows: true class; columns: predicted; % of the row")
                                : tr("Rows: true class; columns: predicted; test images"));
    for (int c = 0; c < n; ++c)
        painter.drawText(QRect(label + c * cell, header - 24, cell, 22), Qt::AlignCenter, QString::number(c));
    for (int r = 0; r < n; ++r) {
        const auto &row = e.confusion[static_cast<std::size_t>(r)];
        const std::int64_t support = rowTotal(row);
        const int y = header + r * cell;
        painter.setPen(Qt::black);
        painter.drawText(QRect(8, y, label - 12, cell), Qt::AlignRight | Qt::AlignVCenter,
                         QStringLiteral("%1 %2").arg(r).arg(QString::fromStdString(e.classNames[static_cast<std::size_t>(r)])));
        for (int c = 0; c < n; ++c) {
            const auto count = row[static_cast<std::size_t>(c)];
            const double share = support ? static_cast<double>(count) / static_cast<double>(support) : 0.0;
            const QRect box(label + c * cell, y, cell, cell);
            if (count)
                painter.fillRect(box, cellColor(r == c, share));
            painter.setPen(QColor(0xdddddd));
            painter.drawRect(box);
            painter.setPen(share > 0.55 ? Qt::white : Qt::black);
            painter.drawText(box, Qt::AlignCenter, cellText(count, share, normalized));
        }
    }
}

bool EvaluationView::saveMatrix(const QString &path, QString *error) const
{
    if (!m_evaluation) {
        if (error)
            *error = tr("%1: no evaluation to export").arg(path);
        return false;
    }
    const int n = static_cast<int>(m_evaluation->classNames.size());
    const QSize size(130 + 12 + 52 * n, 74 + 52 * n + 8);
    return savePainted(path, isSvg(path), size,
                       tr("Confusion matrix of %1").arg(QFileInfo(m_runDir).fileName()),
                       [this, size](QPainter &painter) { paintMatrix(painter, size); }, error);
}

bool EvaluationView::savePerClassCsv(const QString &path, QString *error) const
{
    if (!m_evaluation) {
        if (error)
            *error = tr("%1: no evaluation to export").arg(path);
        return false;
    }
    // Plain C-locale numbers and quoted names, whatever the desktop's locale.
    QByteArray csv = "class,name,support,predicted,correct,accuracy,precision\n";
    for (std::size_t c = 0; c < m_evaluation->classes.size(); ++c) {
        const ClassStats &s = m_evaluation->classes[c];
        csv += QByteArray::number(static_cast<qulonglong>(c)) + ",\"" + QByteArray::fromStdString(s.name).replace('"', "\"\"") + "\","
               + QByteArray::number(static_cast<qlonglong>(s.support)) + "," + QByteArray::number(static_cast<qlonglong>(s.predicted))
               + "," + QByteArray::number(static_cast<qlonglong>(s.correct)) + "," + QByteArray::number(s.recall, 'f', 6) + ","
               + QByteArray::number(s.precision, 'f', 6) + "\n";
    }
    return saveTextFile(path, csv, error);
}

void EvaluationView::exportDialog(bool csv)
{
    const QString base = QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
                             .filePath(QFileInfo(m_runDir).fileName() + (csv ? QStringLiteral("-classes.csv") : QStringLiteral("-confusion.png")));
    const QString path = csv ? QFileDialog::getSaveFileName(this, tr("Export Per-Class Table"), base, tr("CSV (*.csv)"))
                             : QFileDialog::getSaveFileName(this, tr("Export Confusion Matrix"), base, tr("PNG image (*.png);;SVG image (*.svg)"));
    if (path.isEmpty())
        return;
    QString error;
    if (csv ? savePerClassCsv(path, &error) : saveMatrix(path, &error))
        Q_EMIT status(tr("Saved %1").arg(path));
    else
        Q_EMIT status(error);
}

} // namespace trainlab
