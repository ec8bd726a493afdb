// A stand-in for libnvidia-ml.so.1 with scripted readings, for tst_devicemonitor: two H200s; gpu1 does not
// report power (NOT_SUPPORTED); gpu1 is lost (GPU_IS_LOST) while the file named by $FAKE_NVML_GONE exists.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace {

struct Device
{
    int index;
};
Device g_devices[2] = {{0}, {1}};

bool gone(unsigned int index)
{
    const char *flag = std::getenv("FAKE_NVML_GONE");
    return index == 1 && flag && ::access(flag, F_OK) == 0;
}

int indexOf(void *device)
{
    return static_cast<Device *>(device)->index;
}

} // namespace

extern "C" {

struct PciInfo
{
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
};
struct Utilization
{
    unsigned int gpu, memory;
};
struct Memory
{
    unsigned long long total, free, used;
};

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetCount_v2(unsigned int *count)
{
    *count = 2;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device)
{
    if (index > 1)
        return 2;    // INVALID_ARGUMENT
    if (gone(index))
        return 15;   // GPU_IS_LOST
    *device = &g_devices[index];
    return 0;
}
int nvmlDeviceGetName(void *device, char *name, unsigned int length)
{
    std::snprintf(name, length, "Fake H200 #%d", indexOf(device));
    return 0;
}
int nvmlDeviceGetPciInfo_v3(void *device, PciInfo *pci)
{
    std::memset(pci, 0, sizeof *pci);
    std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", 0x18 + indexOf(device));
    return 0;
}
int nvmlDeviceGetUtilizationRates(void *device, Utilization *u)
{
    u->gpu = indexOf(device) == 0 ? 87 : 3;
    u->memory = 40;
    return 0;
}
int nvmlDeviceGetMemoryInfo(void *device, Memory *m)
{
    m->total = 150ull << 30;
    m->used = indexOf(device) == 0 ? (40ull << 30) : (1ull << 30);
    m->free = m->total - m->used;
    return 0;
}
int nvmlDeviceGetTemperature(void *device, int, unsigned int *celsius)
{
    *celsius = indexOf(device) == 0 ? 61 : 33;
    return 0;
}
int nvmlDeviceGetPowerUsage(void *device, unsigned int *milliwatts)
{
    if (indexOf(device) == 1)
        return 3;    // NOT_SUPPORTED
    *milliwatts = 420000;
    return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void *device, unsigned int *milliwatts)
{
    if (indexOf(device) == 1)
        return 3;
    *milliwatts = 700000;
    return 0;
}

} // extern "C"
