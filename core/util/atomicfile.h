#pragma once

#include <cstdint>
#include <string>

namespace trainlab {

// Bounds for what readFile takes from a record folder; a hostile file larger than its kind's bound is refused.
constexpr std::uint64_t kMaxRecordBytes = 1 << 20;            // summary.json, config.json
constexpr std::uint64_t kMaxTableBytes = 64ull << 20;         // metrics.csv, queue.json
constexpr std::uint64_t kMaxCheckpointBytes = 4ull << 30;     // checkpoint.pt, best.pt

// Writes data to path via a temporary file in the same folder and rename(); throws on failure. The temporary
// is created fresh (O_EXCL, no symlink followed) and the rename replaces a link at path rather than its target.
void writeFileAtomic(const std::string &path, const std::string &data);
// Reads a regular file of at most maxBytes: a symlink, FIFO, device or folder is refused by name before
// anything blocks or is read, and so is a file above the bound. Throws runtime_error naming path.
std::string readFile(const std::string &path, std::uint64_t maxBytes = kMaxRecordBytes);

// Renames path to path + suffix (or + suffix + "-N" when that is taken), never replacing anything; returns the
// new name. Throws runtime_error naming path when no free name can be had.
std::string moveAside(const std::string &path, const std::string &suffix);

} // namespace trainlab
