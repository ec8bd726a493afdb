#include "core/eval/export.h"

#include "core/eval/runmodel.h"
#include "core/util/atomicfile.h"

#include <torch/torch.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <caffe2/serialize/inline_container.h>

#include <filesystem>
#include <regex>
#include <stdexcept>

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

ExportResult exportPyTorch(const std::string &runDir, const std::string &which, const std::string &outPath)
{
    if (outPath.empty())
        throw std::runtime_error("export: needs an output file");
    RunModel run = loadRunModel(runDir, which);
    const std::string bytes = pytorchStateDict(*run.model);
    writeFileAtomic(outPath, bytes);
    ExportResult r;
    r.checkpoint = std::filesystem::path(run.checkpointPath).filename().string();
    r.epoch = run.info.epoch;
    r.tensors = run.model->parameters().size() + run.model->buffers().size();
    r.bytes = static_cast<std::int64_t>(bytes.size());
    return r;
}

} // namespace trainlab
