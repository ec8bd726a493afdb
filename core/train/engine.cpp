#include "core/train/engine.h"

#include "core/data/augment.h"
#include "core/monitor/devicesampler.h"
#include "core/runs/runrecord.h"
#include "core/train/devices.h"
#include "core/train/distributed.h"
#include "core/train/optimizer.h"
#include "core/train/hugepageallocator.h"
#include "core/train/launcher.h"
#include "core/train/model.h"
#include "core/train/nodereport.h"
#include "core/train/precision.h"
#include "core/train/schedule.h"
#include "core/train/splittimer.h"
#include "core/train/winograd.h"
#include "core/util/hostmemory.h"
#include "core/util/numtext.h"
#include "core/util/testhooks.h"

#include <algorithm>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#ifdef TRAINLAB_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace trainlab {

namespace {

using Clock = std::chrono::steady_clock;

// Control slots appended to the last gradient bucket, summed over the world with it.
enum Control { kStop, kError, kLossSum, kCorrect, kSeen, kControlSize };

constexpr std::int64_t kBucketElements = 8 << 20;
#ifdef TRAINLAB_WITH_CUDA
// Full-batch steps run eagerly before a CUDA graph is captured: cuDNN's autotune and the allocator settle first.
constexpr int kGraphWarmSteps = 3;
#endif

bool constantSchedule(const ExperimentConfig &config)
{
    return config.schedule.kind == "constant" && config.schedule.warmupEpochs == 0;
}

double seconds(Clock::time_point since)
{
    return std::chrono::duration<double>(Clock::now() - since).count();
}

// The run as seen by every local thread; fields below the mutex are guarded by it.
struct World
{
    ExperimentConfig config;
    const DataBundle *data = nullptr;
    RunOptions options;
    RunRecord *record = nullptr;
    TrainingObserver *observer = nullptr;
    const StopFlag *stop = nullptr;
    std::shared_ptr<Rendezvous> rendezvous;
    torch::nn::Sequential master;
    std::vector<std::string> worldDevices;
    int worldSize = 1;
    int rankOffset = 0;
    bool nccl = false;
    int controlLag = 0;
    int threadsPerReplica = 1;
    std::string boundConfig;                 // what a checkpoint of this run is bound to (checkpointConfigJson)
    std::shared_ptr<const std::string> resumeCheckpoint;   // set when resuming: every replica loads its state
    std::string resumeOrigin;
    std::vector<EpochMetrics> done;          // the epochs before this session
    int startEpoch = 0;

    std::atomic<bool> observerStop{false};   // set by rank 0 when the observer asks to stop
    std::unique_ptr<DeviceSampler> nodeSampler;   // a node without the record: its devices for node 0's

    std::mutex mutex;                        // guards the fields below
    std::vector<TimeSplit> times;            // this epoch's, one per local rank that measured it
    double warmupSeconds = 0.0;              // the slowest local replica's warm-up
    std::vector<torch::nn::Sequential> replicas;
    std::vector<torch::nn::Sequential> averages;   // with ema_decay
    RunResult result;
    std::string digest;
};

torch::Device parseDevice(const std::string &id)
{
    return id == "cpu" ? torch::Device(torch::kCPU) : torch::Device(id);
}

// Summed control slots (a step's, or evaluation's counts) on their way to the host; from a CUDA device the
// copy goes through pinned memory and an event, never a pageable .cpu() while peers allocate.
struct PendingControl
{
    std::int64_t batch = 0;
    torch::Tensor host;
#ifdef TRAINLAB_WITH_CUDA
    std::shared_ptr<at::cuda::CUDAEvent> copied;
#endif

    const float *wait() const
    {
#ifdef TRAINLAB_WITH_CUDA
        if (copied)
            copied->synchronize();
#endif
        return host.data_ptr<float>();
    }
};

PendingControl sendToHost(const torch::Tensor &control, std::int64_t batch)
{
    PendingControl p;
    p.batch = batch;
#ifdef TRAINLAB_WITH_CUDA
    if (control.is_cuda()) {
        p.host = torch::empty(control.sizes(), torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(true));
        p.host.copy_(control, /*non_blocking=*/true);
        p.copied = std::make_shared<at::cuda::CUDAEvent>();
        p.copied->record();
        return p;
    }
#endif
    p.host = control.clone();
    return p;
}

std::vector<torch::Tensor> floatBuffers(torch::nn::Module &model)
{
    std::vector<torch::Tensor> out;
    for (auto &b : model.buffers()) {
        if (b.is_floating_point())
            out.push_back(b);
    }
    return out;
}

// Sums tensors over the world in place, flattened into one tensor per call.
void allreduceMean(Collective *collective, const std::vector<torch::Tensor> &tensors, int worldSize)
{
    if (!collective || tensors.empty())
        return;
    std::vector<torch::Tensor> flat;
    for (const auto &t : tensors)
        flat.push_back(t.reshape({-1}));
    torch::Tensor buffer = torch::cat(flat);
    collective->allreduceSum(buffer);
    buffer.div_(worldSize);
    std::int64_t offset = 0;
    for (auto &t : tensors) {
        t.copy_(buffer.slice(0, offset, offset + t.numel()).view_as(t));
        offset += t.numel();
    }
}

#ifdef TRAINLAB_WITH_CUDA
// A replica's captured training step: forward + backward into the gradient buckets, then (after the eager
// all-reduce) the optimizer step, both replaying from fixed input buffers in one private memory pool.
struct StepGraphs
{
    at::cuda::CUDAGraph compute, update;
    torch::Tensor x, y;
    int warmSteps = 0;
    bool computeReady = false, updateReady = false;
};
#endif

class Replica
{
public:
    Replica(World &world, int localRank, std::function<torch::nn::Sequential()> makeModel)
        : m_world(world)
        , m_makeModel(std::move(makeModel))
        , m_localRank(localRank)
        , m_rank(world.rankOffset + localRank)
        , m_deviceId(world.config.devices[static_cast<std::size_t>(localRank)])
        , m_device(parseDevice(m_deviceId))
    {}

    void run();

private:
    bool setUp();
    std::string connectCollective();
    void prepareLocal();
    void makeGradientBuckets();
    bool trainEpoch(int epoch, int epochs);
    void exchangeNodeReports(int epoch, EpochMetrics &m);
    void computeStep(const torch::Tensor &x, const torch::Tensor &y, std::int64_t count, std::int64_t mine);
    void warmUp();
    // This rank's part of a global batch of count images.
    std::int64_t shareOf(std::int64_t count) const { return batchShare(count, m_world.worldSize, m_rank).count; }
    void optimizerStep();
    void updateAverage();
    bool replayCompute(const torch::Tensor &x, const torch::Tensor &y, std::int64_t count, std::int64_t mine);
    bool replayUpdate();
    double evaluate(int epoch);
    void saveEvaluation();
    void fail(const std::string &error);
    std::string who() const { return "rank " + std::to_string(m_rank) + " (" + m_deviceId + "): "; }
    void injectFault(RunOptions::FaultPoint point, long when, const std::string &where);
    void report(const std::function<void(TrainingObserver &)> &call)
    {
        if (m_localRank == 0)
            call(*m_world.observer);
    }
    void log(const std::string &line)
    {
        report([&](TrainingObserver &o) { o.onLog(line); });
    }
    std::string failedRank();
    // draws[first, first + N) alter training images; evaluation passes none.
    torch::Tensor input(const torch::Tensor &images, const std::vector<AugmentDraw> &draws = {}, std::int64_t first = 0) const
    {
        const torch::Tensor x = applyAugmentation(toInput(images), draws, first);
        return m_layout != MemoryLayout::Nchw ? channelsLast(x) : x;
    }

    World &m_world;
    std::function<torch::nn::Sequential()> m_makeModel;
    int m_localRank;
    int m_rank;
    std::string m_deviceId;
    torch::Device m_device;
    std::shared_ptr<Rendezvous> m_rendezvous;
    std::unique_ptr<Collective> m_collective;
    torch::nn::Sequential m_model{nullptr};
    // With ema_decay: the moving average of m_model's weights and float buffers, which evaluation runs; the two lists
    // pair its tensors with the model's.
    torch::nn::Sequential m_average{nullptr};
    std::vector<torch::Tensor> m_averaged, m_averagedFrom;
    std::unique_ptr<torch::optim::Optimizer> m_optimizer;
    // Flat gradient buffers, each parameter's .grad a view into one (DDP's gradient_as_bucket_view), the
    // step's control slots at the end of the last: the all-reduce sums them in place, nothing is copied.
    std::vector<torch::Tensor> m_buckets;
    torch::Tensor m_control;
    torch::Tensor m_trainImages, m_trainLabels, m_testImages, m_testLabels;
    long m_globalStep = 0;
    std::int64_t m_stepsPerEpoch = 1;
    MemoryLayout m_layout = MemoryLayout::Nchw;
#ifdef TRAINLAB_WITH_CUDA
    std::unique_ptr<StepGraphs> m_graphs;
    bool capture(at::cuda::CUDAGraph &graph, c10::cuda::MempoolId_t pool, const std::function<void()> &work,
                 const char *what);
#endif
    bool m_stopped = false;
    std::string m_failure;
    double m_epochLoss = 0, m_epochAcc = 0, m_epochSeconds = 0, m_epochRate = 0, m_epochLearningRate = 0, m_epochGradNorm = 0;
    // The epoch's gradient norms before any clipping (their sum; with grad_clip_norm also the largest and the steps
    // clipped), kept on the device and updated in place (a captured update replays into them), read at the epoch's end.
    torch::Tensor m_gradNormSum, m_gradNormMax, m_clippedSteps;
    std::unique_ptr<SplitTimer> m_timer;
    // The last evaluation's logits of every test image (summed over ranks), for evaluation.json at the end.
    torch::Tensor m_lastLogits;
    int m_lastEvaluatedEpoch = 0;
};

void Replica::fail(const std::string &error)
{
    m_failure = who() + error;
    if (m_rendezvous)
        m_rendezvous->set("error/" + std::to_string(m_rank), m_failure);
}

void Replica::injectFault(RunOptions::FaultPoint point, long when, const std::string &where)
{
    const RunOptions &o = m_world.options;
    if (m_rank == o.faultRank && o.faultPoint == point && o.faultStep == when)
        throw std::runtime_error("injected failure " + where);
}

// Every rank posts how its local setup went before anyone builds the process group (which waits for
// all ranks), so a device that fails here fails the run at once instead of after the collective timeout.
bool Replica::setUp()
{
    std::string error;
    try {
        prepareLocal();
    } catch (const std::exception &e) {
        error = who() + errorText(e);
    }
    if (m_world.worldSize > 1) {
        m_rendezvous = m_world.rendezvous->connect();
        m_rendezvous->set("setup/" + std::to_string(m_rank), error);
        std::string other;
        for (int r = 0; r < m_world.worldSize; ++r) {
            const std::string status = m_rendezvous->get(
                "setup/" + std::to_string(r), "rank " + std::to_string(r) + " did not finish its setup");
            if (other.empty() && !status.empty())
                other = status;
        }
        if (error.empty() && !other.empty())
            error = "stopped because " + other;
        if (error.empty())
            error = connectCollective();
    }
    m_failure = error;
    return error.empty();
}

// NCCL communicators are built here, not lazily at step 0 while peers allocate (a driver-lock deadlock
// pattern). A store barrier before the connection keeps a rank whose group failed to build from leaving
// the others in ncclCommInitRank, and one after it lets every rank learn of a failed connection.
std::string Replica::connectCollective()
{
    std::string error;
    try {
        m_collective = m_rendezvous->collective(m_rank, m_world.worldSize, m_world.nccl);
    } catch (const std::exception &e) {
        error = who() + "cannot join the process group: " + errorText(e);
    }
    if (!m_world.nccl)
        return error;
    auto barrier = [&](const std::string &phase, const std::string &what) {
        m_rendezvous->set(phase + "/" + std::to_string(m_rank), error);
        for (int r = 0; r < m_world.worldSize; ++r) {
            const std::string status = m_rendezvous->get(phase + "/" + std::to_string(r), "rank " + std::to_string(r) + what);
            if (error.empty() && !status.empty())
                error = "stopped because " + status;
        }
    };
    barrier("group", " did not build its process group");
    if (!error.empty())
        return error;
    try {
        m_collective->connect(m_device);
    } catch (const std::exception &e) {
        error = who() + "cannot connect to the process group: " + errorText(e);
    }
    barrier("connected", " did not connect to the process group");
    return error;
}

void Replica::prepareLocal()
{
    const ExperimentConfig &config = m_world.config;
    at::set_num_threads(m_world.threadsPerReplica);
    setThreadPrecision(m_device, config.precision);
    injectFault(RunOptions::FaultPoint::Setup, 1, "in setup");
    m_model = m_makeModel();
    m_model->to(m_device);
    {
        torch::NoGradGuard noGrad;
        auto src = m_world.master->named_parameters();
        for (auto &p : m_model->named_parameters())
            p.value().copy_(src[p.key()]);
        auto srcBuffers = m_world.master->named_buffers();
        for (auto &b : m_model->named_buffers())
            b.value().copy_(srcBuffers[b.key()]);
    }
    m_optimizer = makeOptimizer(*m_model, config);
    if (config.emaDecay > 0) {
        m_average = m_makeModel();
        m_average->to(m_device);
        torch::NoGradGuard noGrad;
        auto params = m_model->named_parameters();
        for (auto &p : m_average->named_parameters())
            p.value().copy_(params[p.key()]);
        auto buffers = m_model->named_buffers();
        for (auto &b : m_average->named_buffers())
            b.value().copy_(buffers[b.key()]);
        m_average->eval();
    }
    // The momentum buffers come from the checkpoint; the weights and their average too (the weights are the master's).
    if (m_world.resumeCheckpoint)
        loadCheckpointBytes(*m_world.resumeCheckpoint, m_world.resumeOrigin, *m_model, m_optimizer.get(), m_device,
                            m_average ? m_average.get() : nullptr);
    // After the load, which gives each parameter the strides it was saved with.
    m_layout = applySpeedSwitches(*m_model, config, m_deviceId);
    if (m_average) {
        applySpeedSwitches(*m_average, config, m_deviceId);
        m_averaged = m_average->parameters();
        m_averagedFrom = m_model->parameters();
        for (auto &b : floatBuffers(*m_average))
            m_averaged.push_back(b);
        for (auto &b : floatBuffers(*m_model))
            m_averagedFrom.push_back(b);
    }
    makeGradientBuckets();
    // Every run's epochs carry their gradient norm (TensorBoard's train/grad_norm); clipping also counts its steps.
    m_gradNormSum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(m_device));
    if (config.gradClipNorm > 0) {
        m_gradNormMax = torch::zeros_like(m_gradNormSum);
        m_clippedSteps = torch::zeros_like(m_gradNormSum);
    }
#ifdef TRAINLAB_WITH_CUDA
    if (config.speed.cudaGraphs && m_device.is_cuda())
        m_graphs = std::make_unique<StepGraphs>();
#endif
    // Each device holds the uint8 data once; CPU replicas share the host copy.
    const DataBundle &data = *m_world.data;
    m_trainImages = data.train.images.to(m_device);
    m_trainLabels = data.train.labels.to(m_device);
    m_testImages = data.test.images.to(m_device);
    m_testLabels = data.test.labels.to(m_device);
    std::lock_guard<std::mutex> lock(m_world.mutex);
    m_world.replicas[static_cast<std::size_t>(m_localRank)] = m_model;
    m_world.averages[static_cast<std::size_t>(m_localRank)] = m_average;
}

void Replica::makeGradientBuckets()
{
    std::vector<std::vector<torch::Tensor>> groups(1);
    std::int64_t size = 0;
    for (auto &p : m_model->parameters()) {
        if (size + p.numel() > kBucketElements && !groups.back().empty()) {
            groups.emplace_back();
            size = 0;
        }
        groups.back().push_back(p);
        size += p.numel();
    }
    for (std::size_t b = 0; b < groups.size(); ++b) {
        std::int64_t total = b + 1 == groups.size() ? kControlSize : 0;
        for (const auto &p : groups[b])
            total += p.numel();
        torch::Tensor buffer = torch::zeros({total}, torch::TensorOptions().dtype(torch::kFloat32).device(m_device));
        std::int64_t pos = 0;
        for (auto &p : groups[b]) {
            // The parameter's own strides (NHWC or not), so autograd accumulates in place without a layout change.
            p.mutable_grad() = buffer.slice(0, pos, pos + p.numel()).as_strided(p.sizes(), p.strides());
            pos += p.numel();
        }
        if (b + 1 == groups.size())
            m_control = buffer.slice(0, pos, pos + kControlSize);
        m_buckets.push_back(buffer);
    }
}

// Only called when another rank failed, so the world has more than one rank and a rendezvous.
std::string Replica::failedRank()
{
    for (int r = 0; r < m_world.worldSize; ++r) {
        const std::string key = "error/" + std::to_string(r);
        if (m_rendezvous->check(key))
            return m_rendezvous->get(key, key);
    }
    return "a replica failed";
}

// Each node's local rank 0 sends its ranks' time split and (one process per machine) its devices to node 0, which
// waits for them a few seconds at most: a node that cannot report is left out of the record, never waited on.
void Replica::exchangeNodeReports(int epoch, EpochMetrics &m)
{
    const NodeOptions &node = m_world.options.node;
    if (node.nodeRank != 0) {
        NodeReport mine{m.time, {}, m.warmupSeconds};
        if (m_world.nodeSampler) {
            mine.devices = m_world.nodeSampler->takeEpoch();
            nameByNode(mine.devices, nodeDevicePrefix(node.nodeRank, node.processesPerNode));
            m.devices = mine.devices;
        }
        m_rendezvous->set(nodeReportKey(epoch, node.nodeRank), encodeNodeReport(epoch, mine));
        return;
    }
    std::vector<DeviceEpochStats> devices;
    for (int k = 1; k < node.nnodes; ++k) {
        const std::string key = nodeReportKey(epoch, k);
        const auto deadline = Clock::now() + std::chrono::seconds(10);
        bool arrived = m_rendezvous->check(key);
        for (; !arrived && Clock::now() < deadline && !m_world.stop->load(); arrived = m_rendezvous->check(key))
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        try {
            if (!arrived)
                throw std::runtime_error("did not arrive within 10 s");
            NodeReport report = decodeNodeReport(epoch, m_rendezvous->get(key, key));
            m.time.insert(m.time.end(), report.time.begin(), report.time.end());
            // The world's warm-up is its slowest replica's: epoch 1 starts for all once every node's is done.
            m.warmupSeconds = std::max(m.warmupSeconds, report.warmupSeconds);
            devices.insert(devices.end(), report.devices.begin(), report.devices.end());
        } catch (const std::exception &e) {
            log("node " + std::to_string(k) + "'s epoch " + std::to_string(epoch) + " times and devices left out of the record: "
                + e.what());
        }
    }
    std::sort(m.time.begin(), m.time.end(), [](const TimeSplit &a, const TimeSplit &b) { return a.rank < b.rank; });
    if (m_world.record)
        m_world.record->addNodeDevices(devices);
}

// False when the world ended the epoch early (a stop, or a failure every rank read in the control slots).
// A failure after the last step's slots (its optimizer step) reaches the others through evaluation's.
bool Replica::trainEpoch(int epoch, int epochs)
{
    const ExperimentConfig &config = m_world.config;
    const std::int64_t n = m_trainLabels.size(0);
    const std::int64_t batch = config.batchSize;
    const std::int64_t batches = (n + batch - 1) / batch;
    const int world = m_world.worldSize;
    const auto order = epochPermutation(n, config.seed, epoch);
    const torch::Tensor perm = torch::tensor(order, torch::kInt64).to(m_device);

    m_model->train();
    m_gradNormSum.zero_();
    if (m_clippedSteps.defined()) {
        m_gradNormMax.zero_();
        m_clippedSteps.zero_();
    }
    m_epochLearningRate = learningRateAt(config, m_globalStep, batches);
    if (!constantSchedule(config))
        log("epoch " + std::to_string(epoch) + ": learning rate " + formatGeneral(m_epochLearningRate)
            + " to " + formatGeneral(learningRateAt(config, m_globalStep + batches - 1, batches)));
    const auto start = Clock::now();
    auto lastReport = start - std::chrono::seconds(1);
    double lossSum = 0, correct = 0, seen = 0;
    // Reads a step's summed control slots; false when the epoch ends here (stop or failure).
    auto consume = [&](const PendingControl &pending) {
        const float *c = pending.wait();
        if (c[kError] > 0) {
            if (m_failure.empty())
                m_failure = "stopped because " + failedRank();
            return false;
        }
        if (!std::isfinite(c[kLossSum])) {
            m_failure = "the loss became " + std::string(std::isnan(c[kLossSum]) ? "NaN" : "infinite") + " at epoch "
                        + std::to_string(epoch) + " batch " + std::to_string(pending.batch + 1)
                        + "; try a lower learning_rate (now " + formatGeneral(config.learningRate) + ")";
            return false;
        }
        if (c[kStop] > 0) {
            m_stopped = true;
            return false;
        }
        lossSum += c[kLossSum];
        correct += c[kCorrect];
        seen += c[kSeen];
        if (m_localRank == 0 && (seconds(lastReport) >= 0.1 || pending.batch + 1 == batches)) {
            lastReport = Clock::now();
            BatchProgress progress{epoch, epochs, pending.batch + 1, batches, lossSum / seen, seen / seconds(start)};
            if (!m_world.observer->onBatch(progress))
                m_world.observerStop = true;
        }
        return true;
    };
    // With a lag the host reads step k's slots after queueing step k + lag, so a GPU never waits for it.
    std::deque<PendingControl> pending;
    const std::size_t lag = static_cast<std::size_t>(m_world.controlLag);
    for (std::int64_t k = 0; k < batches; ++k) {
        const std::int64_t begin = k * batch;
        const std::int64_t count = std::min(batch, n - begin);
        const BatchShare share = batchShare(count, world, m_rank);
        const std::int64_t mine = share.count;
        const std::int64_t offset = begin + share.offset;

        // Zeroes every gradient and the control slots; the .grad views stay views.
        for (auto &buffer : m_buckets)
            buffer.zero_();
        torch::Tensor &control = m_control;
        bool graphed = false;
        // A rank that failed waits, gradients zero, for the lagged read that ends every rank's epoch.
        if (m_failure.empty()) {
            try {
                if (m_rank == 0)
                    testPause("step");
                injectFault(RunOptions::FaultPoint::Step, m_globalStep, "at step " + std::to_string(m_globalStep));
                if (mine > 0) {
                    m_timer->mark();
                    const torch::Tensor idx = perm.slice(0, offset, offset + mine);
                    // Drawn for the whole global batch, so each image's alteration is the same whatever the world.
                    const auto draws = drawAugmentation(config.augmentation, config.seed, m_globalStep, count,
                                                        m_trainImages.size(1), m_trainImages.size(2));
                    const torch::Tensor x = input(m_trainImages.index_select(0, idx), draws, offset - begin);
                    const torch::Tensor y = m_trainLabels.index_select(0, idx);
                    m_timer->lap(SplitTimer::Data);
                    // The last, smaller batch of an epoch runs eagerly: a graph holds one shape.
                    graphed = count == batch && replayCompute(x, y, count, mine);
                    if (!graphed)
                        computeStep(x, y, count, mine);
                    m_timer->lap(SplitTimer::Compute);
                }
            } catch (const std::exception &e) {
                std::string error = errorText(e);
                if (error.find("out of memory") != std::string::npos)
                    error += " (try a smaller batch per device: lower batch_size or add devices)";
                fail(error);
                for (auto &buffer : m_buckets)
                    buffer.zero_();
            }
        }
        if (!m_failure.empty())
            control[kError] = 1.0f;
        if (m_world.stop->load() || m_world.observerStop.load())
            control[kStop] = 1.0f;

        if (m_collective) {
            m_timer->mark();
            for (auto &buffer : m_buckets)
                m_collective->allreduceSum(buffer);
            m_timer->lap(SplitTimer::Allreduce);
        }
        pending.push_back(sendToHost(control, k));
        if (lag == 0) {
            if (!consume(pending.front()))
                return false;
            pending.pop_front();
        }
        // Outside the slots this step carried: a failure here (an out-of-memory) rides on the next step's.
        if (m_failure.empty()) {
            try {
                injectFault(RunOptions::FaultPoint::OptimizerStep, m_globalStep,
                            "in the optimizer step " + std::to_string(m_globalStep));
                m_timer->mark();
                if (!graphed || !replayUpdate())
                    optimizerStep();
                if (m_average)
                    updateAverage();
                m_timer->lap(SplitTimer::Optimizer);
            } catch (const std::exception &e) {
                fail(errorText(e));
            }
        }
        ++m_globalStep;
        if (pending.size() > lag) {
            if (!consume(pending.front()))
                return false;
            pending.pop_front();
        }
    }
    for (; !pending.empty(); pending.pop_front()) {
        if (!consume(pending.front()))
            return false;
    }
    m_epochSeconds = seconds(start);
    const TimeSplit time = m_timer->finish(m_rank, m_epochSeconds);
    if (const std::string warning = m_timer->takeWarning(); !warning.empty())
        log(who() + warning);
    // Read by local rank 0 after evaluation's all-reduce, which every local rank joins after this.
    if (m_timer->measuring()) {
        std::lock_guard<std::mutex> lock(m_world.mutex);
        m_world.times.push_back(time);
    }
    m_epochLoss = lossSum / seen;
    m_epochAcc = correct / seen;
    m_epochRate = seen / m_epochSeconds;
    // The all-reduced gradient is the same on every rank: rank 0 says what clipping did.
    m_epochGradNorm = m_gradNormSum.item<double>() / static_cast<double>(batches);
    if (m_rank == 0 && m_clippedSteps.defined()) {
        const double clipped = m_clippedSteps.item<double>();
        log("epoch " + std::to_string(epoch) + ": gradient norm before clipping: mean " + formatGeneral(m_epochGradNorm, 3) + ", largest "
            + formatGeneral(m_gradNormMax.item<double>(), 3) + "; clipped to " + formatGeneral(config.gradClipNorm) + " in "
            + formatFixed(100.0 * clipped / static_cast<double>(batches), 0) + "% of the " + std::to_string(batches) + " steps");
    }
    return true;
}

void Replica::computeStep(const torch::Tensor &x, const torch::Tensor &y, std::int64_t count, std::int64_t mine)
{
    const torch::Tensor logits = m_model->forward(x).to(torch::kFloat32);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits, y,
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum).label_smoothing(m_world.config.labelSmoothing));
    // Scaled so that the SUM over the ranks is already the mean over the global batch.
    (loss * (1.0 / static_cast<double>(count))).backward();
    m_control[kLossSum] = loss.detach();
    m_control[kCorrect] = logits.argmax(1).eq(y).sum().to(torch::kFloat32);
    m_control[kSeen] = static_cast<float>(mine);
}

// Each step shape once on zeros before epoch 1's clock starts, then evaluation's: cuDNN's autotune and the first
// allocations happen here. BatchNorm's statistics are put back and the gradients zeroed, so the run computes the same.
void Replica::warmUp()
{
    const auto start = Clock::now();
    const std::int64_t n = m_trainLabels.size(0), batch = m_world.config.batchSize;
    std::vector<std::int64_t> counts{std::min(batch, n)};
    if (n > batch && n % batch != 0)
        counts.push_back(n % batch);
    std::vector<torch::Tensor> saved;
    for (const auto &b : m_model->buffers())
        saved.push_back(b.detach().clone());
    auto zeros = [&](std::int64_t images) {
        return input(torch::zeros({images, m_trainImages.size(1), m_trainImages.size(2)}, m_trainImages.options()));
    };
    std::string shapes;
    try {
        for (const std::int64_t count : counts) {
            if (const std::int64_t mine = shareOf(count); mine > 0) {
                computeStep(zeros(mine), torch::zeros({mine}, m_trainLabels.options()), count, mine);
                shapes += (shapes.empty() ? "" : " and ") + std::to_string(mine);
            }
        }
        torch::NoGradGuard noGrad;
        m_model->eval();
        m_model->forward(zeros(std::max<std::int64_t>(1, shareOf(batch))));
#ifdef TRAINLAB_WITH_CUDA
        if (m_device.is_cuda())
            c10::cuda::getCurrentCUDAStream().synchronize();
#endif
    } catch (const std::exception &e) {
        std::string error = "in the warm-up: " + errorText(e);
        if (error.find("out of memory") != std::string::npos)
            error += " (try a smaller batch per device: lower batch_size or add devices)";
        fail(error);   // carried by epoch 1's first step, as a failed step's would be
    }
    {
        torch::NoGradGuard noGrad;
        auto buffers = m_model->buffers();
        for (std::size_t i = 0; i < buffers.size(); ++i)
            buffers[i].copy_(saved[i]);
    }
    for (auto &buffer : m_buckets)
        buffer.zero_();
    m_model->train();
    if (m_failure.empty()) {
        const double took = seconds(start);
        {
            std::lock_guard<std::mutex> lock(m_world.mutex);
            m_world.warmupSeconds = std::max(m_world.warmupSeconds, took);
        }
        log(who() + "warm-up: steps of " + shapes + " images and an evaluation batch in " + formatFixed(took, 2)
            + " s (not counted in epoch 1)");
    }
}

void Replica::optimizerStep()
{
    // Read by the step below (fused or LibTorch's); a captured update holds it fixed, so graphs take it only
    // when the schedule is constant.
    const torch::Tensor norm = stepOptimizer(*m_optimizer, learningRateAt(m_world.config, m_globalStep, m_stepsPerEpoch), m_world.config, true);
    if (norm.defined()) {
        torch::NoGradGuard noGrad;
        m_gradNormSum.add_(norm);
        if (m_clippedSteps.defined()) {
            m_gradNormMax.copy_(at::maximum(m_gradNormMax, norm));
            m_clippedSteps.add_(norm.gt(m_world.config.gradClipNorm).to(torch::kFloat32));
        }
    }
}

// average = d * average + (1 - d) * weights, d warmed up as timm's ModelEma does (min(decay, (1 + t) / (10 + t)) at
// step t), so a short run's average is not held back by the first weights. Eager: d changes, a graph would fix it.
void Replica::updateAverage()
{
    const double t = static_cast<double>(m_globalStep);
    const double d = std::min(m_world.config.emaDecay, (1.0 + t) / (10.0 + t));
    torch::NoGradGuard noGrad;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    at::_foreach_lerp_(m_averaged, m_averagedFrom, 1.0 - d);   // one pass over the tensors, not two
#else
    at::_foreach_mul_(m_averaged, d);
    at::_foreach_add_(m_averaged, m_averagedFrom, 1.0 - d);
#endif
}

#ifdef TRAINLAB_WITH_CUDA
// Records work into graph on this thread's (side) stream; a capture that fails for any reason turns graphs off for
// this replica and the run goes on eagerly: nothing ran during the capture, so the step is simply done again.
bool Replica::capture(at::cuda::CUDAGraph &graph, c10::cuda::MempoolId_t pool, const std::function<void()> &work,
                      const char *what)
{
    try {
        c10::cuda::getCurrentCUDAStream().synchronize();
        // Thread-local: the other replicas' threads go on allocating and launching while this one captures.
        graph.capture_begin(pool, cudaStreamCaptureModeThreadLocal);
        try {
            work();
        } catch (...) {
            try {
                graph.capture_end();
            } catch (const std::exception &) {
                // The capture is invalid already; ending it is all that was needed.
            }
            throw;
        }
        graph.capture_end();
        return true;
    } catch (const std::exception &e) {
        log(who() + "CUDA graphs off, the steps run eagerly: capturing the " + what + " failed: " + errorText(e));
        m_graphs.reset();
        return false;
    }
}
#endif

bool Replica::replayCompute([[maybe_unused]] const torch::Tensor &x, [[maybe_unused]] const torch::Tensor &y,
                            [[maybe_unused]] std::int64_t count, [[maybe_unused]] std::int64_t mine)
{
#ifdef TRAINLAB_WITH_CUDA
    if (!m_graphs)
        return false;
    if (!m_graphs->computeReady) {
        if (m_graphs->warmSteps < kGraphWarmSteps) {
            ++m_graphs->warmSteps;
            return false;
        }
        // Fixed input buffers, allocated outside the capture: each replay reads what was copied into them.
        m_graphs->x = at::empty_strided(x.sizes(), x.strides(), x.options());
        m_graphs->y = at::empty_like(y);
        m_graphs->x.copy_(x);
        m_graphs->y.copy_(y);
        if (!capture(m_graphs->compute, {0, 0}, [&] { computeStep(m_graphs->x, m_graphs->y, count, mine); },
                     "forward and backward"))
            return false;
        m_graphs->computeReady = true;
        log(who() + "CUDA graphs: captured the forward and backward of a " + std::to_string(mine) + "-image step");
    }
    m_graphs->x.copy_(x);
    m_graphs->y.copy_(y);
    m_graphs->compute.replay();
    return true;
#else
    return false;
#endif
}

bool Replica::replayUpdate()
{
#ifdef TRAINLAB_WITH_CUDA
    if (!m_graphs)
        return false;
    if (!m_graphs->updateReady) {
        // AdamW's bias corrections change every step on the host: a captured update would hold them fixed.
        if (!constantSchedule(m_world.config) || m_world.config.optimizer != "sgd")
            return false;
        if (!capture(m_graphs->update, m_graphs->compute.pool(), [&] { optimizerStep(); }, "optimizer step"))
            return false;
        m_graphs->updateReady = true;
    }
    m_graphs->update.replay();
    return true;
#else
    return false;
#endif
}

// The confusion matrix and mistakes of the last evaluation pass, saved beside the checkpoint that holds its
// weights: no second pass over the test set. Never fails the run; the log says what happened.
void Replica::saveEvaluation()
{
    if (m_rank != 0 || !m_world.record || m_lastEvaluatedEpoch == 0 || !m_failure.empty())
        return;
    try {
        const torch::Tensor logits = m_lastLogits.to(torch::kCPU).contiguous();
        const torch::Tensor labels = m_testLabels.to(torch::kCPU).to(torch::kLong).contiguous();
        const torch::Tensor images = m_testImages.to(torch::kCPU).to(torch::kUInt8).contiguous();
        Evaluation e = summarizePredictions(
            std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel()),
            std::vector<std::int64_t>(labels.data_ptr<std::int64_t>(), labels.data_ptr<std::int64_t>() + labels.numel()),
            classNames(m_world.config));
        attachMistakeImages(e, images.data_ptr<std::uint8_t>(), images.size(0), static_cast<int>(images.size(1)),
                            static_cast<int>(images.size(2)));
        e.epoch = m_lastEvaluatedEpoch;
        if (!m_world.record->saveEvaluation(e))
            return;
        std::string line = "evaluation: " + std::string(kEvaluationFile) + " of epoch " + std::to_string(e.epoch)
                           + ", top-3 " + formatFixed(e.top3, 4);
        if (!e.mostConfused.empty()) {
            const ConfusedPair &p = e.mostConfused.front();
            line += ", most confused " + e.classNames[static_cast<std::size_t>(p.truth)] + " -> "
                    + e.classNames[static_cast<std::size_t>(p.predicted)] + " (" + std::to_string(p.count) + ")";
        }
        log(line);
    } catch (const std::exception &e) {
        log("evaluation: " + std::string(kEvaluationFile) + " not written: " + errorText(e));
    }
}

double Replica::evaluate(int epoch)
{
    // BatchNorm statistics differ per replica after training: average them first.
    allreduceMean(m_collective.get(), floatBuffers(*m_model), m_world.worldSize);
    if (m_average)
        allreduceMean(m_collective.get(), floatBuffers(*m_average), m_world.worldSize);
    torch::nn::Sequential &evaluated = m_average ? m_average : m_model;
    torch::NoGradGuard noGrad;
    m_model->eval();
    const std::int64_t n = m_testLabels.size(0);
    const std::int64_t world = m_world.worldSize;
    const std::int64_t begin = n * m_rank / world, end = n * (m_rank + 1) / world;
    // Warmed up: chunks of the training batch's shape, the last one padded, so no new shape meets the autotuner.
    const bool padded = m_world.config.speed.warmupOn(m_deviceId);
    const std::int64_t batch = std::max<std::int64_t>(1, padded ? shareOf(m_world.config.batchSize) : m_world.config.batchSize / world);
    // Correct, seen, and an error slot, so a rank that fails here still joins the sum (float: exact to 2^24 images),
    // then every test image's logits, zero outside this rank's slice: one sum gives each rank all of them, exactly.
    const std::int64_t classes = m_world.config.model.numClasses;
    torch::Tensor slots = torch::zeros({3 + n * classes}, torch::TensorOptions().dtype(torch::kFloat32).device(m_device));
    torch::Tensor counts = slots.slice(0, 0, 3);
    torch::Tensor logits = slots.slice(0, 3).view({n, classes});
    // A rank that failed after the epoch's last slots says so here, where every rank joins the sum.
    if (!m_failure.empty()) {
        counts[2] = 1.0;
    } else {
        try {
            if (m_rank == 0)
                testPause("evaluate");
            injectFault(RunOptions::FaultPoint::Evaluate, epoch, "in the evaluation of epoch " + std::to_string(epoch));
            for (std::int64_t i = begin; i < end; i += batch) {
                const std::int64_t stop = std::min(end, i + batch);
                torch::Tensor images = m_testImages.slice(0, i, stop);
                if (padded && stop - i < batch)
                    images = torch::cat({images, images.new_zeros({batch - (stop - i), images.size(1), images.size(2)})});
                const torch::Tensor y = m_testLabels.slice(0, i, stop);
                const torch::Tensor out = evaluated->forward(input(images)).to(torch::kFloat32).slice(0, 0, stop - i);
                logits.slice(0, i, stop).copy_(out);
                counts[0] += out.argmax(1).eq(y).sum().to(torch::kFloat32);
            }
            counts[1] = static_cast<float>(end - begin);
        } catch (const std::exception &e) {
            fail(errorText(e));
            counts[2] = 1.0;
        }
    }
    if (m_collective)
        m_collective->allreduceSum(slots);
    const PendingControl pending = sendToHost(counts, 0);
    const float *c = pending.wait();
    if (c[2] > 0) {
        if (m_failure.empty())
            m_failure = "stopped because " + failedRank();
        return 0.0;
    }
    m_lastLogits = logits;
    m_lastEvaluatedEpoch = epoch;
    return static_cast<double>(c[0]) / static_cast<double>(c[1]);
}

void Replica::run()
{
#ifdef TRAINLAB_WITH_CUDA
    // Each worker drives its own device on its own stream.
    std::optional<c10::cuda::CUDAStreamGuard> streamGuard;
    if (m_device.is_cuda()) {
        c10::cuda::set_device(m_device.index());
        at::globalContext().setBenchmarkCuDNN(true);
        streamGuard.emplace(c10::cuda::getStreamFromPool(false, m_device.index()));
    }
#endif
    m_timer = std::make_unique<SplitTimer>(m_device.is_cuda());
    const int epochs = m_world.config.epochs;
    RunResult result;
    result.epochs = m_world.done;
    const std::int64_t n = m_world.data->train.size();
    m_stepsPerEpoch = (n + m_world.config.batchSize - 1) / m_world.config.batchSize;
    m_globalStep = static_cast<long>(m_world.startEpoch * m_stepsPerEpoch);
    try {
        const bool ready = setUp();
        if (ready && m_world.startEpoch < epochs && m_world.config.speed.warmupOn(m_deviceId))
            warmUp();
        for (int epoch = m_world.startEpoch + 1; ready && epoch <= epochs; ++epoch) {
            if (!trainEpoch(epoch, epochs) || m_stopped)
                break;
            const double testAcc = evaluate(epoch);
            if (!m_failure.empty())
                break;
            EpochMetrics m{epoch, m_epochLoss, m_epochAcc, testAcc, m_epochSeconds, m_epochRate, {}, m_epochLearningRate, {}, 0.0, m_epochGradNorm};
            if (m_localRank == 0) {
                // Every local replica has warmed up by now: each took part in this epoch's all-reduces.
                std::lock_guard<std::mutex> lock(m_world.mutex);
                if (epoch == m_world.startEpoch + 1)
                    m.warmupSeconds = m_world.warmupSeconds;
                m.time.swap(m_world.times);
                std::sort(m.time.begin(), m.time.end(), [](const TimeSplit &a, const TimeSplit &b) { return a.rank < b.rank; });
            }
            if (m_localRank == 0 && m_world.options.node.nnodes > 1) {
                try {
                    exchangeNodeReports(epoch, m);
                } catch (const std::exception &e) {
                    fail(errorText(e));   // as below: the next collective stops the others
                }
            }
            result.epochs.push_back(m);
            try {
                injectFault(RunOptions::FaultPoint::EpochEnd, epoch, "at the end of epoch " + std::to_string(epoch));
                if (m_rank == 0 && m_world.record) {
                    std::string bytes;
                    if (m_world.record->wantsCheckpoint(m)) {
                        CheckpointInfo info;
                        info.epoch = epoch;
                        info.seed = m_world.config.seed;
                        info.config = m_world.boundConfig;
                        info.metrics = result.epochs;
                        bytes = serializeCheckpoint(*m_model, *m_optimizer, info, m_average ? m_average.get() : nullptr);
                    }
                    std::vector<TbHistogram> weights;
                    if (m_world.record->wantsHistograms()) {
                        try {
                            weights = weightHistograms(*m_model);
                        } catch (const std::exception &e) {
                            log("TensorBoard: the weights' histograms of epoch " + std::to_string(epoch) + " not written: "
                                + errorText(e));
                        }
                    }
                    m_world.record->commitEpoch(m, bytes, weights);
                    m.devices = m_world.record->lastDevices();
                    if (const std::string warning = m_world.record->takeWarning(); !warning.empty())
                        log(warning);
                    testPause("epoch-end");
                }
            } catch (const std::exception &e) {
                // Raised in the next step's all-reduce, so the other ranks stop there instead of waiting in it.
                fail(errorText(e));
            }
            report([&](TrainingObserver &o) { o.onEpoch(m); });
            // Every rank holds the same test accuracies (summed counts), so every rank stops here alike.
            std::vector<double> accuracies;
            for (const EpochMetrics &e : result.epochs)
                accuracies.push_back(e.testAcc);
            if (const int best = earlyStopBestEpoch(accuracies, m_world.config.earlyStopping); best > 0 && m_failure.empty()) {
                result.note = "stopped early at epoch " + std::to_string(epoch) + " (best " + std::to_string(best) + ")";
                log(result.note);
                break;
            }
        }
    } catch (const StopRequested &) {
        m_stopped = true;
    } catch (const std::exception &e) {
        m_failure = who() + errorText(e);
    }
    saveEvaluation();
    // A failed NCCL world is aborted so no peer and no watchdog keeps waiting on its communicators.
    if (!m_failure.empty() && m_collective)
        m_collective->abort();
    result.status = !m_failure.empty() ? RunStatus::Failed : m_stopped ? RunStatus::Stopped : RunStatus::Completed;
    result.error = m_failure;
    result.summarize();
    if (m_localRank == 0) {
        std::lock_guard<std::mutex> lock(m_world.mutex);
        m_world.result = std::move(result);
        if (m_model)
            m_world.digest = weightsDigest(*m_model);
    }
}

} // namespace

std::string weightsDigest(const torch::nn::Module &model)
{
    std::uint64_t hash = 1469598103934665603ULL;
    auto feed = [&](const torch::Tensor &t) {
        const torch::Tensor c = t.detach().cpu().contiguous();
        const auto *p = static_cast<const unsigned char *>(c.data_ptr());
        for (std::size_t i = 0; i < c.nbytes(); ++i)
            hash = (hash ^ p[i]) * 1099511628211ULL;
    };
    for (const auto &p : model.parameters())
        feed(p);
    for (const auto &b : model.buffers())
        feed(b);
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

EngineResult runEngine(EngineSetup setup, TrainingObserver &observer, const StopFlag &stop)
{
    World world;
    world.config = setup.config;
    world.data = &setup.data;
    world.options = setup.options;
    world.record = setup.record;
    world.observer = &observer;
    world.stop = &stop;
    world.boundConfig = checkpointConfigJson(setup.config.toJson());
    world.resumeCheckpoint = setup.resumeCheckpoint;
    world.resumeOrigin = setup.resumeOrigin;
    try {
        world.config.devices = processDevices(setup.config.devices, world.options.node);
    } catch (const std::exception &e) {
        EngineResult refused;
        refused.result.status = RunStatus::Failed;
        refused.result.error = e.what();
        return refused;
    }
    const ExperimentConfig &config = world.config;
    const NodeOptions &node = world.options.node;
    const auto timeout = std::chrono::milliseconds(1000LL * config.collectiveTimeoutSeconds);
    const int local = static_cast<int>(config.devices.size());
    EngineResult out;
    auto fail = [&](const std::string &error) {
        out.result.status = RunStatus::Failed;
        out.result.error = error;
        return out;
    };
    keepLargeBuffersInHeap();
    useHugePagesForLargeTensors();
    const StopCheck stopCheck = [&world] { return world.stop->load() || world.observerStop.load(); };
    try {
        if (node.nnodes > 1) {
            world.rendezvous = Rendezvous::tcp(node.masterAddr, node.masterPort, node.nodeRank == 0 && node.hostStore, timeout,
                                               stopCheck, node.storePrefix);
            nlohmann::json mine = nlohmann::json::parse(config.toJson());
            const nlohmann::json devices = mine["devices"];
            mine.erase("devices");
            // Node 0 holds the run record; a resumed run's state reaches the other nodes through the store.
            const bool resuming = node.nodeRank == 0 && world.resumeCheckpoint;
            if (resuming)
                world.rendezvous->set("resume/checkpoint", *world.resumeCheckpoint);
            const std::string rank = std::to_string(node.nodeRank);
            // One process per node rank: a second with the same --node-rank is refused before it touches the world.
            if (world.rendezvous->add("claim/node/" + rank, 1) > 1)
                return fail("node " + rank + " is already taken: another process joined the rendezvous at "
                            + node.masterAddr + ":" + std::to_string(node.masterPort) + " with --node-rank " + rank);
            world.rendezvous->set("node/" + rank, nlohmann::json{{"config", mine}, {"devices", devices}, {"resume", resuming},
                                                                 {"nnodes", node.nnodes}}.dump());
            for (int r = 0; r < node.nnodes; ++r) {
                const auto other = nlohmann::json::parse(world.rendezvous->get(
                    "node/" + std::to_string(r), "node " + std::to_string(r) + " of " + std::to_string(node.nnodes)
                                                     + " did not join the rendezvous at " + node.masterAddr + ":"
                                                     + std::to_string(node.masterPort)));
                if (other.value("nnodes", node.nnodes) != node.nnodes)
                    return fail("this node (" + rank + ") says " + std::to_string(node.nnodes) + " nodes, node "
                                + std::to_string(r) + " says " + std::to_string(other.value("nnodes", 0))
                                + " (every node must be started with the same --nnodes)");
                if (other["config"] != mine)
                    return fail("node " + std::to_string(r) + " was given a different configuration than node "
                                + std::to_string(node.nodeRank)
                                + " (every node must run the same config; only devices may differ)");
                if (r < node.nodeRank)
                    world.rankOffset += static_cast<int>(other["devices"].size());
                if (r == 0 && node.nodeRank != 0 && other.value("resume", false)) {
                    world.resumeCheckpoint = std::make_shared<const std::string>(
                        world.rendezvous->get("resume/checkpoint", "node 0's checkpoint"));
                    world.resumeOrigin = "node 0's checkpoint";
                }
                for (const auto &d : other["devices"])
                    world.worldDevices.push_back("node" + std::to_string(r) + ":" + d.get<std::string>());
            }
            world.worldSize = static_cast<int>(world.worldDevices.size());
            if (world.record)
                world.record->setDevicePrefix(nodeDevicePrefix(node.nodeRank, node.processesPerNode));
            else if (node.localRank == 0)
                world.nodeSampler = std::make_unique<DeviceSampler>(cudaBusIds());
        } else {
            world.worldDevices = config.devices;
            world.worldSize = local;
            if (local > 1)
                world.rendezvous = Rendezvous::inProcess(timeout, stopCheck);
        }
        std::size_t cudaRanks = 0;
        for (const auto &d : world.worldDevices)
            cudaRanks += d.find("cuda:") != std::string::npos ? 1 : 0;
        world.nccl = world.worldSize > 1 && cudaRanks == world.worldDevices.size();
        // NCCL's watchdog tears the whole process (and the window) down on a failed collective by default;
        // 2 aborts the communicators and fails the work instead. Set before any group exists; the user's wins.
        if (world.nccl) {
            ::setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2", 0);
            ::setenv("NCCL_ASYNC_ERROR_HANDLING", "2", 0);
        }
        const bool anyCuda = cudaRanks > 0;
        // Every rank must read its slots at the same step: decided from the devices of the whole world.
        world.controlLag = world.options.controlLag >= 0 ? world.options.controlLag : anyCuda ? 1 : 0;
        // Processes sharing a machine (torchrun, srun) share its cores.
        const int threads = config.cpuThreads > 0 ? config.cpuThreads : std::max(1, logicalCores() / std::max(1, node.processesPerNode));
        int cpuReplicas = 0;
        for (const auto &d : config.devices)
            cpuReplicas += d == "cpu" ? 1 : 0;
        world.threadsPerReplica = std::max(1, threads / std::max(1, cpuReplicas));
        torch::manual_seed(config.seed);
        world.master = setup.makeModel();
        if (world.resumeCheckpoint) {
            const CheckpointInfo info = loadCheckpointBytes(*world.resumeCheckpoint, world.resumeOrigin, *world.master, nullptr);
            // The other nodes' configurations were compared with node 0's at the rendezvous.
            if (const std::string saved = currentBoundConfig(info.config); node.nodeRank == 0 && saved != world.boundConfig) {
                std::string keys;
                for (const auto &k : configDifferences(saved, world.boundConfig))
                    keys += (keys.empty() ? "" : ", ") + k;
                return fail(world.resumeOrigin + ": belongs to a different configuration (differs in: " + keys + ")");
            }
            world.startEpoch = info.epoch;
            world.done = info.metrics;
        }
    } catch (const StopRequested &) {
        out.result.status = RunStatus::Stopped;
        return out;
    } catch (const std::exception &e) {
        return fail(errorText(e));
    }
    auto makeModel = setup.makeModel;
    world.replicas.resize(static_cast<std::size_t>(local));
    world.averages.resize(static_cast<std::size_t>(local));

    RunInfo info;
    info.devices = world.worldDevices;
    info.worldSize = world.worldSize;
    info.trainSize = setup.data.train.size();
    info.testSize = setup.data.test.size();
    info.parameterCount = parameterCount(*world.master);
    info.epochs = config.epochs;
    info.epochsDone = world.startEpoch;
    info.doneMetrics = world.done;
    info.batchesPerEpoch = (info.trainSize + config.batchSize - 1) / config.batchSize;
    info.runDir = setup.record ? setup.record->dir() : std::string();
    observer.onRunStarted(info);
    observer.onLog("speed: " + config.speed.describe(config.devices, config.precision, winogradUnavailableReason(), config.optimizer));
    if (std::find(config.devices.begin(), config.devices.end(), "cpu") != config.devices.end())
        observer.onLog(hostMemoryDescription());
    if (config.augmentation.any())
        observer.onLog("augmentation: " + config.augmentation.describe());
    if (config.emaDecay > 0)
        observer.onLog("weight average: decay " + formatGeneral(config.emaDecay)
                       + " after every step; the test accuracy is the average's");

    std::vector<std::thread> threads;
    std::vector<std::unique_ptr<Replica>> replicas;
    for (int r = 0; r < local; ++r)
        replicas.push_back(std::make_unique<Replica>(world, r, makeModel));
    for (int r = 1; r < local; ++r)
        threads.emplace_back([&, r] { replicas[static_cast<std::size_t>(r)]->run(); });
    replicas[0]->run();
    for (auto &t : threads)
        t.join();
    out.result = world.result;
    out.replicas = world.replicas;
    if (config.emaDecay > 0)
        out.averages = world.averages;
    out.weightsDigest = world.digest;
    releaseFreeHeap();
    return out;
}

} // namespace trainlab
