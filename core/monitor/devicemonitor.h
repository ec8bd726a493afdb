#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainlab {

// One device's readings at one moment; an empty optional is a field the device does not report ("n/a").
struct DeviceReading
{
    std::string id;                         // "cpu", or "gpuN" (NVML's index)
    std::string name;
    std::string busId;                      // GPUs: the PCI bus id, as CUDA and NVML both know it
    std::string cudaId;                     // GPUs: "cuda:N" when this process's CUDA sees the board (by bus id)
    bool lost = false;                      // a GPU that stopped answering (fallen off the bus, reset)
    std::optional<double> utilization;      // percent; the CPU row: of all cores together
    std::optional<std::uint64_t> memoryUsed;    // bytes; the CPU row: this process's resident memory
    std::optional<std::uint64_t> memoryTotal;
    std::optional<double> temperature;      // degrees Celsius
    std::optional<double> power;            // watts
    std::optional<double> powerLimit;
};

// One device over one epoch: what devices.csv keeps per epoch and device.
struct DeviceEpochStats
{
    std::string id;                             // "cpu", "gpu0", ...
    std::string cudaId;                         // "cuda:N" where the run's CUDA sees the board, else empty
    std::string name;
    int samples = 0;
    bool lost = false;                          // stopped answering during the epoch
    std::optional<double> meanUtilization;      // percent; the CPU row: of all cores together
    std::optional<std::uint64_t> peakMemory;    // bytes; the CPU row: this process's resident memory
    std::optional<std::uint64_t> memoryTotal;
    std::optional<double> peakTemperature;      // degrees Celsius
    std::optional<double> meanPower;            // watts

    // The CPU row, also where a run over several machines names it by node ("node1:cpu").
    bool isCpu() const;
};

// Names each device by its machine in a run over several: "gpu0" becomes prefix + "gpu0" ("node1:gpu0").
void nameByNode(std::vector<DeviceEpochStats> &devices, const std::string &prefix);

// NVIDIA's management library, loaded at run time (no build dependency): $TRAINLAB_NVML_LIBRARY or
// libnvidia-ml.so.1. A machine without the driver simply has none.
class Nvml
{
public:
    // nullptr, with *why set, when the library or one of its functions cannot be had or it does not start.
    static std::unique_ptr<Nvml> load(std::string *why = nullptr);
    ~Nvml();
    Nvml(const Nvml &) = delete;
    Nvml &operator=(const Nvml &) = delete;

    int count() const;
    DeviceReading read(int index) const;

private:
    struct Api;
    explicit Nvml(std::unique_ptr<Api> api);
    std::unique_ptr<Api> m_api;
};

// Where a monitor's first CPU reading starts counting: the process's start (a status bar's first second is never
// "n/a") or the monitor's construction (a run's figures leave out what came before it).
enum class CpuSince { ProcessStart, Construction };

// This process on the CPU: CPU time since the previous read (the first: since `since`) over the wall time and the
// cores, and resident memory, from /proc/self.
class CpuMonitor
{
public:
    explicit CpuMonitor(CpuSince since = CpuSince::ProcessStart);
    DeviceReading read();

private:
    double m_lastCpuSeconds = 0;
    double m_lastWallSeconds = 0;
};

// The CPU row, then one row per GPU NVML sees.
class DeviceMonitor
{
public:
    explicit DeviceMonitor(CpuSince since = CpuSince::ProcessStart);
    ~DeviceMonitor();
    std::vector<DeviceReading> read();
    bool hasGpus() const { return m_nvml != nullptr; }
    // CUDA's boards by ordinal (cudaBusIds[N] is cuda:N's PCI bus id), so readings name their cuda:N.
    void setCudaBusIds(std::vector<std::string> cudaBusIds) { m_cudaBusIds = std::move(cudaBusIds); }

private:
    CpuMonitor m_cpu;
    std::unique_ptr<Nvml> m_nvml;
    std::vector<std::string> m_cudaBusIds;
};

// NVML numbers GPUs by its own order; CUDA by CUDA_DEVICE_ORDER (fastest first by default) after
// CUDA_VISIBLE_DEVICES. The PCI bus id is what both agree on: each GPU reading whose board is cudaBusIds[N] gets
// cudaId "cuda:N"; a board this process's CUDA cannot see keeps it empty. Ids compare by (domain, bus, device), so
// NVML's "00000000:18:00.0" and CUDA's "0000:18:00.0" are one board.
void labelCudaDevices(std::vector<DeviceReading> &readings, const std::vector<std::string> &cudaBusIds);

// "cpu: 143% of 2 cores, 1.2 GiB resident" / "gpu0 NVIDIA H200: 87%, 40.1 of 139.8 GiB, 61 C, 420 of 700 W".
std::string formatReading(const DeviceReading &reading);

} // namespace trainlab
