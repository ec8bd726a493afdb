#!/usr/bin/env python3
"""Loads a `trainlab-cli export` state_dict into bench/reference.py's resnet18(10, 1), strictly and with
torch.load(weights_only=True), and compares its logits on the given images with TrainLab's.

  python3 tests/pytorch_roundtrip.py STATE.pth CHECK.pt   (CHECK: {"images": [N,1,28,28], "logits": [N,10]})
Exit 0 and one line with the largest difference when they agree to 1e-4; 1 otherwise.
"""
import os, sys, warnings

import torch

warnings.filterwarnings("ignore", message="Lazy modules")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from reference import resnet18  # noqa: E402

state_path, check_path = sys.argv[1], sys.argv[2]
net = resnet18(10, 1)
net(torch.zeros(1, 1, 28, 28))  # gives the lazy layers their shapes
net.load_state_dict(torch.load(state_path, weights_only=True), strict=True)
net.eval()
check = torch.load(check_path)
with torch.no_grad():
    logits = net(check["images"])
diff = (logits - check["logits"]).abs().max().item()
print(f"pytorch {torch.__version__}: {len(net.state_dict())} tensors, "
      f"{check['images'].shape[0]} images, largest logit difference {diff:.2e}")
sys.exit(0 if diff <= 1e-4 else 1)
