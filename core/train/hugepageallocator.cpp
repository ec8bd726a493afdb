#include "core/train/hugepageallocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace trainlab {

namespace {

constexpr std::size_t kHugePage = std::size_t(2) << 20;

// One deleter for every size: oneDNN allocates through the raw interface, which needs it (raw_deleter()).
void freeCpu(void *data)
{
    c10::free_cpu(data);
}

c10::DataPtr allocateCpu(std::size_t bytes)
{
    void *data = nullptr;
    // Small buffers, and a failed large one (whose out-of-memory error LibTorch's own allocator raises).
    if (bytes < kHugePage || posix_memalign(&data, kHugePage, bytes) != 0)
        data = c10::alloc_cpu(bytes);
#if defined(MADV_HUGEPAGE)
    else
        madvise(data, bytes, MADV_HUGEPAGE);
#endif
    return {data, data, &freeCpu, c10::Device(c10::DeviceType::CPU)};
}

template <typename Base, typename = void>
struct HasCopyData : std::false_type
{
};
template <typename Base>
struct HasCopyData<Base, std::void_t<decltype(&Base::copy_data)>> : std::true_type
{
};

// LibTorch 2.3 made allocate() non-const and added copy_data(): the specialisation matching the headers is used.
template <typename Base,
          bool ConstAllocate = std::is_same_v<decltype(&Base::allocate), c10::DataPtr (Base::*)(std::size_t) const>,
          bool CopyData = HasCopyData<Base>::value>
class HugePageAllocator;

template <typename Base>
class HugePageAllocator<Base, true, false> : public Base
{
public:
    c10::DataPtr allocate(std::size_t bytes) const override { return allocateCpu(bytes); }
    c10::DeleterFnPtr raw_deleter() const override { return &freeCpu; }
};

template <typename Base>
class HugePageAllocator<Base, false, true> : public Base
{
public:
    c10::DataPtr allocate(std::size_t bytes) override { return allocateCpu(bytes); }
    c10::DeleterFnPtr raw_deleter() const override { return &freeCpu; }
    void copy_data(void *dest, const void *src, std::size_t count) const override
    {
        this->default_copy_data(dest, src, count);
    }
};

bool hugePagesWanted()
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const char *value = std::getenv("TRAINLAB_HUGEPAGES");
    return !value || std::strcmp(value, "0") != 0;
#else
    return false;
#endif
}

} // namespace

bool useHugePagesForLargeTensors()
{
    static const bool installed = [] {
        if (!hugePagesWanted())
            return false;
        // Never deleted: LibTorch may still allocate while statics are destroyed at exit.
        static auto *allocator = new HugePageAllocator<c10::Allocator>();
        c10::SetCPUAllocator(allocator);
        return true;
    }();
    return installed;
}

std::string hostMemoryDescription()
{
    if (!useHugePagesForLargeTensors())
        return "host memory: LibTorch's allocator (TRAINLAB_HUGEPAGES=0)";
    std::string mode;
    std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), mode);
    const std::string text = "host memory: tensors of 2 MB and more on transparent huge pages";
    if (mode.find("[never]") != std::string::npos)
        return text + ", but the system has them off (/sys/kernel/mm/transparent_hugepage/enabled: never)";
    return text;
}

} // namespace trainlab
