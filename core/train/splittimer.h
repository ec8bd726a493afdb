#pragma once

#include "core/train/observer.h"

#include <chrono>
#include <memory>
#include <string>

namespace trainlab {

// The time split's clock for one replica. On the CPU the host's steady clock at each mark; on a GPU, CUDA events
// recorded on the replica's stream at the same marks and read once at the epoch's end, so measuring never makes
// the host wait mid-epoch and the parts are the device's time, not the launches'. A GPU timer that fails turns
// itself off (warning() says why): it never fails a run.
class SplitTimer
{
public:
    enum Part { Data, Compute, Allreduce, Optimizer, PartCount };

    explicit SplitTimer(bool cuda = false);
    ~SplitTimer();
    SplitTimer(const SplitTimer &) = delete;
    SplitTimer &operator=(const SplitTimer &) = delete;

    // Where the next part starts.
    void mark();
    // The part from the last mark or lap to now; the next part starts here.
    void lap(Part part);
    // The epoch's parts, "other" what is left of epochSeconds; starts the next epoch afresh.
    TimeSplit finish(int rank, double epochSeconds);
    // False once a device timer failed: the epochs after it have no split.
    bool measuring() const { return !m_failed; }
    // Why the device timer turned off, once; empty otherwise.
    std::string takeWarning();

private:
    struct Events;
    void disable(const std::exception &e);

    double m_parts[PartCount] = {};
    std::chrono::steady_clock::time_point m_mark;
    std::unique_ptr<Events> m_events;
    std::string m_warning;
    bool m_failed = false;
};

} // namespace trainlab
