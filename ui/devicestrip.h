#pragma once

#include <QLabel>
#include <QTimer>

#include <memory>

namespace trainlab {

class DeviceMonitor;

// The device monitor in one status-bar line, refreshed every second, during a run and while idle: this
// process's CPU share and memory, and each GPU NVML sees (use, memory, temperature, power); the full
// readings in its tooltip. Without NVML only the CPU is shown.
class DeviceStrip : public QLabel
{
    Q_OBJECT

public:
    explicit DeviceStrip(QWidget *parent = nullptr);
    ~DeviceStrip() override;
    void refresh();

private:
    std::unique_ptr<DeviceMonitor> m_monitor;
    QTimer m_timer;
};

} // namespace trainlab
