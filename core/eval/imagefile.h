#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

// 8-bit grey pixels, row-major.
struct GrayImage
{
    int width = 0;
    int height = 0;
    std::vector<std::uint8_t> pixels;
};

// Bounds checked before anything is decoded: a picture is not a memory attack.
constexpr std::int64_t kMaxImageFileBytes = 64ll << 20;
constexpr std::int64_t kMaxImagePixels = 40'000'000;

// PNG, JPEG, BMP, PGM/PPM, GIF (first frame), TGA, PSD, HDR through Debian's stb_image, as grey. Throws
// runtime_error naming origin: not an image, too large, truncated, or no decoder in this build.
GrayImage decodeImage(const std::string &bytes, const std::string &origin);
// Reads and decodes path; a missing, unreadable or oversized file is named.
GrayImage readImageFile(const std::string &path);

// Fashion-MNIST's objects are light on a black background; a photo on a light background is the other way.
// True when the image's border is, on average, lighter than mid-grey.
bool looksInverted(const GrayImage &image);

// The image as Fashion-MNIST's pipeline made its 28×28 pictures: optionally negated, trimmed to the object
// (pixels more than 5% away from the border's colour), longest side scaled to size, centred on the background.
GrayImage fashionInput(const GrayImage &image, bool invert, int size = 28);

} // namespace trainlab
