#include "core/util/testhooks.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

namespace trainlab {

void testPause(const std::string &point)
{
    static const char *const spec = std::getenv("TRAINLAB_TEST_PAUSE");
    if (!spec || !*spec)
        return;
    static std::mutex mutex;
    static std::map<std::string, int> hits;
    const std::string s(spec);
    const auto hash = s.find('#');
    const std::string name = s.substr(0, hash);
    const int wanted = hash == std::string::npos ? 1 : std::atoi(s.c_str() + hash + 1);
    if (name != point)
        return;
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (++hits[point] != wanted)
            return;
    }
    std::fprintf(stderr, "TRAINLAB_PAUSED %s\n", point.c_str());
    std::fflush(stderr);
    for (;;)
        std::this_thread::sleep_for(std::chrono::seconds(1));
}

} // namespace trainlab
