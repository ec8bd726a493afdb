#pragma once

#include <string>

namespace trainlab {

// Writes data to path via a temporary file in the same folder and rename(); throws on failure.
void writeFileAtomic(const std::string &path, const std::string &data);
std::string readFile(const std::string &path);

} // namespace trainlab
