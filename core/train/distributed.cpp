#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#if defined(TRAINLAB_WITH_CUDA) && defined(TRAINLAB_WITH_NCCL) && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL
#endif

#include "core/train/distributed.h"
#include "core/train/torcherror.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/version.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <cerrno>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace trainlab {

namespace {

// TCPStoreOptions::useLibUV exists from LibTorch 2.2 on; false when there is none to turn off.
template<typename Options>
auto turnOffLibuv(Options &options, int) -> decltype(options.useLibUV = false, bool())
{
    const bool was = options.useLibUV;
    options.useLibUV = false;
    return was;
}

template<typename Options>
bool turnOffLibuv(Options &, long)
{
    return false;
}

// Whether something listens on host:port, found within about a second.
bool portAccepts(const std::string &host, int port)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0)
        return false;
    bool accepted = false;
    for (addrinfo *a = found; a && !accepted; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            accepted = true;
        } else if (errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            int error = 0;
            socklen_t length = sizeof error;
            accepted = ::poll(&p, 1, 1000) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
        }
        ::close(fd);
    }
    ::freeaddrinfo(found);
    return accepted;
}

// The NCCL group's lifetime calls differ between LibTorch versions; each is made only where it exists.
template<typename G>
auto groupShutdown(G &group, int) -> decltype(group.shutdown(), void())
{
    group.shutdown();
}
template<typename G>
void groupShutdown(G &, long)
{}

template<typename G>
auto groupAbort(G &group, int) -> decltype(group.abort(), void())
{
    group.abort();
}
template<typename G>
void groupAbort(G &, long)
{}

template<typename G>
auto groupConnect(G &group, const at::Device &device, int) -> decltype(group.eagerConnectSingleDevice(device), bool())
{
    group.eagerConnectSingleDevice(device);
    return true;
}
template<typename G>
bool groupConnect(G &, const at::Device &, long)
{
    return false;
}

// 1.13 returns ProcessGroup::Work, 2.x c10d::Work; both have wait(). Only the NCCL group is shut down
// or aborted: its communicators outlive the run otherwise, and Gloo's have nothing to release.
template<typename Group, bool Nccl>
class GroupCollective : public Collective
{
public:
    GroupCollective(c10::intrusive_ptr<Group> group, StopCheck stop) : m_group(std::move(group)), m_stop(std::move(stop)) {}
    ~GroupCollective() override
    {
        // An abandoned Gloo collective still runs on the group's threads until its timeout; destroying the
        // group would join them, so it is left to end on its own.
        if (m_abandoned) {
            (void)m_group.release();
            return;
        }
        if (!Nccl || m_done)
            return;
        try {
            groupShutdown(*m_group, 0);
        } catch (const std::exception &) {
        }
    }

    void allreduceSum(torch::Tensor &tensor) override
    {
        // Staged on this thread's stream: which stream Gloo's CUDA path syncs with differs between versions.
        if (!Nccl && tensor.is_cuda()) {
            torch::Tensor host = tensor.to(torch::kCPU);
            allreduceSum(host);
            tensor.copy_(host);
            return;
        }
        std::vector<at::Tensor> tensors{tensor};
        c10d::AllreduceOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        auto work = m_group->allreduce(tensors, options);
        if (Nccl || !m_stop) {
            work->wait();
            return;
        }
        std::optional<std::chrono::steady_clock::time_point> stopSeen;
        for (;;) {
            try {
                work->wait(std::chrono::milliseconds(200));
                return;
            } catch (const std::exception &) {
                // Completed since the timed-out wait: a plain wait returns, or raises the collective's own error.
                if (work->isCompleted()) {
                    work->wait();
                    return;
                }
            }
            if (!stopSeen && m_stop())
                stopSeen = std::chrono::steady_clock::now();
            if (stopSeen && std::chrono::steady_clock::now() - *stopSeen > std::chrono::seconds(1)) {
                m_abandoned = true;
                throw StopRequested("stopped while the all-reduce waited for a peer that did not answer");
            }
        }
    }

    bool connect(const at::Device &device) override
    {
        return Nccl && groupConnect(*m_group, device, 0);
    }

    void abort() override
    {
        if (!Nccl || m_done)
            return;
        m_done = true;
        try {
            groupAbort(*m_group, 0);
        } catch (const std::exception &) {
        }
    }

private:
    c10::intrusive_ptr<Group> m_group;
    StopCheck m_stop;
    bool m_done = false;
    bool m_abandoned = false;
};

class StoreRendezvous : public Rendezvous
{
public:
    StoreRendezvous(c10::intrusive_ptr<c10d::Store> store, std::chrono::milliseconds timeout, StopCheck stop,
                    std::string host = {}, int port = 0, std::string prefix = {})
        : m_store(std::move(store)), m_timeout(timeout), m_stop(std::move(stop)), m_host(std::move(host)), m_port(port),
          m_prefix(std::move(prefix))
    {
        m_store->setTimeout(timeout);
    }

    std::shared_ptr<Rendezvous> connect() override
    {
        if (m_host.empty())
            return std::make_shared<StoreRendezvous>(m_store, m_timeout, m_stop);
        return tcp(m_host, m_port, false, m_timeout, m_stop, m_prefix);
    }

    void set(const std::string &key, const std::string &value) override
    {
        m_store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
    }

    // Polled rather than Store::wait, which no stop can interrupt (and a TCPStore wait that times out
    // leaves its answer unread on the socket).
    std::string get(const std::string &key, const std::string &what) override
    {
        const auto start = std::chrono::steady_clock::now();
        auto pause = std::chrono::milliseconds(1);
        while (!m_store->check({key})) {
            if (m_stop && m_stop())
                throw StopRequested("stopped while waiting: " + what);
            if (std::chrono::steady_clock::now() - start > m_timeout)
                throw std::runtime_error(what + " (waited " + std::to_string(m_timeout.count() / 1000) + " s)");
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::milliseconds(50));
        }
        const std::vector<uint8_t> value = m_store->get(key);
        return std::string(value.begin(), value.end());
    }

    bool check(const std::string &key) override { return m_store->check({key}); }

    std::int64_t add(const std::string &key, std::int64_t delta) override { return m_store->add(key, delta); }

    std::unique_ptr<Collective> collective(int rank, int worldSize, bool nccl) override
    {
        auto store = c10::make_intrusive<c10d::PrefixStore>("pg", m_store);
#ifdef USE_C10D_NCCL
        if (nccl) {
            auto options = c10d::ProcessGroupNCCL::Options::create();
            options->timeout = m_timeout;
            return std::make_unique<GroupCollective<c10d::ProcessGroupNCCL, true>>(
                c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, worldSize, options), m_stop);
        }
#else
        (void)nccl;
#endif
        auto options = c10d::ProcessGroupGloo::Options::create(m_timeout);
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(m_host.empty() ? "127.0.0.1" : localAddressFor(m_host)));
        return std::make_unique<GroupCollective<c10d::ProcessGroupGloo, false>>(
            c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, worldSize, options), m_stop);
    }

private:
    static std::string localAddressFor(const std::string &masterHost)
    {
        // On loopback every rank is local; otherwise let Gloo bind this machine's own address.
        if (masterHost == "127.0.0.1" || masterHost == "localhost")
            return "127.0.0.1";
        const char *override = std::getenv("TRAINLAB_GLOO_HOSTNAME");
        if (override && *override)
            return override;
        char name[256] = {};
        ::gethostname(name, sizeof name - 1);
        return name;
    }

    c10::intrusive_ptr<c10d::Store> m_store;
    std::chrono::milliseconds m_timeout;
    StopCheck m_stop;
    std::string m_host;
    int m_port;
    std::string m_prefix;
};

} // namespace

std::shared_ptr<Rendezvous> Rendezvous::inProcess(std::chrono::milliseconds timeout, StopCheck stop)
{
    return std::make_shared<StoreRendezvous>(c10::make_intrusive<c10d::HashStore>(), timeout, std::move(stop));
}

namespace {

c10::intrusive_ptr<c10d::Store> makeTcpStore(const std::string &host, c10d::TCPStoreOptions options)
{
    try {
        return c10::make_intrusive<c10d::TCPStore>(host, options);
    } catch (const c10::Error &e) {
        // LibTorch 2.4+ asks for the libuv store by default, which some builds (Debian's 2.6) lack.
        if (std::string(e.what()).find("libuv") == std::string::npos || !turnOffLibuv(options, 0))
            throw;
        return c10::make_intrusive<c10d::TCPStore>(host, options);
    }
}

// A client's connection and first answer from the store, made on a thread of its own: a port held by some
// other server may accept and then never answer, and TCPStore's recv() honours neither timeout nor signal.
c10::intrusive_ptr<c10d::Store> connectBounded(const std::string &host, int port, const c10d::TCPStoreOptions &options,
                                               std::chrono::milliseconds timeout, const StopCheck &stop,
                                               std::chrono::steady_clock::time_point start)
{
    struct Pending
    {
        std::mutex mutex;
        std::condition_variable done;
        bool finished = false;
        c10::intrusive_ptr<c10d::Store> store;
        std::exception_ptr error;
    };
    auto pending = std::make_shared<Pending>();
    std::thread([pending, host, options] {
        c10::intrusive_ptr<c10d::Store> store;
        std::exception_ptr error;
        try {
            store = makeTcpStore(host, options);
            store->check({"trainlab/hello"});
        } catch (...) {
            error = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(pending->mutex);
        pending->store = std::move(store);
        pending->error = error;
        pending->finished = true;
        pending->done.notify_all();
    }).detach();
    const std::string where = host + ":" + std::to_string(port);
    std::unique_lock<std::mutex> lock(pending->mutex);
    while (!pending->done.wait_for(lock, std::chrono::milliseconds(100), [&] { return pending->finished; })) {
        if (stop && stop())
            throw StopRequested("stopped while connecting to the rendezvous at " + where);
        if (std::chrono::steady_clock::now() - start > timeout)
            throw std::runtime_error("no answer within " + std::to_string(timeout.count() / 1000)
                                     + " s (collective_timeout_s); is another program, not node 0 of this run, using that port?");
    }
    if (pending->error)
        std::rethrow_exception(pending->error);
    return pending->store;
}

} // namespace

std::shared_ptr<Rendezvous> Rendezvous::tcp(const std::string &host, int port, bool isServer,
                                            std::chrono::milliseconds timeout, StopCheck stop, const std::string &prefix)
{
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(port);
    options.isServer = isServer;
    options.waitWorkers = false;
    const auto start = std::chrono::steady_clock::now();
    c10::intrusive_ptr<c10d::Store> store;
    try {
        // A client waits for node 0's port itself, so a stop ends that wait (TCPStore's own retry cannot be
        // interrupted, and given short timeouts it floods stderr).
        if (!isServer && stop) {
            while (!portAccepts(host, port)) {
                if (stop())
                    throw StopRequested("stopped while waiting for the rendezvous at " + host + ":" + std::to_string(port));
                if (std::chrono::steady_clock::now() - start > timeout)
                    break;
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
        }
        options.timeout = timeout;
        store = isServer ? makeTcpStore(host, options) : connectBounded(host, port, options, timeout, stop, start);
    } catch (const StopRequested &) {
        throw;
    } catch (const std::exception &e) {
        throw std::runtime_error(std::string(isServer ? "cannot host the rendezvous on port " : "cannot reach the rendezvous at ")
                                 + (isServer ? std::to_string(port) : host + ":" + std::to_string(port))
                                 + ": " + errorText(e));
    }
    if (!prefix.empty())
        store = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
    return std::make_shared<StoreRendezvous>(store, timeout, std::move(stop), host, port, prefix);
}

} // namespace trainlab
