#pragma once

#include <QByteArray>
#include <QString>

class QChartView;

namespace trainlab {

// Each written atomically (QSaveFile); false with *error ("PATH: cannot write: REASON") on failure.
// PNG at twice the view's size on white, crisp on high-DPI screens and in documents.
bool saveChartPng(QChartView *view, const QString &path, QString *error);
bool saveChartSvg(QChartView *view, const QString &path, const QString &title, QString *error);
// SVG when the path ends in .svg (any case), else PNG.
bool saveChart(QChartView *view, const QString &path, const QString &title, QString *error);
bool saveTextFile(const QString &path, const QByteArray &data, QString *error);

} // namespace trainlab
