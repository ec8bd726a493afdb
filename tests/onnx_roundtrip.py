#!/usr/bin/env python3
"""Checks a `trainlab-cli export … OUT.onnx` model with Debian's python3-onnx and runs it with PyTorch's
functional ops, node by node as the ONNX operator specifications define them, comparing its logits with TrainLab's.

  python3 tests/onnx_roundtrip.py MODEL.onnx CHECK.pt   (CHECK: {"images": [N,1,28,28], "logits": [N,10]})
Exit 0 and one line with the largest difference when they agree to 1e-4; 1 otherwise.
"""
import os, sys, warnings

import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper, shape_inference

warnings.filterwarnings("ignore", message="Lazy modules")

model_path, check_path = sys.argv[1], sys.argv[2]
model = onnx.load(model_path)
onnx.checker.check_model(model, full_check=True)  # the IR, every node against its opset schema, shapes
graph = shape_inference.infer_shapes(model, strict_mode=True).graph
dims = [d.dim_param or d.dim_value for d in graph.output[0].type.tensor_type.shape.dim]
assert dims == ["batch", 10], dims

# The initializers carry the chapter's state_dict names: the same keys as bench/reference.py's resnet18(10, 1).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from reference import resnet18  # noqa: E402
net = resnet18(10, 1)
net(torch.zeros(1, 1, 28, 28))
expected = {k for k in net.state_dict() if not k.endswith("num_batches_tracked")}
weights = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in graph.initializer}
assert set(weights) == expected, sorted(set(weights) ^ expected)
classes = {p.key: p.value for p in model.metadata_props}["classes"].split(",")
assert len(classes) == 10 and classes[0] == "T-shirt/top", classes


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def run(node, inputs):
    a = attrs(node)
    if node.op_type == "Conv":
        pads = a.get("pads", [0, 0, 0, 0])
        assert pads[:2] == pads[2:], pads  # begin == end, so F.conv2d's symmetric padding says the same
        assert list(a["kernel_shape"]) == list(inputs[1].shape[2:])
        return F.conv2d(inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None,
                        stride=tuple(a.get("strides", [1, 1])), padding=tuple(pads[:2]))
    if node.op_type == "BatchNormalization":
        x, scale, bias, mean, var = inputs
        return F.batch_norm(x, mean, var, scale, bias, training=False, eps=a.get("epsilon", 1e-5))
    if node.op_type == "Relu":
        return F.relu(inputs[0])
    if node.op_type == "Add":
        return inputs[0] + inputs[1]
    if node.op_type == "GlobalAveragePool":
        return inputs[0].mean(dim=(2, 3), keepdim=True)
    if node.op_type == "Flatten":
        return torch.flatten(inputs[0], start_dim=a.get("axis", 1))
    if node.op_type == "Gemm":
        b = inputs[1].t() if a.get("transB", 0) else inputs[1]
        return a.get("alpha", 1.0) * (inputs[0] @ b) + a.get("beta", 1.0) * inputs[2]
    raise SystemExit(f"no test semantics for {node.op_type}")


check = torch.load(check_path)
values = dict(weights)
values[graph.input[0].name] = check["images"]
with torch.no_grad():
    for node in graph.node:
        values[node.output[0]] = run(node, [values[i] for i in node.input])
logits = values[graph.output[0].name]
diff = (logits - check["logits"]).abs().max().item()
print(f"onnx {onnx.__version__}, opset {model.opset_import[0].version}: {len(graph.node)} nodes, "
      f"{len(weights)} initializers, {check['images'].shape[0]} images, largest logit difference {diff:.2e}")
sys.exit(0 if diff <= 1e-4 else 1)
