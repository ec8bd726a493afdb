#include "core/atomicfile.h"

#include "core/testhooks.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace trainlab {

void writeFileAtomic(const std::string &path, const std::string &data)
{
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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

std::string readFile(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    std::ostringstream out;
    out << in.rdbuf();
    if (in.bad())
        throw std::runtime_error(path + ": read error");
    return out.str();
}

} // namespace trainlab
