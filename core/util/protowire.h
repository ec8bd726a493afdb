#pragma once

#include <cstdint>
#include <string>

namespace trainlab::proto {

// Protocol buffers' wire format, written by hand for the two formats TrainLab writes (TensorBoard's events, ONNX
// models): each field a key (number << 3 | wire type) and its value.
std::string littleEndian(std::uint64_t value, int bytes);
std::string varint(std::uint64_t v);
std::string key(int field, int wireType);
std::string bytesField(int field, const std::string &bytes);   // also strings and embedded messages
std::string doubleField(int field, double value);
std::string floatField(int field, float value);
std::string varintField(int field, std::uint64_t value);
// A negative int64 or int32 as protobuf writes it: ten bytes of two's complement.
std::string intField(int field, std::int64_t value);

} // namespace trainlab::proto
