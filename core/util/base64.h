#pragma once

#include <optional>
#include <string>

namespace trainlab {

// RFC 4648 base64 with padding: small binary blobs (a test image's pixels) inside JSON.
std::string base64Encode(const std::string &bytes);
// nullopt when text is not canonical padded base64 (a wrong character, length or padding).
std::optional<std::string> base64Decode(const std::string &text);

} // namespace trainlab
