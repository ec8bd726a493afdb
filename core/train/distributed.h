#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace trainlab {

// Raised by a wait that a stop ended: the rendezvous, or a collective stuck on a peer after the stop.
class StopRequested : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

// True once the user asked the run to stop; waits poll it so a stop takes effect within about a second.
using StopCheck = std::function<bool()>;

// One rank's handle on the world's collectives (Gloo on CPU, NCCL when every rank is a CUDA device).
class Collective
{
public:
    virtual ~Collective() = default;
    // In place; blocks until every rank has contributed or the timeout passes (then throws). With Gloo, a
    // stop that a peer leaves unanswered for a second abandons the collective (StopRequested).
    virtual void allreduceSum(torch::Tensor &tensor) = 0;
    // NCCL: builds this rank's communicator now rather than at the first collective; false when lazy.
    virtual bool connect(const at::Device &device) = 0;
    // NCCL: aborts the communicators so no peer or watchdog waits on a failed run; a no-op for Gloo.
    virtual void abort() = 0;
};

// The key-value store the ranks of one run meet through: in-process, or c10d's TCPStore across nodes.
// Thread rule: one Rendezvous object per thread (a TCPStore client serialises its requests).
class Rendezvous
{
public:
    virtual ~Rendezvous() = default;
    static std::shared_ptr<Rendezvous> inProcess(std::chrono::milliseconds timeout, StopCheck stop = {});
    // isServer: node 0 hosts the store; the others connect, retrying until the timeout or a stop. prefix: this run's
    // keys within a store that others share (torchrun's agent's).
    static std::shared_ptr<Rendezvous> tcp(const std::string &host, int port, bool isServer,
                                           std::chrono::milliseconds timeout, StopCheck stop = {},
                                           const std::string &prefix = {});
    // Another handle on the same store for a new thread (a fresh TCP client, or the shared in-process store).
    virtual std::shared_ptr<Rendezvous> connect() = 0;

    virtual void set(const std::string &key, const std::string &value) = 0;
    // Waits up to the timeout; throws a runtime_error naming `what` when the key never appears, StopRequested on a stop.
    virtual std::string get(const std::string &key, const std::string &what) = 0;
    virtual bool check(const std::string &key) = 0;
    // Adds delta to the counter at key and returns its new value (a claim that only one process may win).
    virtual std::int64_t add(const std::string &key, std::int64_t delta) = 0;

    virtual std::unique_ptr<Collective> collective(int rank, int worldSize, bool nccl) = 0;
};

} // namespace trainlab
