#include "core/util/paths.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <pwd.h>
#include <unistd.h>

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

std::string resourcesProblem()
{
    const char *env = std::getenv("TRAINLAB_RESOURCES");
    const std::string dir = resourcesDir();
    std::error_code ec;
    if (fs::is_directory(fs::path(dir) / "presets", ec))
        return {};
    return (env && *env ? "TRAINLAB_RESOURCES=" : "") + dir + ": not a TrainLab resources folder (no presets/ in it)";
}

std::string dataHome()
{
    // The XDG spec: a relative XDG_DATA_HOME is invalid and ignored.
    if (const char *xdg = std::getenv("XDG_DATA_HOME"); xdg && xdg[0] == '/')
        return xdg;
    std::string home;
    if (const char *env = std::getenv("HOME"); env && env[0] == '/') {
        home = env;
    } else {
        // HOME unset: the account's own folder, never a world-writable fallback such as /tmp.
        struct passwd entry {};
        struct passwd *found = nullptr;
        std::vector<char> buffer(16384);
        if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found && found->pw_dir
            && found->pw_dir[0] == '/')
            home = found->pw_dir;
    }
    if (home.empty())
        throw std::runtime_error("cannot tell the home folder (HOME is unset and the account has none); "
                                 "set HOME, XDG_DATA_HOME or TRAINLAB_RUNS_DIR and TRAINLAB_DATA_DIR");
    return (fs::path(home) / ".local" / "share").string();
}

std::string defaultRunsDir()
{
    if (const char *env = std::getenv("TRAINLAB_RUNS_DIR"); env && *env)
        return env;
    return (fs::path(dataHome()) / "TrainLab" / "runs").string();
}

} // namespace trainlab
