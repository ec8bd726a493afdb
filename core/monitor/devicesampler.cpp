#include "core/monitor/devicesampler.h"

#include "core/util/numtext.h"

#include <algorithm>

namespace trainlab {

void DeviceEpochMeter::add(const std::vector<DeviceReading> &readings)
{
    for (const DeviceReading &r : readings) {
        DeviceEpochStats one;
        one.id = r.id;
        one.name = r.name;
        one.cudaId = r.cudaId;
        one.samples = 1;
        one.meanUtilization = r.utilization;
        one.meanPower = r.power;
        one.peakMemory = r.memoryUsed;
        one.memoryTotal = r.memoryTotal;
        one.peakTemperature = r.temperature;
        one.lost = r.lost;
        add(one);
    }
}

void DeviceEpochMeter::add(const DeviceEpochStats &d)
{
    auto it = std::find_if(m_devices.begin(), m_devices.end(), [&d](const Device &m) { return m.stats.id == d.id; });
    if (it == m_devices.end()) {
        m_devices.emplace_back();
        it = std::prev(m_devices.end());
        it->stats.id = d.id;
    }
    DeviceEpochStats &s = it->stats;
    if (!d.name.empty())
        s.name = d.name;
    if (!d.cudaId.empty())
        s.cudaId = d.cudaId;
    s.samples += d.samples;
    s.lost = s.lost || d.lost;
    const int weight = std::max(1, d.samples);
    if (d.meanUtilization) {
        it->utilizationSum += *d.meanUtilization * weight;
        it->utilizationCount += weight;
    }
    if (d.meanPower) {
        it->powerSum += *d.meanPower * weight;
        it->powerCount += weight;
    }
    if (d.peakMemory)
        s.peakMemory = std::max(s.peakMemory.value_or(0), *d.peakMemory);
    if (d.memoryTotal)
        s.memoryTotal = d.memoryTotal;
    if (d.peakTemperature)
        s.peakTemperature = std::max(s.peakTemperature.value_or(*d.peakTemperature), *d.peakTemperature);
}

std::vector<DeviceEpochStats> DeviceEpochMeter::take()
{
    std::vector<DeviceEpochStats> out;
    for (Device &d : m_devices) {
        if (d.utilizationCount > 0)
            d.stats.meanUtilization = d.utilizationSum / d.utilizationCount;
        if (d.powerCount > 0)
            d.stats.meanPower = d.powerSum / d.powerCount;
        out.push_back(d.stats);
    }
    m_devices.clear();
    return out;
}

DeviceSampler::DeviceSampler(std::vector<std::string> cudaBusIds, std::chrono::milliseconds interval)
    : m_monitor(CpuSince::Construction)
{
    m_monitor.setCudaBusIds(std::move(cudaBusIds));
    m_thread = std::thread([this, interval] { loop(interval); });
}

DeviceSampler::~DeviceSampler()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
}

void DeviceSampler::loop(std::chrono::milliseconds interval)
{
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_wake.wait_for(lock, interval, [this] { return m_stop; }))
        m_meter.add(m_monitor.read());
}

std::vector<DeviceEpochStats> DeviceSampler::takeEpoch()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    m_meter.add(m_monitor.read());
    return m_meter.take();
}

std::string formatEpochStats(const DeviceEpochStats &s)
{
    const auto gib = [](std::uint64_t bytes) { return formatFixed(static_cast<double>(bytes) / 1073741824.0, 1); };
    if (s.isCpu()) {
        // As the live reading says it: a share of all cores, this process's resident memory.
        return s.id + ": " + (s.meanUtilization ? "mean " + formatFixed(*s.meanUtilization, 0) + "% of " + s.name : std::string("n/a"))
               + (s.peakMemory ? ", peak " + gib(*s.peakMemory) + " GiB resident" : std::string());
    }
    std::string text = s.id + (s.cudaId.empty() ? "" : " (" + s.cudaId + ")") + (s.name.empty() ? "" : " " + s.name);
    text += ":";
    std::string sep = " ";
    if (s.meanUtilization) {
        text += sep + "mean " + formatFixed(*s.meanUtilization, 0) + "%";
        sep = ", ";
    }
    if (s.peakMemory) {
        text += sep + "peak " + gib(*s.peakMemory) + (s.memoryTotal ? " of " + gib(*s.memoryTotal) : std::string()) + " GiB";
        sep = ", ";
    }
    if (s.peakTemperature) {
        text += sep + formatFixed(*s.peakTemperature, 0) + " C";
        sep = ", ";
    }
    if (s.meanPower) {
        text += sep + formatFixed(*s.meanPower, 0) + " W";
        sep = ", ";
    }
    if (s.lost)
        text += sep + "lost during the epoch";
    return sep == " " && !s.lost ? text + " n/a" : text;
}

} // namespace trainlab
