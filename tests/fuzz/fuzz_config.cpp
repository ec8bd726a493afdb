// libFuzzer target: the experiment loader and validate() on arbitrary bytes.
#include "core/config.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char *>(data), size);
    try {
        const trainlab::ExperimentConfig config = trainlab::ExperimentConfig::fromJson(text, "fuzz");
        (void)config.validate();
        // What a run writes must read back as the same experiment.
        if (trainlab::ExperimentConfig::fromJson(config.toJson(), "fuzz round trip") != config)
            __builtin_trap();
    } catch (const trainlab::ConfigError &) {
    }
    return 0;
}
