#pragma once

#include "core/config.h"

#include <cstdint>
#include <vector>

namespace trainlab {

// `count` greyscale images (bytes, row-major) altered as the engine alters the first `count` images of a global
// batch at this step (drawAugmentation + applyAugmentation on [0, 1] floats), back as bytes. Without LibTorch in
// its header, for front-ends that show what augmentation does.
std::vector<std::uint8_t> augmentImageBytes(const AugmentationConfig &config, std::uint64_t seed, std::int64_t step,
                                            const std::vector<std::uint8_t> &pixels, std::int64_t count,
                                            std::int64_t height, std::int64_t width);

} // namespace trainlab
