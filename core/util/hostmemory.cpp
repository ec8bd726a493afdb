#include "core/util/hostmemory.h"

#include <cstdlib>
#include <mutex>

// After a libc header: __GLIBC__ comes from <features.h>.
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace trainlab {

void keepLargeBuffersInHeap()
{
#if defined(__GLIBC__)
    static std::once_flag once;
    std::call_once(once, [] {
        // The user's own malloc tuning wins.
        if (std::getenv("GLIBC_TUNABLES") || std::getenv("MALLOC_MMAP_THRESHOLD_"))
            return;
        // Measured on ResNet-18, batch 128, 2 threads: 65 img/s with glibc's defaults, 106 with these.
        constexpr int kBytes = 256 << 20;
        mallopt(M_MMAP_THRESHOLD, kBytes);
        mallopt(M_TRIM_THRESHOLD, kBytes);
    });
#endif
}

} // namespace trainlab
