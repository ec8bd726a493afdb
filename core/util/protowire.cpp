#include "core/util/protowire.h"

#include <cstring>

namespace trainlab::proto {

std::string littleEndian(std::uint64_t value, int bytes)
{
    std::string out;
    for (int i = 0; i < bytes; ++i)
        out += static_cast<char>((value >> (8 * i)) & 0xff);
    return out;
}

std::string varint(std::uint64_t v)
{
    std::string out;
    while (v >= 0x80) {
        out += static_cast<char>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
    return out;
}

std::string key(int field, int wireType)
{
    return varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(wireType));
}

std::string bytesField(int field, const std::string &bytes)
{
    return key(field, 2) + varint(bytes.size()) + bytes;
}

std::string doubleField(int field, double value)
{
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return key(field, 1) + littleEndian(bits, 8);
}

std::string floatField(int field, float value)
{
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return key(field, 5) + littleEndian(bits, 4);
}

std::string varintField(int field, std::uint64_t value)
{
    return key(field, 0) + varint(value);
}

std::string intField(int field, std::int64_t value)
{
    return varintField(field, static_cast<std::uint64_t>(value));
}

} // namespace trainlab::proto
