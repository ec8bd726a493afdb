#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#if defined(TRAINLAB_WITH_CUDA) && defined(TRAINLAB_WITH_NCCL) && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL
#endif

#include "core/distributed.h"
#include "core/engine.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/version.h>

#include <cstdlib>
#include <stdexcept>
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

// 1.13 returns ProcessGroup::Work, 2.x c10d::Work; both have wait().
template<typename Group>
class GroupCollective : public Collective
{
public:
    explicit GroupCollective(c10::intrusive_ptr<Group> group) : m_group(std::move(group)) {}

    void allreduceSum(torch::Tensor &tensor) override
    {
        std::vector<at::Tensor> tensors{tensor};
        c10d::AllreduceOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        m_group->allreduce(tensors, options)->wait();
    }

private:
    c10::intrusive_ptr<Group> m_group;
};

class StoreRendezvous : public Rendezvous
{
public:
    StoreRendezvous(c10::intrusive_ptr<c10d::Store> store, std::chrono::milliseconds timeout,
                    std::string host = {}, int port = 0)
        : m_store(std::move(store)), m_timeout(timeout), m_host(std::move(host)), m_port(port)
    {
        m_store->setTimeout(timeout);
    }

    std::shared_ptr<Rendezvous> connect() override
    {
        if (m_host.empty())
            return std::make_shared<StoreRendezvous>(m_store, m_timeout);
        return tcp(m_host, m_port, false, m_timeout);
    }

    void set(const std::string &key, const std::string &value) override
    {
        m_store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
    }

    std::string get(const std::string &key, const std::string &what) override
    {
        try {
            m_store->wait({key}, m_timeout);
        } catch (const std::exception &) {
            throw std::runtime_error(what + " (waited " + std::to_string(m_timeout.count() / 1000) + " s)");
        }
        const std::vector<uint8_t> value = m_store->get(key);
        return std::string(value.begin(), value.end());
    }

    bool check(const std::string &key) override { return m_store->check({key}); }

    std::unique_ptr<Collective> collective(int rank, int worldSize, bool nccl) override
    {
        auto store = c10::make_intrusive<c10d::PrefixStore>("pg", m_store);
#ifdef USE_C10D_NCCL
        if (nccl) {
            auto options = c10d::ProcessGroupNCCL::Options::create();
            options->timeout = m_timeout;
            return std::make_unique<GroupCollective<c10d::ProcessGroupNCCL>>(
                c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, worldSize, options));
        }
#else
        (void)nccl;
#endif
        auto options = c10d::ProcessGroupGloo::Options::create(m_timeout);
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(m_host.empty() ? "127.0.0.1" : localAddressFor(m_host)));
        return std::make_unique<GroupCollective<c10d::ProcessGroupGloo>>(
            c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, worldSize, options));
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
    std::string m_host;
    int m_port;
};

} // namespace

std::shared_ptr<Rendezvous> Rendezvous::inProcess(std::chrono::milliseconds timeout)
{
    return std::make_shared<StoreRendezvous>(c10::make_intrusive<c10d::HashStore>(), timeout);
}

std::shared_ptr<Rendezvous> Rendezvous::tcp(const std::string &host, int port, bool isServer,
                                            std::chrono::milliseconds timeout)
{
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(port);
    options.isServer = isServer;
    options.waitWorkers = false;
    options.timeout = timeout;
    c10::intrusive_ptr<c10d::Store> store;
    try {
        try {
            store = c10::make_intrusive<c10d::TCPStore>(host, options);
        } catch (const c10::Error &e) {
            // LibTorch 2.4+ asks for the libuv store by default, which some builds (Debian's 2.6) lack.
            if (std::string(e.what()).find("libuv") == std::string::npos || !turnOffLibuv(options, 0))
                throw;
            store = c10::make_intrusive<c10d::TCPStore>(host, options);
        }
    } catch (const std::exception &e) {
        throw std::runtime_error(std::string(isServer ? "cannot host the rendezvous on port " : "cannot reach the rendezvous at ")
                                 + (isServer ? std::to_string(port) : host + ":" + std::to_string(port))
                                 + ": " + errorText(e));
    }
    return std::make_shared<StoreRendezvous>(store, timeout, host, port);
}

} // namespace trainlab
