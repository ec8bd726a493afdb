#pragma once

#include "core/monitor/devicemonitor.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainlab {

// Folds readings into each device's epoch figures: means of the readings that had a value, peaks of all. Folding
// epochs' figures instead gives the whole run's: means weighted by each epoch's samples, peaks of the peaks.
class DeviceEpochMeter
{
public:
    void add(const std::vector<DeviceReading> &readings);
    void add(const DeviceEpochStats &figures);
    // The figures since the previous take, devices in the order first seen; starts afresh.
    std::vector<DeviceEpochStats> take();

private:
    struct Device
    {
        DeviceEpochStats stats;
        double utilizationSum = 0, powerSum = 0;
        int utilizationCount = 0, powerCount = 0;
    };
    std::vector<Device> m_devices;
};

// Reads the device monitor every interval on its own thread while a run trains, so the run's loop never waits on
// NVML or /proc; takeEpoch() closes an epoch with one more reading (an epoch shorter than the interval still has one).
class DeviceSampler
{
public:
    // cudaBusIds: as DeviceMonitor::setCudaBusIds, so the figures name each GPU's cuda:N.
    explicit DeviceSampler(std::vector<std::string> cudaBusIds = {},
                           std::chrono::milliseconds interval = std::chrono::milliseconds(1000));
    ~DeviceSampler();
    DeviceSampler(const DeviceSampler &) = delete;
    DeviceSampler &operator=(const DeviceSampler &) = delete;

    std::vector<DeviceEpochStats> takeEpoch();

private:
    void loop(std::chrono::milliseconds interval);

    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stop = false;
    DeviceMonitor m_monitor;
    DeviceEpochMeter m_meter;
    std::thread m_thread;
};

// "cpu: mean 143% of 2 cores, peak 1.2 GiB resident" / "gpu0 (cuda:0) NVIDIA H200: mean 87%, peak 40.1 of 139.8 GiB, 64 C, 410 W"; n/a left out.
std::string formatEpochStats(const DeviceEpochStats &stats);

} // namespace trainlab
