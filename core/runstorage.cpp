#include "core/runstorage.h"

#include "core/atomicfile.h"
#include "core/runrecord.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trainlab {

namespace {

namespace fs = std::filesystem;

bool isCheckpoint(const fs::path &p)
{
    const std::string name = p.filename().string();
    return name == "checkpoint.pt" || name == "best.pt";
}

// Adds the files under dir to usage, each inode once.
void addFolder(const fs::path &dir, RunsFolderUsage &usage, std::set<std::pair<dev_t, ino_t>> &seen)
{
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !seen.insert({st.st_dev, st.st_ino}).second)
            continue;
        const auto bytes = static_cast<std::uint64_t>(st.st_size);
        usage.totalBytes += bytes;
        if (isCheckpoint(it->path()) && it->path().parent_path() == dir)
            usage.checkpointBytes += bytes;
    }
}

} // namespace

RunsFolderUsage runsFolderUsage(const std::string &runsDir)
{
    RunsFolderUsage usage;
    std::set<std::pair<dev_t, ino_t>> seen;
    for (const RunSummary &run : listRuns(runsDir)) {
        ++usage.runs;
        addFolder(run.dir, usage, seen);
    }
    return usage;
}

std::uint64_t deleteCheckpoints(const std::string &runDir)
{
    // The run's own lock, taken for the change, so no run or resume can start on it meanwhile.
    const int fd = ::open(runDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        throw std::runtime_error(runDir + ": cannot be opened: " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        throw std::runtime_error(runDir + ": in use by a running or resuming process; its checkpoints are kept");
    }
    std::uint64_t freed = 0;
    std::string error;
    try {
        std::set<std::pair<dev_t, ino_t>> seen;
        for (const char *name : {"checkpoint.pt", "best.pt"}) {
            const std::string path = runDir + "/" + name;
            struct stat st {};
            if (::lstat(path.c_str(), &st) != 0)
                continue;
            if (::unlink(path.c_str()) != 0)
                throw std::runtime_error(path + ": cannot be deleted: " + std::strerror(errno));
            if (st.st_nlink <= 1 || !seen.insert({st.st_dev, st.st_ino}).second)
                freed += static_cast<std::uint64_t>(st.st_size);
        }
        const std::string summaryPath = runDir + "/summary.json";
        nlohmann::json summary = nlohmann::json::parse(readFile(summaryPath));
        summary["checkpoint_epoch"] = 0;
        summary["best_checkpoint_epoch"] = 0;
        writeFileAtomic(summaryPath, summary.dump(2) + "\n");
    } catch (const nlohmann::json::exception &e) {
        error = runDir + "/summary.json: not valid JSON: " + e.what();
    } catch (const std::exception &e) {
        error = e.what();
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    if (!error.empty())
        throw std::runtime_error(error);
    return freed;
}

std::string formatBytes(std::uint64_t bytes)
{
    char text[32];
    if (bytes >= (std::uint64_t(1) << 30))
        std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / double(1 << 30));
    else if (bytes >= (std::uint64_t(1) << 20))
        std::snprintf(text, sizeof text, "%.0f MB", static_cast<double>(bytes) / double(1 << 20));
    else
        std::snprintf(text, sizeof text, "%.0f KB", static_cast<double>(bytes) / 1024.0);
    return text;
}

} // namespace trainlab
