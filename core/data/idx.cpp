#include "core/data/idx.h"

#include "core/data/datasetstore.h"
#include "core/util/paths.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace trainlab {

namespace {

constexpr std::uint32_t kImagesMagic = 2051;
constexpr std::uint32_t kLabelsMagic = 2049;
// ResNet-18 here trains on whole images; beyond this a batch no longer fits a workstation's memory.
constexpr std::int64_t kMaxImageSide = 512;

// A raw or gzip IDX file, opened only when it is a regular file (a FIFO would block, /dev/zero never ends).
// Inflated here rather than by gzread, which silently skips whatever follows the gzip stream.
class IdxReader
{
public:
    explicit IdxReader(const std::string &path) : m_path(path)
    {
        std::error_code ec;
        const auto status = std::filesystem::status(path, ec);
        if (ec && ec != std::errc::no_such_file_or_directory)
            throw DataError(path + ": cannot be read: " + ec.message());
        if (!std::filesystem::exists(status))
            throw DataError(path + ": file not found");
        if (!std::filesystem::is_regular_file(status))
            throw DataError(path + ": not a regular file");
        m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (m_fd < 0)
            throw DataError(path + ": cannot open: " + std::strerror(errno));
        try {
            fill();
        } catch (...) {
            ::close(m_fd);
            throw;
        }
        m_gzip = m_inSize >= 2 && static_cast<unsigned char>(m_in[0]) == 0x1f && static_cast<unsigned char>(m_in[1]) == 0x8b;
        if (m_gzip && inflateInit2(&m_zs, 16 + MAX_WBITS) != Z_OK) {
            ::close(m_fd);
            throw DataError(path + ": cannot start inflating");
        }
        m_zs.next_in = reinterpret_cast<Bytef *>(m_in);
        m_zs.avail_in = static_cast<uInt>(m_inSize);
    }
    ~IdxReader()
    {
        if (m_gzip)
            inflateEnd(&m_zs);
        if (m_fd >= 0)
            ::close(m_fd);
    }
    IdxReader(const IdxReader &) = delete;
    IdxReader &operator=(const IdxReader &) = delete;

    // Appends up to n bytes to out; fewer only where the data ends.
    void read(std::string &out, std::uint64_t n)
    {
        char buffer[1 << 16];
        while (n > 0 && !m_ended) {
            const auto want = static_cast<unsigned>(std::min<std::uint64_t>(n, sizeof buffer));
            std::size_t got = 0;
            if (!m_gzip) {
                // The first bytes were read to sniff the format; hand them out first.
                if (m_zs.avail_in > 0) {
                    got = std::min<std::size_t>(want, m_zs.avail_in);
                    std::memcpy(buffer, m_zs.next_in, got);
                    m_zs.next_in += got;
                    m_zs.avail_in -= static_cast<uInt>(got);
                } else {
                    const ssize_t r = ::read(m_fd, buffer, want);
                    if (r < 0)
                        throw DataError(m_path + ": read error: " + std::strerror(errno));
                    got = static_cast<std::size_t>(r);
                    m_ended = r == 0;
                }
            } else {
                if (m_zs.avail_in == 0) {
                    fill();
                    m_zs.next_in = reinterpret_cast<Bytef *>(m_in);
                    m_zs.avail_in = static_cast<uInt>(m_inSize);
                    if (m_inSize == 0)
                        throw DataError(m_path + ": truncated gzip data (the file ends inside the stream)");
                }
                m_zs.next_out = reinterpret_cast<Bytef *>(buffer);
                m_zs.avail_out = want;
                const int rc = inflate(&m_zs, Z_NO_FLUSH);
                if (rc == Z_STREAM_END)
                    m_ended = true;
                else if (rc != Z_OK && rc != Z_BUF_ERROR)
                    throw DataError(m_path + ": corrupt gzip data (" + (m_zs.msg ? m_zs.msg : "inflate error " + std::to_string(rc)) + ")");
                got = want - m_zs.avail_out;
            }
            out.append(buffer, got);
            n -= got;
        }
    }

    bool compressed() const { return m_gzip; }

    // After the data ended: the gzip stream ended (its length and CRC checked) and nothing follows it.
    void close()
    {
        if (!m_gzip)
            return;
        if (!m_ended)
            throw DataError(m_path + ": corrupt gzip data (truncated or bad checksum)");
        std::uint64_t trailing = m_zs.avail_in;
        char buffer[1 << 16];
        for (ssize_t r; (r = ::read(m_fd, buffer, sizeof buffer)) > 0 && trailing < (1u << 20);)
            trailing += static_cast<std::uint64_t>(r);
        if (trailing > 0)
            throw DataError(m_path + ": " + std::to_string(trailing) + (trailing >= (1u << 20) ? " or more" : "")
                            + " bytes of trailing data after the gzip stream");
    }

private:
    void fill()
    {
        const ssize_t r = ::read(m_fd, m_in, sizeof m_in);
        if (r < 0)
            throw DataError(m_path + ": read error: " + std::strerror(errno));
        m_inSize = static_cast<std::size_t>(r);
    }

    std::string m_path;
    int m_fd = -1;
    bool m_gzip = false;
    bool m_ended = false;
    z_stream m_zs{};
    char m_in[1 << 16];
    std::size_t m_inSize = 0;
};

// The payload after the header, read no further than one byte past what the header announces, so a
// file (or a gzip bomb) longer than that is refused without inflating it.
std::string readPayload(IdxReader &reader, const std::string &path, std::uint64_t headerBytes, std::uint64_t expected)
{
    std::string data;
    // Grown as it is read beyond 64 MB, so a short file whose header claims gigabytes allocates nothing large.
    data.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(expected, std::uint64_t(1) << 26)));
    reader.read(data, expected + 1);
    if (data.size() < expected)
        throw DataError(path + ": truncated: header says " + std::to_string(expected) + " bytes of data, file has "
                        + std::to_string(data.size()));
    if (data.size() > expected) {
        std::error_code ec;
        const std::uint64_t size = std::filesystem::file_size(path, ec);
        if (!reader.compressed() && !ec)
            throw DataError(path + ": " + std::to_string(size - headerBytes - expected)
                            + " bytes more than its header says (" + std::to_string(expected) + ")");
        throw DataError(path + ": more data than its header says (" + std::to_string(expected) + " bytes)");
    }
    reader.close();
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

std::vector<std::uint8_t> toBytes(const std::string &data)
{
    return std::vector<std::uint8_t>(data.begin(), data.end());
}

// Refused before reading: the pixels once as bytes, the bound of what this machine could hold.
void checkMemory(const std::string &path, std::uint64_t pixelBytes)
{
    const std::uint64_t physical = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    if (physical > 0 && pixelBytes > physical / 2)
        throw DataError(path + ": its images need " + std::to_string(pixelBytes >> 20) + " MB of memory to load, more than half of this machine's "
                        + std::to_string(physical >> 20) + " MB");
}

} // namespace

IdxImages readIdxImages(const std::string &path)
{
    IdxReader reader(path);
    std::string head;
    reader.read(head, 16);
    checkHeader(path, head, kImagesMagic, 3);
    IdxImages images;
    images.count = bigEndian(head, 4);
    images.rows = bigEndian(head, 8);
    images.cols = bigEndian(head, 12);
    if (images.rows == 0 || images.cols == 0)
        throw DataError(path + ": bad image size " + std::to_string(images.rows) + "x" + std::to_string(images.cols));
    if (images.rows > kMaxImageSide || images.cols > kMaxImageSide)
        throw DataError(path + ": images of " + std::to_string(images.rows) + "x" + std::to_string(images.cols)
                        + " pixels are larger than TrainLab's ResNet-18 trains (at most " + std::to_string(kMaxImageSide)
                        + "x" + std::to_string(kMaxImageSide) + ")");
    const std::uint64_t expected = std::uint64_t(images.count) * images.rows * images.cols;
    checkMemory(path, expected);
    images.pixels = toBytes(readPayload(reader, path, 16, expected));
    return images;
}

std::vector<std::uint8_t> readIdxLabels(const std::string &path)
{
    IdxReader reader(path);
    std::string head;
    reader.read(head, 8);
    checkHeader(path, head, kLabelsMagic, 1);
    const std::uint64_t count = bigEndian(head, 4);
    return toBytes(readPayload(reader, path, 8, count));
}

DatasetFiles findDatasetFiles(const std::string &folder)
{
    DatasetFiles files;
    auto find = [&](const char *base, std::string &out) {
        for (const std::string &name : {std::string(base) + ".gz", std::string(base)}) {
            const std::string candidate = (std::filesystem::path(folder) / name).string();
            std::error_code ec;
            // Anything there (a FIFO, a folder, an unreadable file) is taken, so the reader names what is wrong with it.
            if (std::filesystem::exists(std::filesystem::symlink_status(candidate, ec))) {
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
        status.message = ec && ec != std::errc::no_such_file_or_directory ? folder + ": cannot be read: " + ec.message()
                                                                          : "no such folder: " + folder;
        return status;
    }
    const DatasetFiles files = findDatasetFiles(folder);
    if (!files.missing.empty()) {
        status.message = "missing:";
        for (const auto &m : files.missing)
            status.message += " " + m;
        return status;
    }
    auto count = [&status](const std::string &file, std::uint32_t magic, bool trainImages = false) -> std::int64_t {
        IdxReader reader(file);
        std::string head;
        reader.read(head, 16);
        checkHeader(file, head, magic, magic == kImagesMagic ? 3 : 1);
        if (trainImages) {
            status.rows = bigEndian(head, 8);
            status.cols = bigEndian(head, 12);
            if (status.rows < 8 || status.cols < 8 || status.rows > kMaxImageSide || status.cols > kMaxImageSide)
                throw DataError(file + ": images of " + std::to_string(status.rows) + "x" + std::to_string(status.cols)
                                + " pixels; TrainLab's ResNet-18 trains 8x8 up to " + std::to_string(kMaxImageSide) + "x"
                                + std::to_string(kMaxImageSide));
        }
        return bigEndian(head, 4);
    };
    try {
        status.trainCount = count(files.trainImages, kImagesMagic, true);
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
