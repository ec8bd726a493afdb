#!/usr/bin/env python3
"""The floor of a CPU training step: the chapter's ResNet-18 convolutions alone, forward and backward.

Each convolution of bench/reference.py's model is timed on its own, at the input shape it sees in the net (found
by one forward pass), with random data: forward, then the weight and bias gradients and (but for the stem) the
input gradient, as training computes them. Their sum is what a step costs if BatchNorm, ReLU, the loss, the
optimizer and the loop took no time at all: a program whose step is near this sum has no overhead left to remove.

  python3 bench/conv-floor.py [--batch 128] [--threads N] [--precision fp32|bf16] [--channels-last] [--reps 3]
      [--nchw-from resnet_block4]   (with --channels-last: that block's convolutions in NCHW, as TrainLab's
                                     speed.channels_last "auto" runs them on the CPU)

Runs with glibc's malloc keeping large blocks in the heap on transparent huge pages (as TrainLab's
core/util/hostmemory and core/train/hugepageallocator do), so that page faults are not counted as convolution time. Prints one line: seconds per step and img/s.
"""
import argparse, os, sys, time

tunables = "glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295:glibc.malloc.hugetlb=1"
if "glibc.malloc.mmap_threshold" not in os.environ.get("GLIBC_TUNABLES", ""):
    env = dict(os.environ)
    env["GLIBC_TUNABLES"] = ":".join(filter(None, [env.get("GLIBC_TUNABLES"), tunables]))
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import warnings

import torch
from torch import nn

warnings.filterwarnings("ignore", message="Lazy modules")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import resnet18  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--batch", type=int, default=128)
parser.add_argument("--threads", type=int, default=os.cpu_count())
parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
parser.add_argument("--channels-last", action="store_true")
parser.add_argument("--nchw-from", metavar="BLOCK", help="with --channels-last: this block's convolutions in NCHW")
parser.add_argument("--reps", type=int, default=3)
args = parser.parse_args()
if args.batch < 1 or args.threads < 1 or args.reps < 1:
    sys.exit("conv-floor: --batch, --threads and --reps must be at least 1")
torch.set_num_threads(args.threads)
dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32

net = resnet18(10)
if args.nchw_from and args.nchw_from not in dict(net.named_children()):
    sys.exit(f"conv-floor: --nchw-from: the model has no block {args.nchw_from}")
nchw = {m for m in getattr(net, args.nchw_from).modules()} if args.nchw_from else set()
shapes = []
hooks = [m.register_forward_hook(lambda m, inp, out: shapes.append((m, tuple(inp[0].shape))))
         for m in net.modules() if isinstance(m, (nn.Conv2d, nn.LazyConv2d))]
with torch.no_grad():
    net(torch.zeros(args.batch, 1, 28, 28))
for h in hooks:
    h.remove()

total = 0.0
for conv, shape in shapes:
    layout = torch.channels_last if args.channels_last and conv not in nchw else torch.contiguous_format
    conv = conv.to(dtype=dtype, memory_format=layout)
    x = torch.randn(shape, dtype=dtype).contiguous(memory_format=layout)
    x.requires_grad_(shape[1] != 1)
    grad = torch.randn(conv(x).shape, dtype=dtype).contiguous(memory_format=layout)
    for _ in range(2):
        conv(x).backward(grad)
    start = time.perf_counter()
    for _ in range(args.reps):
        conv(x).backward(grad)
    total += (time.perf_counter() - start) / args.reps
print(f"convolutions only: {len(shapes)} convolutions, batch {args.batch}, {args.precision}, "
      f"{'channels-last' if args.channels_last else 'NCHW'}{' but ' + args.nchw_from if nchw else ''}, "
      f"{args.threads} threads: "
      f"{total:.3f} s/step, {args.batch / total:.1f} img/s")
