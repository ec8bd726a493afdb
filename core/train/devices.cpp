#include "core/train/devices.h"

#include <torch/torch.h>
#include <torch/version.h>

#ifdef TRAINLAB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include <cstdio>
#include <thread>
#include <unistd.h>

namespace trainlab {

int logicalCores()
{
    const unsigned n = std::thread::hardware_concurrency();
    return n ? static_cast<int>(n) : 1;
}

std::string torchVersion()
{
    return TORCH_VERSION;
}

std::string buildDescription()
{
#ifdef TRAINLAB_WITH_CUDA
    return "CUDA build, LibTorch " + torchVersion();
#else
    return "CPU build, LibTorch " + torchVersion();
#endif
}

std::vector<DeviceInfo> listDevices()
{
    std::vector<DeviceInfo> devices;
    DeviceInfo cpu;
    cpu.id = "cpu";
    cpu.cores = logicalCores();
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long pageSize = ::sysconf(_SC_PAGE_SIZE);
    cpu.memoryBytes = pages > 0 && pageSize > 0 ? static_cast<std::uint64_t>(pages) * pageSize : 0;
    cpu.name = "CPU (" + std::to_string(cpu.cores) + " logical cores)";
    devices.push_back(cpu);
#ifdef TRAINLAB_WITH_CUDA
    const int count = static_cast<int>(torch::cuda::device_count());
    for (int i = 0; i < count; ++i) {
        const cudaDeviceProp *prop = at::cuda::getDeviceProperties(i);
        DeviceInfo gpu;
        gpu.id = "cuda:" + std::to_string(i);
        gpu.name = prop->name;
        gpu.memoryBytes = prop->totalGlobalMem;
        char bus[32];
        std::snprintf(bus, sizeof bus, "%08X:%02X:%02X.0", static_cast<unsigned>(prop->pciDomainID),
                      static_cast<unsigned>(prop->pciBusID), static_cast<unsigned>(prop->pciDeviceID));
        gpu.busId = bus;
        devices.push_back(gpu);
    }
#endif
    return devices;
}

std::vector<std::string> cudaBusIds()
{
    std::vector<std::string> ids;
    for (const DeviceInfo &d : listDevices()) {
        if (!d.busId.empty())
            ids.push_back(d.busId);
    }
    return ids;
}

std::string checkDevice(const std::string &id)
{
    if (id == "cpu")
        return {};
    if (id.rfind("cuda:", 0) == 0) {
        const std::string index = id.substr(5);
        if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos || index.size() > 4)
            return "is not a device name (use \"cpu\" or \"cuda:N\")";
#ifdef TRAINLAB_WITH_CUDA
        const long count = static_cast<long>(torch::cuda::device_count());
#else
        const long count = 0;
#endif
        if (std::stol(index) >= count)
            return count == 0 ? std::string("is not on this machine (no CUDA device available"
#ifndef TRAINLAB_WITH_CUDA
                                             "; this is a CPU-only build"
#endif
                                             ")")
                              : "is not on this machine (it has " + std::to_string(count) + " CUDA devices)";
        return {};
    }
    return "is not a device name (use \"cpu\" or \"cuda:N\")";
}

} // namespace trainlab
