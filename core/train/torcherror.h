#pragma once

#include <exception>
#include <string>

namespace trainlab {

// An exception's message without LibTorch's C++ backtrace (c10::Error), for the user's eyes.
std::string errorText(const std::exception &e);

} // namespace trainlab
