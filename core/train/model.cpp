#include "core/train/model.h"

#include "core/train/winograd.h"

#include <torch/torch.h>

#include <cmath>

namespace trainlab {

namespace {

// d2l's Residual: conv-BN-ReLU-conv-BN plus an identity or 1x1-conv shortcut.
class ResidualImpl : public torch::nn::Cloneable<ResidualImpl>
{
public:
    ResidualImpl(int inChannels, int outChannels, bool use1x1, int stride)
        : m_in(inChannels), m_out(outChannels), m_use1x1(use1x1), m_stride(stride)
    {
        reset();
    }

    void reset() override
    {
        namespace nn = torch::nn;
        conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(m_in, m_out, 3).stride(m_stride).padding(1)));
        conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(m_out, m_out, 3).padding(1)));
        if (m_use1x1)
            conv3 = register_module("conv3", nn::Conv2d(nn::Conv2dOptions(m_in, m_out, 1).stride(m_stride)));
        bn1 = register_module("bn1", nn::BatchNorm2d(m_out));
        bn2 = register_module("bn2", nn::BatchNorm2d(m_out));
    }

    torch::Tensor forward(const torch::Tensor &input)
    {
        const torch::Tensor x = m_nchwInput ? input.contiguous() : input;
        // In place as d2l's `Y += X; relu(Y)`: BatchNorm's backward needs its input, not its output.
        torch::Tensor y = bn1(m_stride == 1 ? convolve(conv1, x) : conv1(x)).relu_();
        y = bn2(convolve(conv2, y));
        return y.add_(conv3 ? conv3(x) : x).relu_();
    }

    // From here on the net runs in NCHW (MemoryLayout::NhwcButLastStage).
    void setNchwInput(bool on) { m_nchwInput = on; }
    void setWinograd(bool on) { m_winograd = on; }

    torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
    torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};

private:
    // A 3×3 stride-1 conv: through oneDNN's Winograd kernels where they are on and apply, else LibTorch's.
    torch::Tensor convolve(torch::nn::Conv2d &conv, const torch::Tensor &x)
    {
        if (m_winograd) {
            torch::Tensor y = winogradConv2d(x, conv->weight, conv->bias);
            if (y.defined())
                return y;
        }
        return conv(x);
    }

    int m_in, m_out;
    bool m_use1x1;
    int m_stride;
    bool m_nchwInput = false;
    bool m_winograd = false;
};
TORCH_MODULE(Residual);

// Nested Sequentials cannot be stored in a Sequential, so each block's residuals join the net directly.
void addResnetBlock(torch::nn::Sequential &net, const std::string &name, int inChannels, int outChannels,
                    int residuals, bool firstBlock)
{
    for (int i = 0; i < residuals; ++i) {
        const std::string key = name + "_" + std::to_string(i);
        if (i == 0 && !firstBlock)
            net->push_back(std::string(key), Residual(inChannels, outChannels, true, 2));
        else
            net->push_back(std::string(key), Residual(outChannels, outChannels, false, 1));
    }
}

} // namespace

torch::nn::Sequential makeResNet18(int inChannels, int numClasses)
{
    namespace nn = torch::nn;
    nn::Sequential net;
    net->push_back("conv", nn::Conv2d(nn::Conv2dOptions(inChannels, 64, 3).stride(1).padding(1)));
    net->push_back("bn", nn::BatchNorm2d(64));
    // In place, as in the residuals: the stem's 25 MB (batch 128) ReLU output is one allocation less per step.
    net->push_back("relu", nn::ReLU(nn::ReLUOptions(true)));
    addResnetBlock(net, "resnet_block1", 64, 64, 2, true);
    addResnetBlock(net, "resnet_block2", 64, 128, 2, false);
    addResnetBlock(net, "resnet_block3", 128, 256, 2, false);
    addResnetBlock(net, kLastStageName, 256, 512, 2, false);
    net->push_back("global_avg_pool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
    net->push_back("flatten", nn::Flatten());
    net->push_back("fc", nn::Linear(512, numClasses));
    return net;
}

void initD2lWeights(torch::nn::Module &model)
{
    torch::NoGradGuard noGrad;
    // Only the net's own layers: d2l's Residual is built of LazyConv2d, which init_weights's type test skips.
    for (auto &module : model.children()) {
        if (auto *conv = module->as<torch::nn::Conv2d>())
            torch::nn::init::normal_(conv->weight, 0.0, 0.01);
        else if (auto *linear = module->as<torch::nn::Linear>())
            torch::nn::init::normal_(linear->weight, 0.0, 0.01);
    }
}

void initWeights(torch::nn::Module &model, const std::string &scheme)
{
    if (scheme == "d2l") {
        initD2lWeights(model);
    } else if (scheme == "kaiming") {
        torch::NoGradGuard noGrad;
        // torchvision's ResNet: BatchNorm and fc keep their defaults (1, 0 and Kaiming-uniform), as LibTorch makes them.
        for (const auto &module : model.modules()) {
            if (auto *conv = module->as<torch::nn::Conv2d>())
                torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
        }
    } else if (scheme != "pytorch") {
        throw std::invalid_argument("model.init: unknown scheme \"" + scheme + "\"");
    }
}

std::int64_t parameterCount(const torch::nn::Module &model)
{
    std::int64_t count = 0;
    for (const auto &p : model.parameters())
        count += p.numel();
    return count;
}

namespace {

std::vector<std::int64_t> nhwcStrides(c10::IntArrayRef n)
{
    return {n[1] * n[2] * n[3], 1, n[3] * n[1], n[1]};
}

} // namespace

torch::Tensor channelsLast(const torch::Tensor &t)
{
    if (t.dim() != 4)
        return t;
    const auto strides = nhwcStrides(t.sizes());
    if (t.strides() == c10::IntArrayRef(strides))
        return t;
    // One channel, contiguous: every element already sits where NHWC puts it.
    if (t.size(1) == 1 && t.is_contiguous())
        return t.as_strided(t.sizes(), strides);
    return at::empty_strided(t.sizes(), strides, t.options()).copy_(t);
}

void toMemoryLayout(torch::nn::Module &model, MemoryLayout layout)
{
    const std::string lastStage = kLastStageName;
    const auto inLastStage = [&](const std::string &name) { return name.compare(0, lastStage.size(), lastStage) == 0; };
    torch::NoGradGuard noGrad;
    for (const auto &tensors : {model.named_parameters(), model.named_buffers()}) {
        for (const auto &item : tensors) {
            torch::Tensor t = item.value();
            if (t.dim() != 4)
                continue;
            const bool nchw = layout == MemoryLayout::Nchw || (layout == MemoryLayout::NhwcButLastStage && inLastStage(item.key()));
            // Explicit both ways: a checkpoint gives each tensor the strides it was saved with.
            if (nchw && !t.is_contiguous())
                t.set_data(t.contiguous());
            else if (!nchw)
                t.set_data(at::empty_strided(t.sizes(), nhwcStrides(t.sizes()), t.options()).copy_(t));
        }
    }
    bool first = true;
    for (const auto &child : model.named_children()) {
        if (auto *residual = child.value()->as<ResidualImpl>()) {
            const bool turn = layout == MemoryLayout::NhwcButLastStage && first && inLastStage(child.key());
            residual->setNchwInput(turn);
            first = first && !turn;
        }
    }
}

void setWinograd(torch::nn::Module &model, bool on)
{
    for (const auto &module : model.modules()) {
        if (auto *residual = module->as<ResidualImpl>())
            residual->setWinograd(on);
    }
}

MemoryLayout applySpeedSwitches(torch::nn::Module &model, const ExperimentConfig &config, const std::string &deviceId)
{
    const MemoryLayout layout = config.speed.layout(deviceId, config.precision);
    toMemoryLayout(model, layout);
    setWinograd(model, config.speed.winogradOn(deviceId, config.precision) && winogradAvailable());
    return layout;
}

std::vector<TbHistogram> weightHistograms(const torch::nn::Module &model, int buckets)
{
    torch::NoGradGuard noGrad;
    std::vector<std::string> names;
    std::vector<torch::Tensor> weights, stats;
    for (const auto &p : model.named_parameters()) {
        if (p.value().dim() < 2)
            continue;
        const torch::Tensor w = p.value().detach().reshape({-1}).to(torch::kFloat32);
        names.push_back(p.key());
        weights.push_back(w);
        stats.push_back(torch::stack({w.min(), w.max(), w.sum(), w.square().sum()}));
    }
    if (weights.empty())
        return {};
    const torch::Tensor s = torch::stack(stats).to(torch::kCPU, torch::kFloat64).contiguous();
    const auto a = s.accessor<double, 2>();
    std::vector<TbHistogram> out;
    std::vector<torch::Tensor> counts;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        const auto row = static_cast<std::int64_t>(i);
        TbHistogram h;
        h.tag = "weights/" + names[i];
        h.min = a[row][0];
        h.max = a[row][1];
        h.num = static_cast<double>(weights[i].numel());
        h.sum = a[row][2];
        h.sumSquares = a[row][3];
        if (!std::isfinite(h.min) || !std::isfinite(h.max) || !std::isfinite(h.sumSquares))
            continue;
        // All values equal: one bucket up to that value (histc would widen the range instead).
        const int n = h.max > h.min ? buckets : 1;
        for (int k = 1; k <= n; ++k)
            h.limits.push_back(k == n ? h.max : h.min + (h.max - h.min) * k / n);
        counts.push_back(n > 1 ? torch::histc(weights[i], n, h.min, h.max)
                               : torch::full({1}, h.num, weights[i].options()));
        out.push_back(std::move(h));
    }
    if (out.empty())
        return out;
    // One read for every tensor's buckets; histc counts in the weights' float, exact below 2^24 per bucket.
    const torch::Tensor c = torch::cat(counts).to(torch::kCPU, torch::kFloat64).contiguous();
    const double *values = c.data_ptr<double>();
    for (TbHistogram &h : out) {
        h.counts.assign(values, values + h.limits.size());
        values += h.limits.size();
    }
    return out;
}

} // namespace trainlab
