// libFuzzer target: the run-record readers (summary.json, metrics.csv, queue.json) on arbitrary bytes; the
// first byte picks the reader. What they accept must hold the ranges the readers promise.
#include "core/sweeps/queue.h"
#include "core/runs/runrecord.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    if (size == 0)
        return 0;
    const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
    try {
        switch (data[0] % 3) {
        case 0: {
            const trainlab::RunSummary s = trainlab::parseRunSummary(text, "fuzz");
            if (s.epochsDone < 0 || s.epochsDone > 100000 || s.pid < 0 || !(s.bestTestAcc >= 0 && s.bestTestAcc <= 1))
                __builtin_trap();
            break;
        }
        case 1: {
            const auto rows = trainlab::parseMetrics(text, "fuzz/metrics.csv");
            for (std::size_t i = 0; i < rows.size(); ++i) {
                if (rows[i].epoch < 1 || rows[i].epoch > 100000 || (i > 0 && rows[i].epoch <= rows[i - 1].epoch)
                    || !(rows[i].testAcc >= 0 && rows[i].testAcc <= 1))
                    __builtin_trap();
            }
            break;
        }
        default: {
            static const std::string path = (std::filesystem::temp_directory_path()
                                             / ("trainlab-fuzz-queue-" + std::to_string(::getpid()) + ".json")).string();
            std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
            trainlab::Queue::load(path);
            break;
        }
        }
    } catch (const std::exception &) {
    }
    return 0;
}
