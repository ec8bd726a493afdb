// libFuzzer target: the IDX reader (raw and gzip) on arbitrary bytes, as images and as labels.
#include "core/data/idx.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace {

// The reader takes a path; it tells gzip from raw by the first two bytes.
std::string writeInput(const std::string &name, const std::uint8_t *data, std::size_t size)
{
    static const auto dir = [] {
        const auto d = std::filesystem::temp_directory_path() / ("trainlab-fuzz-idx-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    const std::string path = (dir / name).string();
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (!f)
        __builtin_trap();
    if (size > 0 && std::fwrite(data, 1, size, f) != size)
        __builtin_trap();
    std::fclose(f);
    return path;
}

void readBoth(const std::string &path)
{
    try {
        const trainlab::IdxImages images = trainlab::readIdxImages(path);
        if (images.pixels.size() != static_cast<std::size_t>(images.count * images.rows * images.cols))
            __builtin_trap();
    } catch (const trainlab::DataError &) {
    }
    try {
        (void)trainlab::readIdxLabels(path);
    } catch (const trainlab::DataError &) {
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    readBoth(writeInput("input", data, size));
    return 0;
}
