#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace trainlab {

// Incremental SHA-256 (FIPS 180-4); hexDigest() ends the message, so call it once.
class Sha256
{
public:
    Sha256();
    void update(const void *data, std::size_t size);
    std::string hexDigest();

private:
    void compress(const std::uint8_t *block);

    std::array<std::uint32_t, 8> m_state;
    std::array<std::uint8_t, 64> m_buffer{};
    std::size_t m_buffered = 0;
    std::uint64_t m_length = 0;
};

// Lower-case hex SHA-256 of a file's bytes; throws std::runtime_error naming the file when it cannot be read.
std::string sha256File(const std::string &path);

} // namespace trainlab
