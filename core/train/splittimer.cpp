#include "core/train/splittimer.h"

#include <algorithm>
#include <utility>
#include <vector>

#ifdef TRAINLAB_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace trainlab {

#ifdef TRAINLAB_WITH_CUDA
struct SplitTimer::Events
{
    // Reused from epoch to epoch; an event is created on its first record.
    std::vector<std::unique_ptr<at::cuda::CUDAEvent>> pool;
    std::size_t used = 0;
    std::size_t mark = 0;
    struct Lap
    {
        Part part;
        std::size_t from, to;
    };
    std::vector<Lap> laps;

    std::size_t record()
    {
        if (used == pool.size())
            pool.push_back(std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault));
        pool[used]->record();
        return used++;
    }
};
#else
struct SplitTimer::Events
{
};
#endif

SplitTimer::SplitTimer([[maybe_unused]] bool cuda)
{
#ifdef TRAINLAB_WITH_CUDA
    if (cuda)
        m_events = std::make_unique<Events>();
#endif
}

SplitTimer::~SplitTimer() = default;

void SplitTimer::disable(const std::exception &e)
{
    m_events.reset();
    m_failed = true;
    m_warning = std::string("the time split is off for the rest of the run: a CUDA event failed: ") + e.what();
}

void SplitTimer::mark()
{
    if (m_failed)
        return;
#ifdef TRAINLAB_WITH_CUDA
    if (m_events) {
        // A part starts where the last lap ended, so a step costs four event records, not seven; the little the
        // stream runs between a lap and the next mark (zeroing buckets, the control copy) joins the next part.
        if (m_events->used > 0)
            return;
        try {
            m_events->mark = m_events->record();
        } catch (const std::exception &e) {
            disable(e);
        }
        return;
    }
#endif
    m_mark = std::chrono::steady_clock::now();
}

void SplitTimer::lap(Part part)
{
    if (m_failed)
        return;
#ifdef TRAINLAB_WITH_CUDA
    if (m_events) {
        try {
            const std::size_t now = m_events->record();
            m_events->laps.push_back({part, m_events->mark, now});
            m_events->mark = now;
        } catch (const std::exception &e) {
            disable(e);
        }
        return;
    }
#endif
    const auto now = std::chrono::steady_clock::now();
    m_parts[part] += std::chrono::duration<double>(now - m_mark).count();
    m_mark = now;
}

TimeSplit SplitTimer::finish(int rank, double epochSeconds)
{
#ifdef TRAINLAB_WITH_CUDA
    if (m_events) {
        try {
            if (m_events->used > 0)
                m_events->pool[m_events->used - 1]->synchronize();
            for (const Events::Lap &l : m_events->laps)
                m_parts[l.part] += m_events->pool[l.from]->elapsed_time(*m_events->pool[l.to]) / 1000.0;
        } catch (const std::exception &e) {
            disable(e);
            std::fill(std::begin(m_parts), std::end(m_parts), 0.0);
        }
        if (m_events) {
            m_events->used = 0;
            m_events->laps.clear();
        }
    }
#endif
    TimeSplit t;
    t.rank = rank;
    t.data = m_parts[Data];
    t.compute = m_parts[Compute];
    t.allreduce = m_parts[Allreduce];
    t.optimizer = m_parts[Optimizer];
    t.other = std::max(0.0, epochSeconds - (t.data + t.compute + t.allreduce + t.optimizer));
    std::fill(std::begin(m_parts), std::end(m_parts), 0.0);
    return t;
}

std::string SplitTimer::takeWarning()
{
    return std::exchange(m_warning, std::string());
}

} // namespace trainlab
