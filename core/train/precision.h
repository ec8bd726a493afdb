#pragma once

#include <c10/core/Device.h>

#include <string>

namespace trainlab {

// Sets the calling thread's autocast for a run's precision ("fp32" or "bf16") on device. Autocast is
// thread-local, so each worker calls this; its weight-cast cache stays off (see precision.cpp).
void setThreadPrecision(const c10::Device &device, const std::string &precision);

} // namespace trainlab
