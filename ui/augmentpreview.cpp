#include "ui/augmentpreview.h"

#include "core/data/augmentimages.h"
#include "core/data/idx.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPixmap>
#include <QToolButton>
#include <QVBoxLayout>

#include <cstring>

namespace trainlab {

namespace {

constexpr int kScale = 2;
constexpr int kGap = 4;

} // namespace

AugmentPreview::AugmentPreview(QWidget *parent)
    : QWidget(parent)
    , m_picture(new QLabel(this))
    , m_caption(new QLabel(this))
    , m_again(new QToolButton(this))
{
    setObjectName(QStringLiteral("augmentPreview"));
    m_caption->setObjectName(QStringLiteral("augmentPreviewCaption"));
    m_caption->setWordWrap(true);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    m_caption->setFont(small);
    m_again->setObjectName(QStringLiteral("augmentDrawAgain"));
    m_again->setText(tr("Draw Again"));
    m_again->setToolTip(tr("The next step's draws: the same images as the run would alter them one step later"));
    connect(m_again, &QToolButton::clicked, this, &AugmentPreview::drawAgain);
    // The button beside the caption, not the picture: the form's field column stays as narrow as it was.
    auto *row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(m_caption, 1);
    row->addWidget(m_again, 0, Qt::AlignTop);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_picture);
    layout->addLayout(row);
}

void AugmentPreview::setConfig(const ExperimentConfig &config)
{
    const AugmentationConfig &a = config.augmentation;
    if (m_loaded && a == m_augmentation && config.seed == m_seed)
        return;
    m_augmentation = a;
    m_seed = config.seed;
    redraw();
}

void AugmentPreview::drawAgain()
{
    ++m_step;
    redraw();
}

void AugmentPreview::loadImages()
{
    m_loaded = true;
    try {
        const DatasetFiles files = findDatasetFiles(builtinSampleDir());
        if (!files.missing.empty())
            throw DataError(builtinSampleDir() + ": the built-in sample is incomplete");
        const IdxImages images = readIdxImages(files.trainImages);
        if (images.rows != 28 || images.cols != 28 || images.count < kImages)
            throw DataError(files.trainImages + ": not 28x28 images");
        // The sample is grouped by class: one image from each part of it shows several classes.
        for (int i = 0; i < kImages; ++i) {
            const std::int64_t index = (2 * i + 1) * images.count / (2 * kImages);
            QImage image(28, 28, QImage::Format_Grayscale8);
            for (int y = 0; y < 28; ++y)
                std::memcpy(image.scanLine(y), images.pixels.data() + (index * 28 + y) * 28, 28);
            m_originals << image;
        }
    } catch (const std::exception &e) {
        m_loadError = QString::fromStdString(e.what());
    }
}

void AugmentPreview::redraw()
{
    if (!m_loaded)
        loadImages();
    m_augmented.clear();
    if (m_originals.isEmpty()) {
        m_picture->clear();
        m_caption->setText(tr("No preview: %1").arg(m_loadError));
        m_again->setEnabled(false);
        return;
    }
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(kImages) * 28 * 28);
    for (int i = 0; i < kImages; ++i) {
        for (int y = 0; y < 28; ++y)
            std::memcpy(pixels.data() + (i * 28 + y) * 28, m_originals[i].constScanLine(y), 28);
    }
    std::vector<std::uint8_t> shown;
    const AugmentationConfig &a = m_augmentation;
    // Values the form marks as wrong draw nothing here: the form names the field.
    const bool valid = a.cropPadding >= 0 && a.cropPadding <= 14 && a.erasing >= 0 && a.erasing <= 1;
    try {
        shown = valid ? augmentImageBytes(a, m_seed, m_step, pixels, kImages, 28, 28) : pixels;
    } catch (const std::exception &e) {
        shown = pixels;
        m_loadError = QString::fromStdString(e.what());
    }
    for (int i = 0; i < kImages; ++i) {
        QImage image(28, 28, QImage::Format_Grayscale8);
        for (int y = 0; y < 28; ++y)
            std::memcpy(image.scanLine(y), shown.data() + (i * 28 + y) * 28, 28);
        m_augmented << image;
    }
    const int cell = 28 * kScale;
    QPixmap picture(kImages * cell + (kImages - 1) * kGap, 2 * cell + kGap);
    picture.fill(palette().color(QPalette::Window));
    QPainter painter(&picture);
    for (int i = 0; i < kImages; ++i) {
        const int x = i * (cell + kGap);
        painter.drawImage(QRect(x, 0, cell, cell), m_originals[i]);
        painter.drawImage(QRect(x, cell + kGap, cell, cell), m_augmented[i]);
    }
    painter.end();
    m_picture->setPixmap(picture);
    m_again->setEnabled(valid && a.any());
    m_caption->setText(valid ? drawsText() : tr("No preview while the augmentation values are out of range."));
}

QString AugmentPreview::caption() const
{
    return m_caption->text();
}

QString AugmentPreview::drawsText() const
{
    if (!m_augmentation.any())
        return tr("Augmentation off: training images are used as they are (top: the built-in sample, bottom: as trained).");
    return tr("Top: %1 images of the built-in sample; bottom: as a run with seed %2 alters them at step %3 (%4).")
        .arg(kImages)
        .arg(m_seed)
        .arg(m_step)
        .arg(QString::fromStdString(m_augmentation.describe()));
}

} // namespace trainlab
