#pragma once

#include <QByteArray>
#include <QString>

#include <functional>

class QChartView;
class QPainter;
class QSize;

namespace trainlab {

// Each written atomically (QSaveFile); false with *error ("PATH: cannot write: REASON") on failure. PNGs are at
// twice the size on white, crisp on high-DPI screens and in documents.

// What paint draws in size (logical pixels), as an SVG drawing or a PNG image.
bool savePainted(const QString &path, bool svg, const QSize &size, const QString &title,
                 const std::function<void(QPainter &)> &paint, QString *error);
bool saveChartPng(QChartView *view, const QString &path, QString *error);
bool saveChartSvg(QChartView *view, const QString &path, const QString &title, QString *error);
// Whether path ends in .svg (any case): the savers below write SVG then, else PNG.
bool isSvg(const QString &path);
bool saveChart(QChartView *view, const QString &path, const QString &title, QString *error);
bool saveTextFile(const QString &path, const QByteArray &data, QString *error);

} // namespace trainlab
