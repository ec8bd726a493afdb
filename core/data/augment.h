#pragma once

#include "core/config.h"

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace trainlab {

// One training image's random alteration: a shift (crop from the padded image), a mirror, an erased rectangle
// [eraseTop, eraseBottom) x [eraseLeft, eraseRight) (empty when not erased).
struct AugmentDraw
{
    std::int64_t dy = 0, dx = 0;
    bool flip = false;
    std::int64_t eraseTop = 0, eraseBottom = 0, eraseLeft = 0, eraseRight = 0;
};

// The draws of a whole global batch of `count` images at this step; the same on every machine, replica and
// LibTorch version (mt19937_64 and integer arithmetic only). Empty when the config alters nothing.
std::vector<AugmentDraw> drawAugmentation(const AugmentationConfig &config, std::uint64_t seed, std::int64_t step,
                                          std::int64_t count, std::int64_t height, std::int64_t width);

// Applies draws[first, first + N) to float images [N, C, H, W] on their own device, in one gather per axis.
torch::Tensor applyAugmentation(const torch::Tensor &images, const std::vector<AugmentDraw> &draws, std::int64_t first);

} // namespace trainlab
