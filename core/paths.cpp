#include "core/paths.h"

#include <cstdlib>
#include <filesystem>

namespace trainlab {

namespace fs = std::filesystem;

std::string executablePath()
{
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.string();
}

std::string resourcesDir()
{
    if (const char *env = std::getenv("TRAINLAB_RESOURCES"); env && *env)
        return env;
    // Installed layout: <prefix>/bin/trainlab-cli next to <prefix>/share/trainlab.
    const std::string exe = executablePath();
    if (!exe.empty()) {
        const fs::path installed = fs::path(exe).parent_path().parent_path() / "share" / "trainlab";
        std::error_code ec;
        if (fs::is_directory(installed / "presets", ec))
            return installed.string();
    }
    std::error_code ec;
    if (fs::is_directory(fs::path(TRAINLAB_SOURCE_RESOURCES) / "presets", ec))
        return TRAINLAB_SOURCE_RESOURCES;
    return TRAINLAB_INSTALL_DATADIR;
}

std::string defaultRunsDir()
{
    if (const char *env = std::getenv("TRAINLAB_RUNS_DIR"); env && *env)
        return env;
    if (const char *xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
        return (fs::path(xdg) / "TrainLab" / "runs").string();
    const char *home = std::getenv("HOME");
    return (fs::path(home && *home ? home : "/tmp") / ".local" / "share" / "TrainLab" / "runs").string();
}

} // namespace trainlab
