#include "ui/devicestrip.h"

#include "core/monitor/devicemonitor.h"
#include "core/train/devices.h"

namespace trainlab {

namespace {

QString gib(std::uint64_t bytes)
{
    return QString::number(static_cast<double>(bytes) / 1073741824.0, 'f', 1);
}

// "cpu 143% 1.2 GiB" / "gpu0 87% 40.1/139.8 GiB 61 C" / "gpu1 lost".
QString shortText(const DeviceReading &r)
{
    if (r.lost)
        return QStringLiteral("%1 lost").arg(QString::fromStdString(r.id));
    QStringList parts{QString::fromStdString(r.id)};
    parts << (r.utilization ? QStringLiteral("%1%").arg(*r.utilization, 0, 'f', 0) : QStringLiteral("n/a"));
    if (r.id == "cpu")
        parts << (r.memoryUsed ? gib(*r.memoryUsed) + QStringLiteral(" GiB") : QStringLiteral("n/a"));
    else
        parts << (r.memoryUsed && r.memoryTotal ? gib(*r.memoryUsed) + QLatin1Char('/') + gib(*r.memoryTotal) + QStringLiteral(" GiB")
                                                : QStringLiteral("n/a"));
    if (r.temperature)
        parts << QStringLiteral("%1 C").arg(*r.temperature, 0, 'f', 0);
    return parts.join(QLatin1Char(' '));
}

} // namespace

DeviceStrip::DeviceStrip(QWidget *parent)
    : QLabel(parent)
    , m_monitor(std::make_unique<DeviceMonitor>())
{
    setObjectName(QStringLiteral("deviceStrip"));
    m_monitor->setCudaBusIds(cudaBusIds());
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &DeviceStrip::refresh);
    m_timer.start();
    refresh();
}

DeviceStrip::~DeviceStrip() = default;

void DeviceStrip::refresh()
{
    QStringList line, tip;
    for (const DeviceReading &r : m_monitor->read()) {
        line << shortText(r);
        tip << QString::fromStdString(formatReading(r));
    }
    setText(line.join(QStringLiteral("  ·  ")));
    setToolTip(tip.join(QLatin1Char('\n')));
}

} // namespace trainlab
