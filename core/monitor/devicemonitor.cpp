#include "core/monitor/devicemonitor.h"

#include "core/util/numtext.h"

#include <algorithm>
#include <array>
#include <ctime>
#include <initializer_list>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <type_traits>

#include <dlfcn.h>
#include <unistd.h>

namespace trainlab {

namespace {

// The few NVML types and codes TrainLab uses, as nvml.h declares them.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st *;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlPciInfo_t
{
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
};
struct nvmlUtilization_t
{
    unsigned int gpu, memory;
};
struct nvmlMemory_t
{
    unsigned long long total, free, used;
};

// Seconds since boot, the clock /proc/self/stat's start time counts in.
double bootSeconds()
{
    timespec t{};
    ::clock_gettime(CLOCK_BOOTTIME, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// /proc/self/stat's fields from the third on (after the command in parentheses, which may hold blanks).
std::vector<std::string> statFields()
{
    std::ifstream in("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::size_t close = text.rfind(')');
    std::vector<std::string> fields;
    if (close == std::string::npos || close + 2 > text.size())
        return fields;
    std::istringstream stream(text.substr(close + 2));
    for (std::string field; fields.size() < 20 && stream >> field;)
        fields.push_back(field);
    return fields;
}

// Field N of /proc/self/stat (counted from 1, as proc(5) does) in seconds: a count of clock ticks.
double statSeconds(const std::vector<std::string> &fields, std::initializer_list<std::size_t> numbers)
{
    unsigned long long ticks = 0;
    for (const std::size_t n : numbers)
        ticks += n >= 3 && n - 3 < fields.size() ? std::strtoull(fields[n - 3].c_str(), nullptr, 10) : 0;
    const long perSecond = ::sysconf(_SC_CLK_TCK);
    return perSecond > 0 ? static_cast<double>(ticks) / static_cast<double>(perSecond) : 0.0;
}

// utime + stime of this process (fields 14 and 15).
double processCpuSeconds()
{
    return statSeconds(statFields(), {14, 15});
}

std::string gib(std::uint64_t bytes)
{
    return formatFixed(static_cast<double>(bytes) / 1073741824.0, 1);
}

} // namespace

struct Nvml::Api
{
    void *library = nullptr;
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    nvmlReturn_t (*getCount)(unsigned int *) = nullptr;
    nvmlReturn_t (*getHandle)(unsigned int, nvmlDevice_t *) = nullptr;
    nvmlReturn_t (*getName)(nvmlDevice_t, char *, unsigned int) = nullptr;
    nvmlReturn_t (*getPciInfo)(nvmlDevice_t, nvmlPciInfo_t *) = nullptr;
    nvmlReturn_t (*getUtilization)(nvmlDevice_t, nvmlUtilization_t *) = nullptr;
    nvmlReturn_t (*getMemory)(nvmlDevice_t, nvmlMemory_t *) = nullptr;
    nvmlReturn_t (*getTemperature)(nvmlDevice_t, int, unsigned int *) = nullptr;
    nvmlReturn_t (*getPower)(nvmlDevice_t, unsigned int *) = nullptr;
    nvmlReturn_t (*getPowerLimit)(nvmlDevice_t, unsigned int *) = nullptr;

    ~Api()
    {
        if (shutdown)
            shutdown();
        if (library)
            ::dlclose(library);
    }
};

std::unique_ptr<Nvml> Nvml::load(std::string *why)
{
    const char *env = std::getenv("TRAINLAB_NVML_LIBRARY");
    const std::string path = env && *env ? env : "libnvidia-ml.so.1";
    auto api = std::make_unique<Api>();
    api->library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    auto fail = [&](const std::string &text) -> std::unique_ptr<Nvml> {
        if (why)
            *why = text;
        return nullptr;
    };
    if (!api->library) {
        const char *error = ::dlerror();
        return fail(path + ": " + (error ? error : "cannot be loaded"));
    }
    // Later NVML names a function _v2/_v3 and keeps the old name too: the newest one there is taken.
    auto symbol = [&](auto &out, std::initializer_list<const char *> names) {
        for (const char *name : names) {
            if (void *p = ::dlsym(api->library, name)) {
                static_assert(sizeof out == sizeof p);
                std::memcpy(&out, &p, sizeof p);   // a function's address from dlsym, without a cast warning
                return true;
            }
        }
        return false;
    };
    if (!symbol(api->init, {"nvmlInit_v2", "nvmlInit"}) || !symbol(api->getCount, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"})
        || !symbol(api->getHandle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}))
        return fail(path + ": not NVIDIA's management library (nvmlInit or device functions missing)");
    symbol(api->getName, {"nvmlDeviceGetName"});
    symbol(api->getPciInfo, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"});
    symbol(api->getUtilization, {"nvmlDeviceGetUtilizationRates"});
    symbol(api->getMemory, {"nvmlDeviceGetMemoryInfo"});
    symbol(api->getTemperature, {"nvmlDeviceGetTemperature"});
    symbol(api->getPower, {"nvmlDeviceGetPowerUsage"});
    symbol(api->getPowerLimit, {"nvmlDeviceGetEnforcedPowerLimit"});
    if (api->init() != kNvmlSuccess)
        return fail(path + ": nvmlInit failed (no NVIDIA driver running?)");
    symbol(api->shutdown, {"nvmlShutdown"});
    return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api)
    : m_api(std::move(api))
{}

Nvml::~Nvml() = default;

int Nvml::count() const
{
    unsigned int n = 0;
    return m_api->getCount(&n) == kNvmlSuccess ? static_cast<int>(n) : 0;
}

DeviceReading Nvml::read(int index) const
{
    DeviceReading r;
    r.id = "gpu" + std::to_string(index);
    nvmlDevice_t device = nullptr;
    if (m_api->getHandle(static_cast<unsigned int>(index), &device) != kNvmlSuccess) {
        r.lost = true;
        return r;
    }
    char name[96] = {};
    if (m_api->getName && m_api->getName(device, name, sizeof name) == kNvmlSuccess)
        r.name = name;
    nvmlPciInfo_t pci{};
    if (m_api->getPciInfo && m_api->getPciInfo(device, &pci) == kNvmlSuccess)
        r.busId = pci.busId;
    // Each field on its own: NOT_SUPPORTED (3) on one leaves the others.
    nvmlUtilization_t utilization{};
    if (m_api->getUtilization && m_api->getUtilization(device, &utilization) == kNvmlSuccess)
        r.utilization = utilization.gpu;
    nvmlMemory_t memory{};
    if (m_api->getMemory && m_api->getMemory(device, &memory) == kNvmlSuccess) {
        r.memoryUsed = memory.used;
        r.memoryTotal = memory.total;
    }
    unsigned int value = 0;
    if (m_api->getTemperature && m_api->getTemperature(device, 0, &value) == kNvmlSuccess)
        r.temperature = value;
    if (m_api->getPower && m_api->getPower(device, &value) == kNvmlSuccess)
        r.power = value / 1000.0;
    if (m_api->getPowerLimit && m_api->getPowerLimit(device, &value) == kNvmlSuccess)
        r.powerLimit = value / 1000.0;
    // A device that answers nothing at all has gone.
    r.lost = r.name.empty() && !r.utilization && !r.memoryUsed && !r.temperature && !r.power;
    return r;
}

// The process's start time is /proc/self/stat's field 22, in the same boot-based clock as bootSeconds().
CpuMonitor::CpuMonitor(CpuSince since)
    : m_lastCpuSeconds(since == CpuSince::ProcessStart ? 0.0 : processCpuSeconds())
    , m_lastWallSeconds(since == CpuSince::ProcessStart ? statSeconds(statFields(), {22}) : bootSeconds())
{}

DeviceReading CpuMonitor::read()
{
    DeviceReading r;
    r.id = "cpu";
    const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    r.name = std::to_string(cores) + (cores == 1 ? " core" : " cores");
    const double cpu = processCpuSeconds(), wall = bootSeconds();
    if (wall - m_lastWallSeconds > 0.01)
        r.utilization = 100.0 * (cpu - m_lastCpuSeconds) / (wall - m_lastWallSeconds) / static_cast<double>(cores);
    m_lastCpuSeconds = cpu;
    m_lastWallSeconds = wall;
    std::ifstream statm("/proc/self/statm");
    unsigned long long pages = 0, resident = 0;
    if (statm >> pages >> resident)
        r.memoryUsed = resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const long physical = ::sysconf(_SC_PHYS_PAGES);
    if (physical > 0)
        r.memoryTotal = static_cast<std::uint64_t>(physical) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    return r;
}

DeviceMonitor::DeviceMonitor(CpuSince since)
    : m_cpu(since)
    , m_nvml(Nvml::load())
{}

DeviceMonitor::~DeviceMonitor() = default;

std::vector<DeviceReading> DeviceMonitor::read()
{
    std::vector<DeviceReading> rows{m_cpu.read()};
    if (m_nvml) {
        for (int i = 0, n = m_nvml->count(); i < n; ++i)
            rows.push_back(m_nvml->read(i));
    }
    labelCudaDevices(rows, m_cudaBusIds);
    return rows;
}

namespace {

// "domain:bus:device.function" in hex, the domain 4 or 8 digits wide; nullopt when it is not one.
std::optional<std::array<unsigned long, 3>> parseBusId(const std::string &id)
{
    std::array<unsigned long, 3> parts{};
    std::size_t at = 0;
    for (int k = 0; k < 3; ++k) {
        const std::size_t end = id.find(k < 2 ? ':' : '.', at);
        if (end == std::string::npos || end == at || end - at > 8)
            return std::nullopt;
        char *stop = nullptr;
        const std::string field = id.substr(at, end - at);
        parts[static_cast<std::size_t>(k)] = std::strtoul(field.c_str(), &stop, 16);
        if (*stop != '\0')
            return std::nullopt;
        at = end + 1;
    }
    return parts;
}

} // namespace

void labelCudaDevices(std::vector<DeviceReading> &readings, const std::vector<std::string> &cudaBusIds)
{
    for (DeviceReading &r : readings) {
        r.cudaId.clear();
        const auto board = parseBusId(r.busId);
        for (std::size_t n = 0; board && n < cudaBusIds.size(); ++n) {
            if (parseBusId(cudaBusIds[n]) == board)
                r.cudaId = "cuda:" + std::to_string(n);
        }
    }
}

bool DeviceEpochStats::isCpu() const
{
    return id == "cpu" || (id.size() > 4 && id.compare(id.size() - 4, 4, ":cpu") == 0);
}

void nameByNode(std::vector<DeviceEpochStats> &devices, const std::string &prefix)
{
    for (DeviceEpochStats &d : devices)
        d.id = prefix + d.id;
}

std::string formatReading(const DeviceReading &r)
{
    auto number = [](const std::optional<double> &v, const char *unit) {
        if (!v)
            return std::string("n/a");
        char text[32];
        std::snprintf(text, sizeof text, "%.0f%s", *v, unit);
        return std::string(text);
    };
    if (r.id == "cpu") {
        return "cpu: " + number(r.utilization, "%") + " of " + r.name + ", "
               + (r.memoryUsed ? gib(*r.memoryUsed) + " GiB resident" : std::string("memory n/a"));
    }
    std::string text = r.id + (r.cudaId.empty() ? "" : " (" + r.cudaId + ")") + (r.name.empty() ? "" : " " + r.name) + ": ";
    if (r.lost)
        return text + "lost (not answering)";
    text += number(r.utilization, "%") + ", ";
    text += r.memoryUsed && r.memoryTotal ? gib(*r.memoryUsed) + " of " + gib(*r.memoryTotal) + " GiB" : std::string("memory n/a");
    text += ", " + number(r.temperature, " C");
    text += ", " + (r.power ? number(r.power, "") + (r.powerLimit ? " of " + number(r.powerLimit, " W") : std::string(" W"))
                            : std::string("power n/a"));
    return text;
}

} // namespace trainlab
