#include "ui/chartexport.h"

#include <QChartView>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>

namespace trainlab {

namespace {

bool fail(const QSaveFile &file, const QString &path, QString *error)
{
    if (error)
        *error = QStringLiteral("%1: cannot write: %2").arg(path, file.errorString());
    return false;
}

bool commit(QSaveFile &file, const QString &path, QString *error)
{
    return file.commit() || fail(file, path, error);
}

void renderView(QChartView *view, QPainter &painter)
{
    view->render(&painter, QRectF(QPointF(0, 0), QSizeF(view->size())), view->rect());
}

} // namespace

bool isSvg(const QString &path)
{
    return QFileInfo(path).suffix().compare(QLatin1String("svg"), Qt::CaseInsensitive) == 0;
}

bool savePainted(const QString &path, bool svg, const QSize &size, const QString &title,
                 const std::function<void(QPainter &)> &paint, QString *error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return fail(file, path, error);
    if (svg) {
        QSvgGenerator generator;
        generator.setOutputDevice(&file);
        generator.setSize(size);
        generator.setViewBox(QRect(QPoint(0, 0), size));
        generator.setTitle(title);
        QPainter painter(&generator);
        paint(painter);
    } else {
        QImage image(size * 2, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::white);
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.scale(2, 2);
        paint(painter);
        painter.end();
        if (!image.save(&file, "PNG")) {
            if (error)
                *error = QStringLiteral("%1: cannot encode the PNG image").arg(path);
            file.cancelWriting();
            return false;
        }
    }
    return commit(file, path, error);
}

bool saveChartPng(QChartView *view, const QString &path, QString *error)
{
    return savePainted(path, false, view->size(), QString(), [view](QPainter &p) { renderView(view, p); }, error);
}

bool saveChartSvg(QChartView *view, const QString &path, const QString &title, QString *error)
{
    return savePainted(path, true, view->size(), title, [view](QPainter &p) { renderView(view, p); }, error);
}

bool saveChart(QChartView *view, const QString &path, const QString &title, QString *error)
{
    return isSvg(path) ? saveChartSvg(view, path, title, error) : saveChartPng(view, path, error);
}

bool saveTextFile(const QString &path, const QByteArray &data, QString *error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return fail(file, path, error);
    if (file.write(data) != data.size()) {
        const bool failed = fail(file, path, error);
        file.cancelWriting();
        return failed;
    }
    return commit(file, path, error);
}

} // namespace trainlab
