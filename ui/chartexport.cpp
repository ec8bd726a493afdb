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

} // namespace

bool saveChartPng(QChartView *view, const QString &path, QString *error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return fail(file, path, error);
    QImage image(view->size() * 2, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    view->render(&painter, QRectF(image.rect()), view->rect());
    painter.end();
    if (!image.save(&file, "PNG")) {
        if (error)
            *error = QStringLiteral("%1: cannot encode the PNG image").arg(path);
        file.cancelWriting();
        return false;
    }
    return commit(file, path, error);
}

bool saveChartSvg(QChartView *view, const QString &path, const QString &title, QString *error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return fail(file, path, error);
    QSvgGenerator generator;
    generator.setOutputDevice(&file);
    generator.setSize(view->size());
    generator.setViewBox(view->rect());
    generator.setTitle(title);
    QPainter painter(&generator);
    view->render(&painter);
    painter.end();
    return commit(file, path, error);
}

bool saveChart(QChartView *view, const QString &path, const QString &title, QString *error)
{
    const bool svg = QFileInfo(path).suffix().compare(QLatin1String("svg"), Qt::CaseInsensitive) == 0;
    return svg ? saveChartSvg(view, path, title, error) : saveChartPng(view, path, error);
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
