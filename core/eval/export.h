#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace trainlab {

// The name the chapter's PyTorch resnet18(10, 1) gives a TrainLab parameter or buffer: "conv.weight" is
// "0.weight", "bn.running_mean" "1.running_mean", "resnet_block2_0.conv3.bias" "resnet_block2.0.conv3.bias",
// "fc.weight" "fc.1.weight". Throws invalid_argument for a name the model does not have.
std::string pytorchKey(const std::string &trainlabKey);

// The model's parameters and buffers as the bytes of a file Python's torch.load reads as a state_dict: a plain
// dict (no TorchScript type tags, so torch.load(weights_only=True) accepts it) of CPU tensors under pytorchKey
// names, in the order PyTorch's state_dict() lists them.
std::string pytorchStateDict(torch::nn::Module &model);

// What an ONNX model says of itself beyond its graph (ModelProto's metadata_props and doc_string).
struct OnnxInfo
{
    std::vector<std::string> classNames;   // output column c is classNames[c]
    std::string source;                    // "<run folder name>, best.pt (epoch 7)"
};

// The model (d2l's ResNet-18 as makeResNet18 builds it) as the bytes of an ONNX model, opset 13: input "image",
// float32 [batch, in_channels, height, width] (pixels / 255 as training saw them; Fashion-MNIST's are 28 x 28),
// output "logits" [batch, classes]; the weights as initializers under their PyTorch state_dict names, BatchNorm in
// its evaluation form (running statistics). Throws invalid_argument for a module it does not know how to write.
std::string onnxModel(torch::nn::Module &model, std::int64_t inChannels, const OnnxInfo &info);

struct ExportResult
{
    std::string checkpoint;     // the file exported: best.pt or checkpoint.pt
    int epoch = 0;
    std::size_t tensors = 0;
    std::int64_t bytes = 0;
};

// A run's checkpoint ("best", "last" or "": best.pt where there is one) written to outPath atomically as a
// PyTorch state_dict. Throws runtime_error naming the file at fault.
ExportResult exportPyTorch(const std::string &runDir, const std::string &which, const std::string &outPath);
// The same checkpoint as an ONNX model (onnxModel) for ONNX Runtime, OpenCV's dnn, TensorRT and the like.
ExportResult exportOnnx(const std::string &runDir, const std::string &which, const std::string &outPath);

} // namespace trainlab
