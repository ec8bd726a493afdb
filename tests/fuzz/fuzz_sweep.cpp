// libFuzzer target: the sweep loader, validate() and the plan on arbitrary bytes.
#include "core/sweeps/sweep.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    // A base given as a relative path is looked up in a folder that holds nothing.
    static const std::string emptyDir = [] {
        const auto dir = std::filesystem::temp_directory_path() / "trainlab-fuzz-sweep-empty";
        std::filesystem::create_directories(dir);
        return dir.string();
    }();
    const std::string text(reinterpret_cast<const char *>(data), size);
    try {
        const trainlab::SweepConfig sweep = trainlab::SweepConfig::fromJson(text, "fuzz", emptyDir);
        const auto problems = sweep.validate();
        const long long runs = sweep.runCount();
        if (problems.empty() && runs >= 1 && runs <= 64) {
            const auto plan = trainlab::planSweep(sweep);
            if (static_cast<long long>(plan.size()) != runs)
                __builtin_trap();
        }
    } catch (const trainlab::ConfigError &) {
    }
    return 0;
}
