#include "core/train/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace trainlab {

void setThreadPrecision(const c10::Device &device, const std::string &precision)
{
    const bool bf16 = precision == "bf16";
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(device.type(), bf16);
    if (bf16)
        at::autocast::set_autocast_dtype(device.type(), at::kBFloat16);
#else
    if (device.is_cuda()) {
        at::autocast::set_enabled(bf16);
        if (bf16)
            at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    } else {
        at::autocast::set_cpu_enabled(bf16);
        if (bf16)
            at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    }
#endif
    // The cache keeps each weight's first bf16 copy until Python's context manager clears it; C++ has no
    // such exit, so with it on every step after the first would run on step 1's weights.
    at::autocast::clear_cache();
    at::autocast::set_autocast_cache_enabled(false);
}

} // namespace trainlab
