#include "core/eval/export.h"

#include "core/eval/evaluation.h"
#include "core/eval/runmodel.h"
#include "core/util/atomicfile.h"
#include "core/util/protowire.h"
#include "trainlab/version.h"

#include <torch/torch.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <caffe2/serialize/inline_container.h>

#include <filesystem>
#include <functional>
#include <regex>
#include <stdexcept>
#include <variant>

namespace trainlab {

std::string pytorchKey(const std::string &trainlabKey)
{
    static const std::regex block(R"(resnet_block([1-4])_([01])\.(conv[123]|bn[12])\.(\w+))");
    static const std::regex stem(R"((conv|bn|fc)\.(\w+))");
    std::smatch m;
    if (std::regex_match(trainlabKey, m, block))
        return "resnet_block" + m[1].str() + "." + m[2].str() + "." + m[3].str() + "." + m[4].str();
    if (std::regex_match(trainlabKey, m, stem)) {
        const std::string module = m[1].str();
        return (module == "conv" ? "0" : module == "bn" ? "1" : "fc.1") + std::string(".") + m[2].str();
    }
    throw std::invalid_argument("not a parameter or buffer of the chapter's ResNet-18: \"" + trainlabKey + "\"");
}

std::string pytorchStateDict(torch::nn::Module &model)
{
    // Module by module, each one's parameters before its buffers: the order of PyTorch's state_dict().
    c10::Dict<std::string, at::Tensor> dict;
    for (const auto &item : model.named_modules("", /*include_self=*/false)) {
        auto add = [&](const std::string &name, const torch::Tensor &t) {
            const std::string key = pytorchKey(item.key() + "." + name);
            if (dict.contains(key))
                throw std::logic_error("two tensors map to " + key);
            dict.insert(key, t.detach().to(torch::kCPU).contiguous());
        };
        for (const auto &p : item.value()->named_parameters(/*recurse=*/false))
            add(p.key(), p.value());
        for (const auto &b : item.value()->named_buffers(/*recurse=*/false))
            add(b.key(), b.value());
    }
    // torch::pickle_save tags the dict with torch.jit._pickle.restore_type_tag, a global that
    // torch.load(weights_only=True), PyTorch 2.6's default, refuses: pickle it untagged instead.
    std::vector<char> pickled;
    torch::jit::Pickler pickler([&](const char *data, std::size_t size) { pickled.insert(pickled.end(), data, data + size); },
                                nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
    pickler.protocol();
    pickler.pushIValue(dict);
    pickler.stop();
    std::string bytes;
    caffe2::serialize::PyTorchStreamWriter writer([&](const void *data, std::size_t size) {
        bytes.append(static_cast<const char *>(data), size);
        return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
    writer.writeEndOfFile();
    return bytes;
}

namespace {

using namespace proto;

constexpr int kOnnxOpset = 13;
constexpr int kOnnxIrVersion = 7;   // what opset 13 came with: read by every ONNX Runtime since 1.6
constexpr int kFloat = 1;           // TensorProto.DataType FLOAT, also TypeProto.Tensor's elem_type

// AttributeProto: name 1, f 2, i 3, ints 8, type 20 (FLOAT 1, INT 2, INTS 7).
std::string intsAttribute(const std::string &name, const std::vector<std::int64_t> &values)
{
    std::string a = bytesField(1, name);
    for (const std::int64_t v : values)
        a += intField(8, v);
    return a + varintField(20, 7);
}

std::string intAttribute(const std::string &name, std::int64_t value)
{
    return bytesField(1, name) + intField(3, value) + varintField(20, 2);
}

std::string floatAttribute(const std::string &name, float value)
{
    return bytesField(1, name) + floatField(2, value) + varintField(20, 1);
}

// NodeProto: input 1, output 2, name 3, op_type 4, attribute 5.
std::string node(const std::string &op, const std::vector<std::string> &inputs, const std::string &output,
                 const std::vector<std::string> &attributes = {})
{
    std::string n;
    for (const std::string &in : inputs)
        n += bytesField(1, in);
    n += bytesField(2, output) + bytesField(3, output) + bytesField(4, op);
    for (const std::string &a : attributes)
        n += bytesField(5, a);
    return n;
}

// A dimension of a graph input or output: its size, or the name of a size the user chooses.
struct Dim
{
    std::int64_t value = 0;
    const char *param = nullptr;
};

// ValueInfoProto {name 1, type 2 = TypeProto {tensor_type 1 = {elem_type 1, shape 2 = {dim 1 = {value 1 | param 2}}}}}.
std::string floatValueInfo(const std::string &name, const std::vector<Dim> &dims)
{
    std::string shape;
    for (const Dim &d : dims)
        shape += bytesField(1, d.param ? bytesField(2, d.param) : intField(1, d.value));
    return bytesField(1, name) + bytesField(2, bytesField(1, varintField(1, kFloat) + bytesField(2, shape)));
}

// The graph under construction: nodes in order, weights as initializers under PyTorch's names.
class OnnxGraph
{
public:
    std::string initializer(const std::string &trainlabName, const torch::Tensor &t)
    {
        const std::string name = pytorchKey(trainlabName);
        const torch::Tensor data = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
        std::string proto;
        for (const std::int64_t d : data.sizes())
            proto += intField(1, d);
        proto += varintField(2, kFloat) + bytesField(8, name);
        // raw_data is little-endian, as x86 and ARM keep floats in memory.
        proto += bytesField(9, std::string(static_cast<const char *>(data.data_ptr()), static_cast<std::size_t>(data.nbytes())));
        m_initializers += bytesField(5, proto);
        return name;
    }

    std::string add(const std::string &op, const std::vector<std::string> &inputs, const std::string &output,
                    const std::vector<std::string> &attributes = {})
    {
        m_nodes += bytesField(1, node(op, inputs, output, attributes));
        return output;
    }

    std::string conv(const std::string &path, torch::nn::Conv2dImpl &conv, const std::string &x)
    {
        const std::int64_t kh = conv.weight.size(2), kw = conv.weight.size(3);
        const auto stride = *conv.options.stride();
        // c10::variant on LibTorch 1.13, std::variant on 2.x: the unqualified call finds either's get_if.
        using std::get_if;
        const auto *padding = get_if<torch::ExpandingArray<2>>(&conv.options.padding());
        const auto dilation = *conv.options.dilation();
        if (!padding || conv.options.groups() != 1 || dilation[0] != 1 || dilation[1] != 1 ||
            !get_if<torch::enumtype::kZeros>(&conv.options.padding_mode()))
            throw std::invalid_argument("ONNX export: " + path + " pads, groups or dilates in a way this export does not write");
        const std::int64_t ph = (**padding)[0], pw = (**padding)[1];
        std::vector<std::string> inputs{x, initializer(path + ".weight", conv.weight)};
        if (conv.bias.defined())
            inputs.push_back(initializer(path + ".bias", conv.bias));
        return add("Conv", inputs, path,
                   {intsAttribute("kernel_shape", {kh, kw}), intsAttribute("strides", {stride[0], stride[1]}),
                    intsAttribute("pads", {ph, pw, ph, pw})});
    }

    std::string batchNorm(const std::string &path, torch::nn::BatchNorm2dImpl &bn, const std::string &x)
    {
        return add("BatchNormalization",
                   {x, initializer(path + ".weight", bn.weight), initializer(path + ".bias", bn.bias),
                    initializer(path + ".running_mean", bn.running_mean), initializer(path + ".running_var", bn.running_var)},
                   path, {floatAttribute("epsilon", static_cast<float>(bn.options.eps()))});
    }

    std::string nodes() const { return m_nodes; }
    std::string initializers() const { return m_initializers; }

private:
    std::string m_nodes, m_initializers;
};

ExportResult writeExport(const std::string &runDir, const std::string &which, const std::string &outPath,
                         const std::function<std::string(RunModel &)> &bytesOf)
{
    if (outPath.empty())
        throw std::runtime_error("export: needs an output file");
    RunModel run = loadRunModel(runDir, which);
    const std::string bytes = bytesOf(run);
    writeFileAtomic(outPath, bytes);
    ExportResult r;
    r.checkpoint = std::filesystem::path(run.checkpointPath).filename().string();
    r.epoch = run.info.epoch;
    r.tensors = run.model->parameters().size() + run.model->buffers().size();
    r.bytes = static_cast<std::int64_t>(bytes.size());
    return r;
}

} // namespace

std::string onnxModel(torch::nn::Module &model, std::int64_t inChannels, const OnnxInfo &info)
{
    OnnxGraph g;
    std::string x = "image";
    std::int64_t classes = 0;
    for (const auto &child : model.named_children()) {
        const std::string &name = child.key();
        torch::nn::Module &m = *child.value();
        if (auto *conv = m.as<torch::nn::Conv2d>()) {
            x = g.conv(name, *conv, x);
        } else if (auto *bn = m.as<torch::nn::BatchNorm2d>()) {
            x = g.batchNorm(name, *bn, x);
        } else if (m.as<torch::nn::ReLU>()) {
            x = g.add("Relu", {x}, name);
        } else if (m.as<torch::nn::AdaptiveAvgPool2d>()) {
            x = g.add("GlobalAveragePool", {x}, name);   // to 1x1, as AdaptiveAvgPool2d({1, 1})
        } else if (m.as<torch::nn::Flatten>()) {
            x = g.add("Flatten", {x}, name, {intAttribute("axis", 1)});
        } else if (auto *fc = m.as<torch::nn::Linear>()) {
            classes = fc->weight.size(0);
            x = g.add("Gemm", {x, g.initializer(name + ".weight", fc->weight), g.initializer(name + ".bias", fc->bias)},
                      "logits", {intAttribute("transB", 1)});
        } else if (const auto parts = m.named_children(); parts.contains("conv1") && parts.contains("bn2")) {
            // A residual block: conv1, bn1, relu, conv2, bn2, plus the input (through conv3 where the block has
            // one), relu.
            const auto conv = [&](const char *n) -> torch::nn::Conv2dImpl & {
                auto *c = parts[n]->as<torch::nn::Conv2d>();
                if (!c)
                    throw std::invalid_argument("ONNX export: " + name + "." + n + " is not a convolution");
                return *c;
            };
            const auto norm = [&](const char *n) -> torch::nn::BatchNorm2dImpl & {
                auto *b = parts[n]->as<torch::nn::BatchNorm2d>();
                if (!b)
                    throw std::invalid_argument("ONNX export: " + name + "." + n + " is not a BatchNorm");
                return *b;
            };
            std::string y = g.batchNorm(name + ".bn1", norm("bn1"), g.conv(name + ".conv1", conv("conv1"), x));
            y = g.add("Relu", {y}, name + ".relu1");
            y = g.batchNorm(name + ".bn2", norm("bn2"), g.conv(name + ".conv2", conv("conv2"), y));
            const std::string skip = parts.contains("conv3") ? g.conv(name + ".conv3", conv("conv3"), x) : x;
            x = g.add("Relu", {g.add("Add", {y, skip}, name + ".add")}, name + ".relu2");
        } else {
            throw std::invalid_argument("ONNX export: no ONNX form for module \"" + name + "\" (" + m.name() + ")");
        }
    }
    if (x != "logits")
        throw std::invalid_argument("ONNX export: the model does not end in its fc layer");
    std::string graph = g.nodes() + bytesField(2, "trainlab_resnet18") + g.initializers();
    graph += bytesField(11, floatValueInfo("image", {{0, "batch"}, {inChannels, nullptr}, {0, "height"}, {0, "width"}}));
    graph += bytesField(12, floatValueInfo("logits", {{0, "batch"}, {classes, nullptr}}));
    std::string names;
    for (const std::string &c : info.classNames)
        names += (names.empty() ? "" : ",") + c;
    const auto metadata = [](const std::string &k, const std::string &v) { return bytesField(14, bytesField(1, k) + bytesField(2, v)); };
    return intField(1, kOnnxIrVersion) + bytesField(2, "TrainLab") + bytesField(3, TRAINLAB_VERSION)
           + bytesField(6, "d2l's ResNet-18 trained by TrainLab: " + info.source
                               + ". Input: float32 pixels / 255 (a light object on black, as Fashion-MNIST); "
                                 "output: one logit per class (softmax for probabilities).")
           + bytesField(7, graph) + bytesField(8, bytesField(1, "") + intField(2, kOnnxOpset))
           + metadata("classes", names) + metadata("source", info.source);
}

ExportResult exportPyTorch(const std::string &runDir, const std::string &which, const std::string &outPath)
{
    return writeExport(runDir, which, outPath, [](RunModel &run) { return pytorchStateDict(*run.model); });
}

ExportResult exportOnnx(const std::string &runDir, const std::string &which, const std::string &outPath)
{
    return writeExport(runDir, which, outPath, [&runDir](RunModel &run) {
        OnnxInfo info;
        info.classNames = classNames(run.config);
        std::filesystem::path folder = std::filesystem::path(runDir).lexically_normal();
        if (!folder.has_filename())
            folder = folder.parent_path();   // "runs/x/" names x too
        info.source = folder.filename().string() + ", "
                      + std::filesystem::path(run.checkpointPath).filename().string() + " (epoch "
                      + std::to_string(run.info.epoch) + ")";
        return onnxModel(*run.model, run.config.model.inChannels, info);
    });
}

} // namespace trainlab
