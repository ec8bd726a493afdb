#pragma once

#include "core/data/download.h"

#include <string>

namespace trainlab {

// One line rewritten in place on a terminal; otherwise a line each 10% and the downloader's lines.
class DownloadConsole : public DownloadObserver
{
public:
    DownloadConsole();
    void onProgress(const DownloadProgress &p) override;
    void onLog(const std::string &line) override;
    // Clears an open progress line before the closing message.
    void endLine();

private:
    bool m_tty;
    bool m_lineOpen = false;
    std::string m_file;
    int m_decile = 0;
};

} // namespace trainlab
