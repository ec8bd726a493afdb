#include "core/data/augment.h"
#include "core/data/augmentimages.h"

#include <torch/torch.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace trainlab {

namespace {

std::uint64_t splitMix(std::uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

// [0, 1) from 53 random bits, the same everywhere (std::uniform_real_distribution is not specified exactly).
double unit(std::mt19937_64 &rng)
{
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

std::int64_t below(std::mt19937_64 &rng, std::int64_t n)
{
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
}

} // namespace

std::vector<AugmentDraw> drawAugmentation(const AugmentationConfig &config, std::uint64_t seed, std::int64_t step,
                                          std::int64_t count, std::int64_t height, std::int64_t width)
{
    std::vector<AugmentDraw> draws;
    if (!config.any())
        return draws;
    // Its own stream, apart from the epoch permutation's (seed * golden + epoch + 1).
    std::mt19937_64 rng(splitMix(splitMix(seed) ^ static_cast<std::uint64_t>(step)));
    const std::int64_t pad = config.cropPadding;
    draws.resize(static_cast<std::size_t>(count));
    for (auto &d : draws) {
        if (pad > 0) {
            d.dy = below(rng, 2 * pad + 1) - pad;
            d.dx = below(rng, 2 * pad + 1) - pad;
        }
        if (config.flip)
            d.flip = (rng() >> 63) != 0;
        if (config.erasing > 0 && unit(rng) < config.erasing) {
            // torchvision's RandomErasing: area 2-33 %, aspect ratio log-uniform in [0.3, 3.3], ten tries to fit.
            const double area = static_cast<double>(height * width);
            for (int attempt = 0; attempt < 10; ++attempt) {
                const double target = area * (0.02 + unit(rng) * (0.33 - 0.02));
                const double ratio = std::exp(std::log(0.3) + unit(rng) * (std::log(3.3) - std::log(0.3)));
                const auto h = static_cast<std::int64_t>(std::lround(std::sqrt(target * ratio)));
                const auto w = static_cast<std::int64_t>(std::lround(std::sqrt(target / ratio)));
                if (h < 1 || w < 1 || h > height || w > width)
                    continue;
                d.eraseTop = below(rng, height - h + 1);
                d.eraseLeft = below(rng, width - w + 1);
                d.eraseBottom = d.eraseTop + h;
                d.eraseRight = d.eraseLeft + w;
                break;
            }
        }
    }
    return draws;
}

torch::Tensor applyAugmentation(const torch::Tensor &images, const std::vector<AugmentDraw> &draws, std::int64_t first)
{
    if (draws.empty())
        return images;
    const std::int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
    if (first < 0 || first + n > static_cast<std::int64_t>(draws.size()))
        throw std::logic_error("applyAugmentation: draws for images " + std::to_string(first) + " to "
                               + std::to_string(first + n) + " of " + std::to_string(draws.size()));
    // The few numbers per image travel to the device; the index grids are made there.
    torch::Tensor params = torch::empty({n, 7}, torch::kInt64);
    auto *p = params.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i) {
        const AugmentDraw &d = draws[static_cast<std::size_t>(first + i)];
        const std::int64_t row[7] = {d.dy, d.dx, d.flip ? 1 : 0, d.eraseTop, d.eraseBottom, d.eraseLeft, d.eraseRight};
        std::copy(row, row + 7, p + i * 7);
    }
    params = params.to(images.device());
    const auto idx = torch::TensorOptions().dtype(torch::kInt64).device(images.device());
    const torch::Tensor r = torch::arange(h, idx).unsqueeze(0);   // [1, H]
    const torch::Tensor col = torch::arange(w, idx).unsqueeze(0); // [1, W]
    const torch::Tensor flip = params.select(1, 2).unsqueeze(1).to(torch::kBool);
    // Output pixel (i, j) reads input (i + dy, j' + dx), j' = j or W-1-j; outside the image it is 0 (the padding).
    const torch::Tensor rows = r + params.select(1, 0).unsqueeze(1);
    const torch::Tensor cols = torch::where(flip, (w - 1) - col, col) + params.select(1, 1).unsqueeze(1);
    const torch::Tensor rowIn = rows.ge(0).logical_and(rows.lt(h));
    const torch::Tensor colIn = cols.ge(0).logical_and(cols.lt(w));
    torch::Tensor out = images.gather(2, rows.clamp(0, h - 1).view({n, 1, h, 1}).expand({n, c, h, w}))
                            .gather(3, cols.clamp(0, w - 1).view({n, 1, 1, w}).expand({n, c, h, w}));
    const torch::Tensor erased = r.ge(params.select(1, 3).unsqueeze(1)).logical_and(r.lt(params.select(1, 4).unsqueeze(1)))
                                     .view({n, 1, h, 1})
                                     .logical_and(col.ge(params.select(1, 5).unsqueeze(1))
                                                      .logical_and(col.lt(params.select(1, 6).unsqueeze(1)))
                                                      .view({n, 1, 1, w}));
    const torch::Tensor keep = rowIn.view({n, 1, h, 1}).logical_and(colIn.view({n, 1, 1, w})).logical_and(erased.logical_not());
    return out.mul_(keep.to(out.scalar_type()));
}

std::vector<std::uint8_t> augmentImageBytes(const AugmentationConfig &config, std::uint64_t seed, std::int64_t step,
                                            const std::vector<std::uint8_t> &pixels, std::int64_t count,
                                            std::int64_t height, std::int64_t width)
{
    if (count < 0 || height < 1 || width < 1 || pixels.size() != static_cast<std::size_t>(count * height * width))
        throw std::invalid_argument("augmentImageBytes: " + std::to_string(pixels.size()) + " bytes are not "
                                    + std::to_string(count) + " images of " + std::to_string(height) + "x"
                                    + std::to_string(width));
    const std::vector<AugmentDraw> draws = drawAugmentation(config, seed, step, count, height, width);
    if (draws.empty())
        return pixels;
    const torch::Tensor bytes = torch::from_blob(const_cast<std::uint8_t *>(pixels.data()), {count, 1, height, width},
                                                 torch::kUInt8);
    const torch::Tensor out = applyAugmentation(bytes.to(torch::kFloat32).div_(255.0), draws, 0)
                                  .mul_(255.0)
                                  .round_()
                                  .clamp_(0, 255)
                                  .to(torch::kUInt8)
                                  .contiguous();
    return std::vector<std::uint8_t>(out.data_ptr<std::uint8_t>(), out.data_ptr<std::uint8_t>() + out.numel());
}

} // namespace trainlab
