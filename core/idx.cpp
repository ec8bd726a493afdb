#include "core/idx.h"

#include "core/datasetstore.h"
#include "core/paths.h"

#include <zlib.h>

#include <filesystem>

namespace trainlab {

namespace {

constexpr std::uint32_t kImagesMagic = 2051;
constexpr std::uint32_t kLabelsMagic = 2049;

std::string readMaybeGzip(const std::string &path, std::size_t maxBytes = SIZE_MAX)
{
    if (!std::filesystem::is_regular_file(path))
        throw DataError(path + ": file not found");
    gzFile file = gzopen(path.c_str(), "rb");
    if (!file)
        throw DataError(path + ": cannot open");
    std::string data;
    char buffer[1 << 16];
    while (data.size() < maxBytes) {
        const int n = gzread(file, buffer, sizeof buffer);
        if (n < 0) {
            int code = 0;
            const std::string why = gzerror(file, &code);
            gzclose(file);
            throw DataError(path + ": corrupt gzip data (" + why + ")");
        }
        if (n == 0)
            break;
        data.append(buffer, static_cast<std::size_t>(n));
    }
    int code = 0;
    const char *why = gzerror(file, &code);
    if (code != Z_OK && code != Z_STREAM_END) {
        const std::string message = path + ": corrupt gzip data (" + why + ")";
        gzclose(file);
        throw DataError(message);
    }
    if (gzclose(file) != Z_OK && maxBytes == SIZE_MAX)
        throw DataError(path + ": corrupt gzip data (truncated or bad checksum)");
    return data;
}

std::uint32_t bigEndian(const std::string &data, std::size_t offset)
{
    const auto *p = reinterpret_cast<const unsigned char *>(data.data()) + offset;
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

void checkHeader(const std::string &path, const std::string &data, std::uint32_t magic, std::size_t dims)
{
    const std::size_t header = 4 + 4 * dims;
    if (data.size() >= 4 && bigEndian(data, 0) != magic)
        throw DataError(path + ": wrong magic number " + std::to_string(bigEndian(data, 0)) + ", expected "
                        + std::to_string(magic) + (magic == kImagesMagic ? " (IDX images)" : " (IDX labels)"));
    if (data.size() < header)
        throw DataError(path + ": too short for an IDX header (" + std::to_string(data.size()) + " bytes)");
}

void checkSize(const std::string &path, std::size_t actual, std::uint64_t expected)
{
    if (actual < expected)
        throw DataError(path + ": truncated: header says " + std::to_string(expected) + " bytes of data, file has "
                        + std::to_string(actual));
    if (actual > expected)
        throw DataError(path + ": " + std::to_string(actual - expected)
                        + " bytes more than its header says (" + std::to_string(expected) + ")");
}

} // namespace

IdxImages readIdxImages(const std::string &path)
{
    const std::string data = readMaybeGzip(path);
    checkHeader(path, data, kImagesMagic, 3);
    IdxImages images;
    images.count = bigEndian(data, 4);
    images.rows = bigEndian(data, 8);
    images.cols = bigEndian(data, 12);
    if (images.rows == 0 || images.cols == 0 || images.rows > 4096 || images.cols > 4096)
        throw DataError(path + ": bad image size " + std::to_string(images.rows) + "x" + std::to_string(images.cols));
    const std::uint64_t expected = std::uint64_t(images.count) * images.rows * images.cols;
    checkSize(path, data.size() - 16, expected);
    images.pixels.assign(data.begin() + 16, data.end());
    return images;
}

std::vector<std::uint8_t> readIdxLabels(const std::string &path)
{
    const std::string data = readMaybeGzip(path);
    checkHeader(path, data, kLabelsMagic, 1);
    const std::uint64_t count = bigEndian(data, 4);
    checkSize(path, data.size() - 8, count);
    return std::vector<std::uint8_t>(data.begin() + 8, data.end());
}

DatasetFiles findDatasetFiles(const std::string &folder)
{
    DatasetFiles files;
    auto find = [&](const char *base, std::string &out) {
        for (const std::string &name : {std::string(base) + ".gz", std::string(base)}) {
            const std::string candidate = (std::filesystem::path(folder) / name).string();
            if (std::filesystem::is_regular_file(candidate)) {
                out = candidate;
                return;
            }
        }
        files.missing.push_back(std::string(base) + "[.gz]");
    };
    find("train-images-idx3-ubyte", files.trainImages);
    find("train-labels-idx1-ubyte", files.trainLabels);
    find("t10k-images-idx3-ubyte", files.testImages);
    find("t10k-labels-idx1-ubyte", files.testLabels);
    return files;
}

std::string builtinSampleDir()
{
    return resourcesDir() + "/sample";
}

std::string groupedThousands(std::int64_t n)
{
    std::string s = std::to_string(n);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
        s.insert(static_cast<std::size_t>(i), ",");
    return s;
}

DatasetStatus inspectDataset(const std::string &path)
{
    DatasetStatus status;
    const std::string folder = resolveDatasetPath(path);
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) {
        status.message = "no such folder: " + folder;
        return status;
    }
    const DatasetFiles files = findDatasetFiles(folder);
    if (!files.missing.empty()) {
        status.message = "missing:";
        for (const auto &m : files.missing)
            status.message += " " + m;
        return status;
    }
    auto count = [](const std::string &file, std::uint32_t magic) -> std::int64_t {
        const std::string head = readMaybeGzip(file, 16);
        checkHeader(file, head, magic, 1);
        return bigEndian(head, 4);
    };
    try {
        status.trainCount = count(files.trainImages, kImagesMagic);
        status.testCount = count(files.testImages, kImagesMagic);
        const std::int64_t trainLabels = count(files.trainLabels, kLabelsMagic);
        const std::int64_t testLabels = count(files.testLabels, kLabelsMagic);
        if (trainLabels != status.trainCount || testLabels != status.testCount) {
            status.message = "image and label counts differ";
            return status;
        }
    } catch (const DataError &e) {
        status.message = e.what();
        return status;
    }
    status.ok = true;
    status.message = groupedThousands(status.trainCount) + " train / " + groupedThousands(status.testCount) + " test found";
    return status;
}

} // namespace trainlab
