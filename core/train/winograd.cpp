#include "core/train/winograd.h"

#include <torch/types.h>

#if TRAINLAB_WITH_DNNL_WINOGRAD

#include <ATen/autocast_mode.h>
#include <torch/autograd.h>
#include <torch/version.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace trainlab {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine &cpuEngine()
{
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// One shape's primitives, all three made together: where one is missing the shape runs LibTorch's conv2d.
struct Kernels
{
    dnnl::convolution_forward::primitive_desc forwardPd;
    dnnl::convolution_forward forward;
    dnnl::convolution_backward_data::primitive_desc dataPd;
    dnnl::convolution_backward_data backwardData;
    dnnl::convolution_backward_weights::primitive_desc weightsPd;
    dnnl::convolution_backward_weights backwardWeights;
};

using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>; // N, C, O, H, W

memory::desc anyDesc(const memory::dims &d)
{
    return memory::desc(d, memory::data_type::f32, Tag::any);
}

dnnl::primitive_attr userScratchpad()
{
    dnnl::primitive_attr attr;
    // The caller passes the scratch memory (execute()): concurrent replicas then share the primitives safely.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

std::shared_ptr<Kernels> makeKernels(const Shape &s)
{
    const auto [n, c, o, h, w] = s;
    const auto src = anyDesc({n, c, h, w}), dst = anyDesc({n, o, h, w}), weights = anyDesc({o, c, 3, 3}), bias = anyDesc({o});
    const memory::dims stride{1, 1}, padding{1, 1};
    const auto algorithm = dnnl::algorithm::convolution_winograd;
    const auto attr = userScratchpad();
    try {
        auto k = std::make_shared<Kernels>();
        const dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training, algorithm, src, weights, bias, dst,
                                                  stride, padding, padding);
        k->forwardPd = dnnl::convolution_forward::primitive_desc(fwd, attr, cpuEngine());
        k->forward = dnnl::convolution_forward(k->forwardPd);
        const dnnl::convolution_backward_data::desc data(algorithm, src, weights, dst, stride, padding, padding);
        k->dataPd = dnnl::convolution_backward_data::primitive_desc(data, attr, cpuEngine(), k->forwardPd);
        k->backwardData = dnnl::convolution_backward_data(k->dataPd);
        const dnnl::convolution_backward_weights::desc wd(algorithm, src, weights, bias, dst, stride, padding, padding);
        k->weightsPd = dnnl::convolution_backward_weights::primitive_desc(wd, attr, cpuEngine(), k->forwardPd);
        k->backwardWeights = dnnl::convolution_backward_weights(k->weightsPd);
        return k;
    } catch (const dnnl::error &) {
        return nullptr; // no Winograd kernel for this shape or CPU
    }
}

std::shared_ptr<Kernels> kernelsFor(const Shape &s)
{
    static std::mutex mutex;
    static std::map<Shape, std::shared_ptr<Kernels>> cache; // null: no Winograd kernel for the shape
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(s);
    if (it == cache.end())
        it = cache.emplace(s, makeKernels(s)).first;
    return it->second;
}

bool isNhwc(const torch::Tensor &t)
{
    return !t.is_contiguous() && t.is_contiguous(at::MemoryFormat::ChannelsLast);
}

// t as oneDNN memory in its own layout (NCHW or NHWC for activations, OIHW or OHWI for weights), no copy; t must
// stay alive and dense in that layout.
memory wrap(const torch::Tensor &t, bool weights)
{
    const memory::dims d(t.sizes().begin(), t.sizes().end());
    const Tag tag = weights ? (isNhwc(t) ? Tag::ohwi : Tag::oihw) : (isNhwc(t) ? Tag::nhwc : Tag::nchw);
    return memory(memory::desc(d, memory::data_type::f32, tag), cpuEngine(), t.data_ptr());
}

torch::Tensor dense(const torch::Tensor &t)
{
    return isNhwc(t) ? t : t.contiguous();
}

// A buffer for memory in oneDNN's own (blocked) layout desc, owned by LibTorch's allocator.
struct Blocked
{
    torch::Tensor storage;
    memory mem;
};

Blocked allocate(const memory::desc &desc)
{
    Blocked b;
    b.storage = torch::empty({static_cast<std::int64_t>(desc.get_size())}, torch::kUInt8);
    b.mem = memory(desc, cpuEngine(), b.storage.data_ptr());
    return b;
}

void reorder(dnnl::stream &stream, memory from, memory to)
{
    dnnl::reorder(from, to).execute(stream, from, to);
}

// from in desc's layout: from itself where it already is, else a reordered copy.
Blocked toLayout(dnnl::stream &stream, const memory &from, const torch::Tensor &owner, const memory::desc &desc)
{
    if (from.get_desc() == desc)
        return {owner, from};
    Blocked b = allocate(desc);
    reorder(stream, from, b.mem);
    return b;
}

// An uninitialised fp32 tensor of sizes in the layout (NCHW/OIHW or NHWC/OHWI) asked for, allocated once.
torch::Tensor emptyIn(bool nhwc, at::IntArrayRef sizes)
{
    return torch::empty(sizes, torch::TensorOptions().dtype(torch::kFloat).memory_format(
                                   nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous));
}

void execute(dnnl::stream &stream, const dnnl::primitive &p, const memory::desc &scratchpad,
             std::unordered_map<int, memory> args)
{
    // Up to 134 MB (batch 128): one buffer per thread, kept, as a fresh one each call costs its page faults.
    thread_local torch::Tensor scratch;
    const auto size = static_cast<std::int64_t>(scratchpad.get_size());
    if (!scratch.defined() || scratch.numel() < size)
        scratch = torch::empty({size}, torch::kUInt8);
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratchpad, cpuEngine(), scratch.data_ptr()));
    p.execute(stream, args);
}

class WinogradFunction : public torch::autograd::Function<WinogradFunction>
{
public:
    static torch::Tensor forward(torch::autograd::AutogradContext *ctx, const torch::Tensor &input,
                                 const torch::Tensor &weight, const torch::Tensor &bias,
                                 const std::shared_ptr<Kernels> &kernels)
    {
        dnnl::stream stream(cpuEngine());
        const Kernels &k = *kernels;
        const torch::Tensor x = dense(input), w = dense(weight), b = bias.contiguous();
        const Blocked src = toLayout(stream, wrap(x, false), x, k.forwardPd.src_desc());
        const Blocked wei = toLayout(stream, wrap(w, true), w, k.forwardPd.weights_desc());
        const memory biasMem(k.forwardPd.bias_desc(), cpuEngine(), b.data_ptr());
        const Blocked dst = allocate(k.forwardPd.dst_desc());
        execute(stream, k.forward, k.forwardPd.scratchpad_desc(),
                {{DNNL_ARG_SRC, src.mem}, {DNNL_ARG_WEIGHTS, wei.mem}, {DNNL_ARG_BIAS, biasMem}, {DNNL_ARG_DST, dst.mem}});
        torch::Tensor output = emptyIn(isNhwc(x), {x.size(0), w.size(0), x.size(2), x.size(3)});
        reorder(stream, dst.mem, wrap(output, false));
        stream.wait();
        ctx->saved_data["shape"] = std::vector<std::int64_t>{x.size(0), x.size(1), w.size(0), x.size(2), x.size(3)};
        ctx->saved_data["src"] = src.storage;
        ctx->saved_data["nhwc"] = isNhwc(x);
        ctx->save_for_backward({weight});
        return output;
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list grads)
    {
        const auto v = ctx->saved_data["shape"].toIntVector();
        const auto kernels = kernelsFor({v[0], v[1], v[2], v[3], v[4]});
        const Kernels &k = *kernels;
        dnnl::stream stream(cpuEngine());
        const torch::Tensor weight = ctx->get_saved_variables()[0];
        const torch::Tensor w = dense(weight), g = dense(grads[0]);
        const memory gradMem = wrap(g, false);
        const memory savedSrc(k.forwardPd.src_desc(), cpuEngine(), ctx->saved_data["src"].toTensor().data_ptr());

        // Both backward primitives usually take the gradient in one blocked layout: reordered once then.
        const Blocked diffDst = toLayout(stream, gradMem, g, k.weightsPd.diff_dst_desc());
        torch::Tensor gradInput;
        if (ctx->needs_input_grad(0)) {
            const memory::desc &wanted = k.dataPd.diff_dst_desc();
            const Blocked dataDiffDst = wanted == diffDst.mem.get_desc() ? diffDst : toLayout(stream, gradMem, g, wanted);
            const Blocked wei = toLayout(stream, wrap(w, true), w, k.dataPd.weights_desc());
            const Blocked diffSrc = allocate(k.dataPd.diff_src_desc());
            execute(stream, k.backwardData, k.dataPd.scratchpad_desc(),
                    {{DNNL_ARG_DIFF_DST, dataDiffDst.mem}, {DNNL_ARG_WEIGHTS, wei.mem}, {DNNL_ARG_DIFF_SRC, diffSrc.mem}});
            const auto srcDims = k.forwardPd.src_desc().dims();
            gradInput = emptyIn(ctx->saved_data["nhwc"].toBool(), at::IntArrayRef(srcDims.data(), srcDims.size()));
            reorder(stream, diffSrc.mem, wrap(gradInput, false));
        }

        const Blocked src = toLayout(stream, savedSrc, ctx->saved_data["src"].toTensor(), k.weightsPd.src_desc());
        const Blocked diffWeights = allocate(k.weightsPd.diff_weights_desc());
        torch::Tensor gradBias = torch::empty({w.size(0)}, torch::kFloat);
        const memory biasMem(k.weightsPd.diff_bias_desc(), cpuEngine(), gradBias.data_ptr());
        execute(stream, k.backwardWeights, k.weightsPd.scratchpad_desc(),
                {{DNNL_ARG_SRC, src.mem}, {DNNL_ARG_DIFF_DST, diffDst.mem}, {DNNL_ARG_DIFF_WEIGHTS, diffWeights.mem},
                 {DNNL_ARG_DIFF_BIAS, biasMem}});
        torch::Tensor gradWeight = emptyIn(isNhwc(w), w.sizes());
        reorder(stream, diffWeights.mem, wrap(gradWeight, true));
        stream.wait();
        return {gradInput, gradWeight, gradBias, torch::Tensor()};
    }
};

bool autocastOnCpu()
{
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    return at::autocast::is_autocast_enabled(at::kCPU);
#else
    return at::autocast::is_cpu_enabled();
#endif
}

} // namespace

bool winogradAvailable()
{
    static const bool available = kernelsFor({16, 64, 64, 8, 8}) != nullptr;
    return available;
}

std::string winogradUnavailableReason()
{
    return winogradAvailable() ? std::string() : "this CPU has no oneDNN Winograd kernel (it needs AVX-512)";
}

torch::Tensor winogradConv2d(const torch::Tensor &input, const torch::Tensor &weight, const torch::Tensor &bias)
{
    if (!input.device().is_cpu() || input.scalar_type() != torch::kFloat || weight.scalar_type() != torch::kFloat
        || !bias.defined() || input.dim() != 4 || weight.dim() != 4 || weight.size(2) != 3 || weight.size(3) != 3
        || weight.size(1) != input.size(1) || autocastOnCpu())
        return {};
    const auto kernels = kernelsFor({input.size(0), input.size(1), weight.size(0), input.size(2), input.size(3)});
    if (!kernels)
        return {};
    return WinogradFunction::apply(input, weight, bias, kernels);
}

} // namespace trainlab

#else

namespace trainlab {

bool winogradAvailable()
{
    return false;
}

std::string winogradUnavailableReason()
{
    return "this build has no oneDNN 2 (libdnnl-dev, the oneDNN that LibTorch runs)";
}

torch::Tensor winogradConv2d(const torch::Tensor &, const torch::Tensor &, const torch::Tensor &)
{
    return {};
}

} // namespace trainlab

#endif
