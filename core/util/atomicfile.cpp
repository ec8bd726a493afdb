#include "core/util/atomicfile.h"

#include "core/util/testhooks.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace trainlab {

namespace {

const char *kindOf(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a folder";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "not a regular file";
}

} // namespace

void writeFileAtomic(const std::string &path, const std::string &data)
{
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    // A leftover of ours, or something planted under our temporary name: never written through.
    ::unlink(tmp.c_str());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            throw std::runtime_error(path + ": cannot write: " + std::strerror(err));
        }
        done += static_cast<std::size_t>(n);
    }
    // Data must be on disk before the rename makes it visible, or a crash can leave an empty file.
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + std::strerror(err));
    }
    const auto slash = path.find_last_of('/');
    testPause("write:" + path.substr(slash == std::string::npos ? 0 : slash + 1));
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw std::runtime_error(path + ": cannot replace: " + std::strerror(err));
    }
}

std::string readFile(const std::string &path, std::uint64_t maxBytes)
{
    // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: a link is refused, not followed.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        if (err == ELOOP)
            throw std::runtime_error(path + ": is a symbolic link; TrainLab reads only regular files here");
        throw std::runtime_error(path + ": cannot open: " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw std::runtime_error(path + ": is " + std::string(kindOf(st.st_mode)) + ", not a regular file");
    }
    if (static_cast<std::uint64_t>(st.st_size) > maxBytes) {
        ::close(fd);
        throw std::runtime_error(path + ": is " + std::to_string(st.st_size) + " bytes, more than the "
                                 + std::to_string(maxBytes) + " such a file may hold");
    }
    // Bounded again while reading: the file may grow after fstat.
    std::string text(static_cast<std::size_t>(st.st_size) + 1, '\0');
    std::size_t done = 0;
    for (;;) {
        if (done == text.size()) {
            if (text.size() > maxBytes) {
                ::close(fd);
                throw std::runtime_error(path + ": grew beyond the " + std::to_string(maxBytes)
                                         + " bytes such a file may hold while it was read");
            }
            text.resize(std::min<std::uint64_t>(maxBytes + 1, text.size() * 2 + 4096));
        }
        const ssize_t n = ::read(fd, &text[done], text.size() - done);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            throw std::runtime_error(path + ": read error: " + std::strerror(err));
        }
        if (n == 0)
            break;
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    text.resize(done);
    return text;
}

std::string moveAside(const std::string &path, const std::string &suffix)
{
    int lastError = 0;
    for (int n = 1; n <= 100; ++n) {
        const std::string aside = path + suffix + (n == 1 ? "" : "-" + std::to_string(n));
        if (::renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, aside.c_str(), RENAME_NOREPLACE) == 0)
            return aside;
        lastError = errno;
        if (lastError != EEXIST)
            break;
    }
    throw std::runtime_error(path + ": cannot be set aside: " + std::strerror(lastError));
}

} // namespace trainlab
