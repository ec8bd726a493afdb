#include "core/runs/runstorage.h"

#include "core/runs/runrecord.h"
#include "core/util/atomicfile.h"
#include "core/util/paths.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <dirent.h>
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

// Removes every entry under the open folder dirFd, links as links, sub-folders opened without following.
void removeContents(int dirFd, const std::string &where)
{
    const int listFd = ::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = listFd < 0 ? nullptr : ::fdopendir(listFd);
    if (!dir) {
        if (listFd >= 0)
            ::close(listFd);
        throw std::runtime_error(where + ": cannot be listed: " + std::strerror(errno));
    }
    std::vector<std::string> names;
    while (const dirent *entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..")
            names.push_back(name);
    }
    ::closedir(dir);
    for (const std::string &name : names) {
        const std::string path = where + "/" + name;
        struct stat st {};
        if (::fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            const int sub = ::openat(dirFd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                throw std::runtime_error(path + ": cannot be deleted: " + std::strerror(errno));
            try {
                removeContents(sub, path);
            } catch (...) {
                ::close(sub);
                throw;
            }
            ::close(sub);
        }
        if (::unlinkat(dirFd, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
            throw std::runtime_error(path + ": cannot be deleted: " + std::strerror(errno));
    }
}

std::string trimmedNotes(const std::string &notes)
{
    const std::size_t end = notes.find_last_not_of(" \t\r\n");
    return end == std::string::npos ? std::string() : notes.substr(0, end + 1);
}

// What makes text unfit for notes.txt, or "".
std::string notesProblem(const std::string &notes)
{
    if (notes.size() > kMaxRunNotesBytes)
        return "at most " + std::to_string(kMaxRunNotesBytes / 1024) + " KB, got " + std::to_string(notes.size()) + " bytes";
    if (notes.find('\0') != std::string::npos)
        return "text only, got a NUL byte";
    try {
        (void)nlohmann::json(notes).dump();   // refuses bytes that are not UTF-8, naming the first
    } catch (const nlohmann::json::exception &e) {
        const std::string what = e.what();
        const std::size_t at = what.find("invalid UTF-8");
        return "not UTF-8 text (" + (at == std::string::npos ? what : what.substr(at)) + ")";
    }
    return {};
}

constexpr const char *kRunInUse = "in use by a running or resuming process; the run is kept";

// A trash folder (freedesktop.org's Trash spec) and the folder its .trashinfo paths are relative to ("" for the
// home trash, whose paths are absolute).
struct TrashDir
{
    std::string dir;
    std::string topdir;
};

// Made with mode 0700 when missing; usable only as a real directory of this user, never through a link. "" when
// usable, else why not.
std::string ownDirectoryProblem(const std::string &dir)
{
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return std::string("cannot be made: ") + std::strerror(errno);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0)
        return std::string("cannot be read: ") + std::strerror(errno);
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
        return "is not a folder of this user (a link, a file or another user's)";
    return {};
}

// The trash for a folder on `device`: the home trash on its own file system, else the top of the folder's file
// system's $topdir/.Trash/$uid (where an administrator made .Trash sticky) or $topdir/.Trash-$uid.
TrashDir trashFor(const fs::path &from, dev_t device)
{
    const std::string home = dataHome() + "/Trash";
    fs::path existing = home;
    struct stat st {};
    while (::stat(existing.c_str(), &st) != 0 && existing.has_parent_path() && existing != existing.parent_path())
        existing = existing.parent_path();
    if (st.st_dev == device)
        return {home, ""};
    fs::path top = from;
    for (fs::path up = top.parent_path(); up != top; up = up.parent_path()) {
        if (::stat(up.c_str(), &st) != 0 || st.st_dev != device)
            break;
        top = up;
    }
    if (top == from)
        throw std::runtime_error(from.string() + ": is the top of its file system, where its trash would be; the run is kept");
    const std::string topdir = top.string();
    const std::string uid = std::to_string(::getuid());
    const std::string shared = (top / ".Trash").string();
    if (::lstat(shared.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX)
        && ownDirectoryProblem(shared + "/" + uid).empty())
        return {shared + "/" + uid, topdir};
    return {(top / (".Trash-" + uid)).string(), topdir};
}

} // namespace

std::string trashRun(const std::string &runDir)
{
    // Never resolved: a run folder that is a link is trashed as the link.
    fs::path source = fs::absolute(runDir).lexically_normal();
    if (source.filename().empty())
        source = source.parent_path();
    const std::string from = source.string();
    struct stat st {};
    if (::lstat(from.c_str(), &st) != 0)
        throw std::runtime_error(runDir + ": cannot be moved to the trash: " + std::strerror(errno));
    std::optional<FolderLock> hold;
    if (!S_ISLNK(st.st_mode))
        hold.emplace(from, kRunInUse);
    const TrashDir where = trashFor(source, st.st_dev);
    const std::string &trash = where.dir;
    std::error_code ec;
    if (where.topdir.empty())
        fs::create_directories(fs::path(trash).parent_path(), ec);
    for (const std::string &dir : {trash, trash + "/files", trash + "/info"}) {
        if (const std::string problem = ownDirectoryProblem(dir); !problem.empty())
            throw std::runtime_error(dir + ": the trash " + problem + "; the run is kept (Delete Permanently removes it)");
    }
    // The spec's order: the .trashinfo file, made exclusively, reserves the name; then the folder moves.
    const std::string name = source.filename().string();
    std::string target, info;
    for (int n = 1;; ++n) {
        if (n > 10000)
            throw std::runtime_error(trash + ": no free name for " + name + " (10,000 taken); the run is kept");
        const std::string candidate = n == 1 ? name : name + "." + std::to_string(n);
        target = trash + "/files/" + candidate;
        info = trash + "/info/" + candidate + ".trashinfo";
        if (::lstat(target.c_str(), &st) == 0)
            continue;
        const int infoFd = ::open(info.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (infoFd >= 0) {
            static const char hex[] = "0123456789ABCDEF";
            std::string path;
            // The home trash keeps absolute paths; a file system's own trash paths from its top, so they hold when
            // it is mounted elsewhere.
            const std::string shown = where.topdir.empty() ? from : source.lexically_relative(where.topdir).string();
            for (const unsigned char c : shown) {
                // ASCII by hand: isalnum would follow the locale.
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && std::strchr("-._~/", c)))
                    path += static_cast<char>(c);
                else
                    path += std::string("%") + hex[c >> 4] + hex[c & 15];
            }
            const std::time_t now = std::time(nullptr);
            std::tm local {};
            char date[32] = "";
            std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", ::localtime_r(&now, &local));
            const std::string text = "[Trash Info]\nPath=" + path + "\nDeletionDate=" + date + "\n";
            const bool written = ::write(infoFd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
            if (::close(infoFd) == 0 && written)
                break;
            ::unlink(info.c_str());
            throw std::runtime_error(info + ": cannot be written; the run is kept");
        }
        if (errno != EEXIST)
            throw std::runtime_error(info + ": cannot be made: " + std::strerror(errno) + "; the run is kept");
    }
    if (::rename(from.c_str(), target.c_str()) != 0) {
        const int error = errno;
        ::unlink(info.c_str());
        if (error == EXDEV)
            throw std::runtime_error(runDir + ": on another file system than the trash (" + trash +
                                     "), so it cannot be moved there; the run is kept (Delete Permanently removes it)");
        throw std::runtime_error(runDir + ": cannot be moved to " + target + ": " + std::strerror(error));
    }
    return target;
}

void deleteRun(const std::string &runDir)
{
    struct stat st {};
    if (::lstat(runDir.c_str(), &st) != 0)
        throw std::runtime_error(runDir + ": cannot be deleted: " + std::strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        if (::unlink(runDir.c_str()) != 0)
            throw std::runtime_error(runDir + ": the link cannot be deleted: " + std::strerror(errno));
        return;
    }
    const FolderLock hold(runDir, kRunInUse);
    removeContents(hold.fd(), runDir);
    if (::rmdir(runDir.c_str()) != 0)
        throw std::runtime_error(runDir + ": cannot be deleted: " + std::strerror(errno));
}

void requireRunFolder(const std::string &dir)
{
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0)
        throw std::runtime_error(dir + ": cannot be read: " + std::strerror(errno));
    if (S_ISLNK(st.st_mode))
        throw std::runtime_error(dir + ": a symbolic link, not a run folder; TrainLab does not follow it");
    if (!S_ISDIR(st.st_mode) || ::lstat((dir + "/summary.json").c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        throw std::runtime_error(dir + ": not a run folder (no summary.json)");
}

std::string notesHeadline(const std::string &notes, std::size_t maxChars)
{
    const std::size_t newline = notes.find('\n');
    const std::string line = notes.substr(0, newline);
    const std::size_t begin = line.find_first_not_of(" \t\r");
    std::string first = begin == std::string::npos ? std::string() : line.substr(begin, line.find_last_not_of(" \t\r") - begin + 1);
    bool more = newline != std::string::npos && notes.find_first_not_of(" \t\r\n", newline) != std::string::npos;
    // Counted in UTF-8 characters: a cut never splits one.
    std::size_t chars = 0;
    for (std::size_t i = 0; i < first.size(); ++i) {
        if ((static_cast<unsigned char>(first[i]) & 0xC0) != 0x80 && chars++ == maxChars) {
            first.resize(i);
            more = true;
            break;
        }
    }
    return more ? first + "…" : first;
}

void checkRunNotes(const std::string &notes)
{
    if (const std::string problem = notesProblem(notes); !problem.empty())
        throw std::invalid_argument("notes: " + problem);
}

std::string readRunNotes(const std::string &runDir)
{
    const std::string path = runDir + "/notes.txt";
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT)
        return {};
    const std::string text = readFile(path, kMaxRunNotesBytes);
    if (const std::string problem = notesProblem(text); !problem.empty())
        throw std::runtime_error(path + ": " + problem);
    return trimmedNotes(text);
}

void writeRunNotes(const std::string &runDir, const std::string &notes)
{
    checkRunNotes(notes);
    requireRunFolder(runDir);
    const std::string path = runDir + "/notes.txt";
    const std::string text = trimmedNotes(notes);
    if (!text.empty()) {
        writeFileAtomic(path, text + "\n");
    } else if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        throw std::runtime_error(path + ": cannot be removed: " + std::strerror(errno));
    }
}

FolderLock::FolderLock(const std::string &dir, const char *inUse)
{
    m_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (m_fd < 0)
        throw std::runtime_error(dir + ": cannot be opened: " + std::strerror(errno));
    if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(m_fd);
        throw std::runtime_error(dir + ": " + inUse);
    }
}

FolderLock::~FolderLock()
{
    ::close(m_fd);
}

RunsFolderUsage runsFolderUsage(const std::string &runsDir)
{
    RunsFolderUsage usage;
    std::set<std::pair<dev_t, ino_t>> seen;
    for (const RunSummary &run : listRuns(runsDir)) {
        std::error_code ec;
        if (fs::is_symlink(run.dir, ec))
            continue;   // what a link leads to is not this folder's
        ++usage.runs;
        addFolder(run.dir, usage, seen);
    }
    return usage;
}

std::uint64_t deleteCheckpoints(const std::string &runDir)
{
    // The run's own lock, taken for the change, so no run or resume can start on it meanwhile.
    // O_NOFOLLOW: a run folder that is a link does not lead to another folder's checkpoints.
    const int fd = ::open(runDir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        throw std::runtime_error(runDir + ": cannot be opened: "
                                 + (errno == ELOOP ? std::string("it is a symbolic link") : std::strerror(errno)));
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
