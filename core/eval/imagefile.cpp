#include "core/eval/imagefile.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>

#ifdef TRAINLAB_WITH_STB
#include <stb_image.h>
#endif

namespace trainlab {

namespace {

// Box-filter resampling along one axis: each output sample averages the input it covers, so shrinking a
// photo keeps thin lines and enlarging a small one repeats pixels.
std::vector<float> resample(const std::vector<float> &in, int inW, int inH, int outW, int outH)
{
    std::vector<float> out(static_cast<std::size_t>(outW) * static_cast<std::size_t>(outH), 0.0f);
    const double sx = static_cast<double>(inW) / outW, sy = static_cast<double>(inH) / outH;
    for (int oy = 0; oy < outH; ++oy) {
        const double y0 = oy * sy, y1 = (oy + 1) * sy;
        for (int ox = 0; ox < outW; ++ox) {
            const double x0 = ox * sx, x1 = (ox + 1) * sx;
            double sum = 0.0, area = 0.0;
            for (int y = static_cast<int>(y0); y < std::min(inH, static_cast<int>(std::ceil(y1))); ++y) {
                const double wy = std::min(y1, y + 1.0) - std::max(y0, static_cast<double>(y));
                for (int x = static_cast<int>(x0); x < std::min(inW, static_cast<int>(std::ceil(x1))); ++x) {
                    const double w = wy * (std::min(x1, x + 1.0) - std::max(x0, static_cast<double>(x)));
                    sum += w * in[static_cast<std::size_t>(y) * static_cast<std::size_t>(inW) + static_cast<std::size_t>(x)];
                    area += w;
                }
            }
            out[static_cast<std::size_t>(oy) * static_cast<std::size_t>(outW) + static_cast<std::size_t>(ox)]
                = area > 0.0 ? static_cast<float>(sum / area) : 0.0f;
        }
    }
    return out;
}

double borderMean(const GrayImage &image)
{
    double sum = 0.0;
    std::int64_t count = 0;
    for (int y = 0; y < image.height; ++y) {
        for (int x = 0; x < image.width; ++x) {
            if (y != 0 && y != image.height - 1 && x != 0 && x != image.width - 1)
                continue;
            sum += image.pixels[static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width) + static_cast<std::size_t>(x)];
            ++count;
        }
    }
    return count ? sum / static_cast<double>(count) : 0.0;
}

} // namespace

GrayImage decodeImage(const std::string &bytes, const std::string &origin)
{
    if (bytes.empty())
        throw std::runtime_error(origin + ": an empty file, not an image");
    if (static_cast<std::int64_t>(bytes.size()) > kMaxImageFileBytes)
        throw std::runtime_error(origin + ": " + std::to_string(bytes.size() >> 20) + " MiB is more than the "
                                 + std::to_string(kMaxImageFileBytes >> 20) + " MiB an image may have");
#ifdef TRAINLAB_WITH_STB
    const auto *data = reinterpret_cast<const stbi_uc *>(bytes.data());
    const int length = static_cast<int>(bytes.size());
    int w = 0, h = 0, channels = 0;
    if (!stbi_info_from_memory(data, length, &w, &h, &channels))
        throw std::runtime_error(origin + ": not an image TrainLab can read (PNG, JPEG, BMP, PGM/PPM, GIF): "
                                 + std::string(stbi_failure_reason() ? stbi_failure_reason() : "unknown format"));
    if (w <= 0 || h <= 0 || static_cast<std::int64_t>(w) * h > kMaxImagePixels)
        throw std::runtime_error(origin + ": " + std::to_string(w) + " x " + std::to_string(h) + " pixels is more than the "
                                 + std::to_string(kMaxImagePixels / 1'000'000) + " million an image may have");
    std::unique_ptr<stbi_uc, void (*)(void *)> pixels(stbi_load_from_memory(data, length, &w, &h, &channels, 1),
                                                     stbi_image_free);
    if (!pixels)
        throw std::runtime_error(origin + ": cannot decode the image: "
                                 + std::string(stbi_failure_reason() ? stbi_failure_reason() : "unknown error"));
    GrayImage image;
    image.width = w;
    image.height = h;
    image.pixels.assign(pixels.get(), pixels.get() + static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
    return image;
#else
    throw std::runtime_error(origin + ": this TrainLab was built without an image decoder (install libstb-dev and rebuild)");
#endif
}

GrayImage readImageFile(const std::string &path)
{
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
        throw std::runtime_error(path + ": cannot open the file");
    const std::streamoff size = in.tellg();
    if (size < 0)
        throw std::runtime_error(path + ": cannot read the file (a folder?)");
    if (size > kMaxImageFileBytes)
        throw std::runtime_error(path + ": " + std::to_string(size >> 20) + " MiB is more than the "
                                 + std::to_string(kMaxImageFileBytes >> 20) + " MiB an image may have");
    std::string bytes(static_cast<std::size_t>(size), '\0');
    in.seekg(0);
    if (!in.read(bytes.data(), size))
        throw std::runtime_error(path + ": cannot read the file");
    return decodeImage(bytes, path);
}

bool looksInverted(const GrayImage &image)
{
    return !image.pixels.empty() && borderMean(image) > 127.5;
}

GrayImage fashionInput(const GrayImage &image, bool invert, int size)
{
    if (image.width <= 0 || image.height <= 0
        || image.pixels.size() != static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height))
        throw std::invalid_argument("fashionInput: an empty or inconsistent image");
    if (size < 1)
        throw std::invalid_argument("fashionInput: size must be positive");
    std::vector<float> v(image.pixels.begin(), image.pixels.end());
    if (invert) {
        for (float &p : v)
            p = 255.0f - p;
    }
    const double background = invert ? 255.0 - borderMean(image) : borderMean(image);
    const double threshold = 0.05 * 255.0;
    int left = image.width, right = -1, top = image.height, bottom = -1;
    for (int y = 0; y < image.height; ++y) {
        for (int x = 0; x < image.width; ++x) {
            if (std::abs(v[static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width) + static_cast<std::size_t>(x)] - background) <= threshold)
                continue;
            left = std::min(left, x);
            right = std::max(right, x);
            top = std::min(top, y);
            bottom = std::max(bottom, y);
        }
    }
    if (right < 0) {
        left = top = 0;
        right = image.width - 1;
        bottom = image.height - 1;
    }
    const int cw = right - left + 1, ch = bottom - top + 1;
    std::vector<float> crop(static_cast<std::size_t>(cw) * static_cast<std::size_t>(ch));
    for (int y = 0; y < ch; ++y)
        for (int x = 0; x < cw; ++x)
            crop[static_cast<std::size_t>(y) * static_cast<std::size_t>(cw) + static_cast<std::size_t>(x)]
                = v[static_cast<std::size_t>(y + top) * static_cast<std::size_t>(image.width) + static_cast<std::size_t>(x + left)];
    const int outW = cw >= ch ? size : std::max(1, static_cast<int>(std::lround(static_cast<double>(cw) * size / ch)));
    const int outH = ch >= cw ? size : std::max(1, static_cast<int>(std::lround(static_cast<double>(ch) * size / cw)));
    const std::vector<float> scaled = resample(crop, cw, ch, outW, outH);
    GrayImage out;
    out.width = out.height = size;
    out.pixels.assign(static_cast<std::size_t>(size) * static_cast<std::size_t>(size),
                      static_cast<std::uint8_t>(std::clamp(std::lround(background), 0l, 255l)));
    const int ox = (size - outW) / 2, oy = (size - outH) / 2;
    for (int y = 0; y < outH; ++y)
        for (int x = 0; x < outW; ++x)
            out.pixels[static_cast<std::size_t>(y + oy) * static_cast<std::size_t>(size) + static_cast<std::size_t>(x + ox)]
                = static_cast<std::uint8_t>(std::clamp(std::lround(scaled[static_cast<std::size_t>(y) * static_cast<std::size_t>(outW) + static_cast<std::size_t>(x)]), 0l, 255l));
    return out;
}

} // namespace trainlab
