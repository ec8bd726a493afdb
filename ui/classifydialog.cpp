#include "ui/classifydialog.h"

#include "ui/workerthread.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QPixmap>
#include <QPushButton>
#include <QStandardPaths>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

namespace trainlab {

namespace {

constexpr int kThumb = 84;   // the model's 28×28, three times larger

QPixmap thumbnail(const GrayImage &image)
{
    QImage q(image.width, image.height, QImage::Format_Grayscale8);
    for (int y = 0; y < image.height; ++y)
        std::copy_n(image.pixels.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width),
                    image.width, q.scanLine(y));
    return QPixmap::fromImage(q.scaled(kThumb, kThumb, Qt::KeepAspectRatio, Qt::FastTransformation));
}

} // namespace

ClassifyDialog::ClassifyDialog(const QString &runDir, QWidget *parent)
    : QDialog(parent)
    , m_runDir(runDir)
    , m_status(new QLabel)
    , m_invert(new QComboBox)
    , m_addButton(new QPushButton(tr("&Add Images…")))
    , m_table(new QTableWidget(0, 6))
{
    setObjectName(QStringLiteral("classifyDialog"));
    setWindowTitle(tr("Classify Images — %1").arg(QFileInfo(runDir).fileName()));
    m_status->setObjectName(QStringLiteral("classifyStatus"));
    m_status->setWordWrap(true);
    m_status->setText(tr("Pictures of clothes, shoes or bags (PNG, JPEG, BMP, PGM) go through this run's model "
                         "as Fashion-MNIST's did: trimmed to the object, 28 × 28, grey, light on black."));
    m_invert->setObjectName(QStringLiteral("invertMode"));
    m_invert->addItem(tr("Negate a light background"), static_cast<int>(InvertMode::Auto));
    m_invert->addItem(tr("Always negate"), static_cast<int>(InvertMode::Yes));
    m_invert->addItem(tr("Never negate"), static_cast<int>(InvertMode::No));
    m_invert->setToolTip(tr("Fashion-MNIST's pictures are light objects on black; a photo on white is the other way"));
    m_addButton->setObjectName(QStringLiteral("addImagesButton"));
    m_table->setObjectName(QStringLiteral("classifyTable"));
    m_table->setHorizontalHeaderLabels({tr("Model input"), tr("File"), tr("1st"), tr("2nd"), tr("3rd"), tr("Note")});
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setIconSize(QSize(kThumb, kThumb));
    m_table->verticalHeader()->setDefaultSectionSize(kThumb + 6);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);

    auto *controls = new QHBoxLayout;
    controls->addWidget(m_addButton);
    controls->addWidget(m_invert);
    controls->addStretch(1);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_status);
    layout->addLayout(controls);
    layout->addWidget(m_table, 1);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_addButton, &QPushButton::clicked, this, &ClassifyDialog::addImages);
    resize(800, 720);
}

ClassifyDialog::~ClassifyDialog()
{
    if (m_worker) {
        m_worker->wait();
        delete m_worker;
    }
}

void ClassifyDialog::addImages()
{
    const QStringList files = QFileDialog::getOpenFileNames(
        this, tr("Classify Images"), QStandardPaths::writableLocation(QStandardPaths::PicturesLocation),
        tr("Images (*.png *.jpg *.jpeg *.bmp *.pgm *.ppm *.gif);;All files (*)"));
    classify(files);
}

bool ClassifyDialog::classify(const QStringList &paths)
{
    if (paths.isEmpty() || m_worker)
        return false;
    std::vector<std::string> files;
    for (const QString &p : paths)
        files.push_back(QDir::toNativeSeparators(p).toStdString());
    const auto invert = static_cast<InvertMode>(m_invert->currentData().toInt());
    const std::string dir = m_runDir.toStdString();
    m_addButton->setEnabled(false);
    m_status->setText(tr("Classifying…"));
    using Outcome = std::pair<std::optional<ClassifyResult>, QString>;
    m_worker = startWorker(this, QStringLiteral("classify"), [dir, files, invert]() -> Outcome {
        try {
            return {classifyImages(dir, "", files, invert), QString()};
        } catch (const std::exception &e) {
            return {std::nullopt, QString::fromStdString(e.what())};
        }
    }, [this](const Outcome &o) { finished(o.first, o.second); });
    return true;
}

void ClassifyDialog::finished(const std::optional<ClassifyResult> &result, const QString &error)
{
    m_worker->wait();
    delete m_worker;
    m_worker = nullptr;
    m_addButton->setEnabled(true);
    if (!result) {
        m_status->setText(tr("Cannot classify with this run: %1").arg(error));
        Q_EMIT classified(0);
        return;
    }
    int refused = 0;
    for (const Classification &c : result->images) {
        const int row = m_table->rowCount();
        m_table->insertRow(row);
        auto *file = new QTableWidgetItem(QFileInfo(QString::fromStdString(c.path)).fileName());
        file->setToolTip(QString::fromStdString(c.path));
        m_table->setItem(row, 1, file);
        if (!c.error.empty()) {
            ++refused;
            auto *note = new QTableWidgetItem(tr("Refused: %1").arg(QString::fromStdString(c.error)));
            note->setForeground(QColor(0xc0, 0x30, 0x30));
            note->setToolTip(note->text());
            m_table->setItem(row, 5, note);
            continue;
        }
        auto *input = new QTableWidgetItem;
        input->setData(Qt::DecorationRole, thumbnail(c.input));
        input->setToolTip(tr("What the model saw: 28 × 28, grey"));
        m_table->setItem(row, 0, input);
        for (std::size_t k = 0; k < c.top.size() && k < 3; ++k) {
            const auto &[cls, probability] = c.top[k];
            m_table->setItem(row, 2 + static_cast<int>(k),
                             new QTableWidgetItem(QStringLiteral("%1  %2%").arg(
                                 QString::fromStdString(result->classNames[static_cast<std::size_t>(cls)]),
                                 QString::number(100.0 * probability, 'f', 1))));
        }
        QString note;
        if (c.inverted && c.looksInverted)
            note = tr("Light background: negated");
        else if (c.inverted)
            note = tr("Negated");
        else if (c.looksInverted)
            note = tr("Light background kept: try “Always negate”");
        m_table->setItem(row, 5, new QTableWidgetItem(note));
    }
    m_status->setText(tr("%1, %2 (epoch %3): %4 classified, %5 refused")
                          .arg(QFileInfo(m_runDir).fileName(), QString::fromStdString(result->checkpoint))
                          .arg(result->epoch)
                          .arg(static_cast<int>(result->images.size()) - refused)
                          .arg(refused));
    Q_EMIT classified(static_cast<int>(result->images.size()));
}

} // namespace trainlab
