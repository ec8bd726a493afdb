#pragma once

#include <string>

// Declared only: the run's record asks for availability without LibTorch's headers.
namespace at {
class Tensor;
}

namespace trainlab {

// Whether this build and CPU run oneDNN's Winograd convolutions (oneDNN 2.x on AVX-512; oneDNN 3 dropped them).
bool winogradAvailable();
// Why not, for the log and summary.json; empty where winogradAvailable().
std::string winogradUnavailableReason();

// conv2d(input, weight, bias, stride 1, padding 1) of a 3×3 kernel in fp32 on the CPU through oneDNN's Winograd
// F(4×4, 3×3) kernels, with its own backward (input, weight and bias gradients). The output and the input's
// gradient keep the input's layout (NCHW or NHWC), the weight's gradient the weight's. An undefined tensor where
// the kernels do not apply (another dtype, device or shape, or no Winograd kernel for it): call conv2d then.
at::Tensor winogradConv2d(const at::Tensor &input, const at::Tensor &weight, const at::Tensor &bias);

} // namespace trainlab
