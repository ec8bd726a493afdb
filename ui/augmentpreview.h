#pragma once

#include "core/config.h"

#include <QImage>
#include <QVector>
#include <QWidget>

class QLabel;
class QToolButton;

namespace trainlab {

// A few training images of the built-in sample above the same images as the form's augmentation alters them
// (core's drawAugmentation and applyAugmentation, the engine's own calls), redrawn as the form changes.
class AugmentPreview : public QWidget
{
    Q_OBJECT

public:
    static constexpr int kImages = 6;

    explicit AugmentPreview(QWidget *parent = nullptr);

    void setConfig(const ExperimentConfig &config);
    // The draws of the next step: another sample of what the run will see.
    void drawAgain();

    std::int64_t step() const { return m_step; }
    int imageCount() const { return m_originals.size(); }
    QImage original(int i) const { return m_originals.value(i); }
    QImage augmented(int i) const { return m_augmented.value(i); }
    // What the picture shows, or why there is none.
    QString caption() const;

private:
    void loadImages();
    void redraw();
    QString drawsText() const;

    QLabel *m_picture;
    QLabel *m_caption;
    QToolButton *m_again;
    QVector<QImage> m_originals;     // 28x28 greyscale
    QVector<QImage> m_augmented;
    AugmentationConfig m_augmentation;
    std::uint64_t m_seed = 0;
    std::int64_t m_step = 0;
    QString m_loadError;
    bool m_loaded = false;
};

} // namespace trainlab
