#include "downloadconsole.h"

#include <cstdio>
#include <unistd.h>

namespace trainlab {

DownloadConsole::DownloadConsole()
    : m_tty(::isatty(STDOUT_FILENO) != 0)
{
}

void DownloadConsole::onProgress(const DownloadProgress &p)
{
    const int percent = p.total > 0 ? static_cast<int>(100 * p.bytes / p.total) : 0;
    const double mib = 1048576.0;
    if (m_tty) {
        std::printf("\r\033[K[%d/%d] %s  %.1f of %.1f MiB  %d%%  %.2f MiB/s", p.fileIndex, p.fileCount, p.file.c_str(),
                    p.bytes / mib, p.total / mib, percent, p.bytesPerSecond / mib);
        m_lineOpen = true;
    } else {
        if (p.file != m_file) {
            m_file = p.file;
            m_decile = percent / 10;
        }
        // 100% is said by the downloader's "done, checksum ok" line.
        if (percent / 10 <= m_decile || percent >= 100)
            return;
        m_decile = percent / 10;
        std::printf("[%d/%d] %s: %d%% (%.1f of %.1f MiB, %.2f MiB/s)\n", p.fileIndex, p.fileCount, p.file.c_str(),
                    m_decile * 10, p.bytes / mib, p.total / mib, p.bytesPerSecond / mib);
    }
    std::fflush(stdout);
}

void DownloadConsole::onLog(const std::string &line)
{
    std::printf("%s%s\n", m_lineOpen ? "\r\033[K" : "", line.c_str());
    m_lineOpen = false;
    std::fflush(stdout);
}

void DownloadConsole::endLine()
{
    if (m_lineOpen)
        std::printf("\r\033[K");
    m_lineOpen = false;
    std::fflush(stdout);
}

} // namespace trainlab
