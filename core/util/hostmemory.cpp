#include "core/util/hostmemory.h"

#include <cstdlib>
#include <limits>
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
        mallopt(M_MMAP_THRESHOLD, 256 << 20);
        // A step frees more than 256 MB at once: trimming there faulted it all in again next step (3x the page
        // faults, 9.5 -> 15 s/epoch after a warm-up). releaseFreeHeap() gives it back when the run ends.
        mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
    });
#endif
}

void releaseFreeHeap()
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

} // namespace trainlab
