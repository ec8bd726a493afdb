#!/usr/bin/env python3
"""The d2l chapter "Concise Implementation for Multiple GPUs" (PyTorch tab), on local IDX files.

The yardstick for TrainLab's speed and accuracy: d2l's resnet18 with d2l's Residual (LazyConv2d /
LazyBatchNorm2d, as d2l/torch.py defines it), d2l's init_weights, train() and evaluate_accuracy_gpu,
plain SGD and cross-entropy. Runs on the CPU or one GPU (--device).

Timed the chapter's way: its train() reads nothing from the device inside the epoch, so the train loss and
accuracy printed here are summed on the device and read once after the timer stops (--sync-metrics: read
them every step, two host syncs per step, as this script did before 2026-12-05).

  python3 bench/reference.py --data DIR [--train N] [--test N] [--epochs N] [--batch N] [--lr X]
                             [--threads N] [--seed N] [--device cpu|cuda:0] [--json FILE]

--train/--test take the same class-balanced prefix of the files as TrainLab's train_limit/test_limit.
One line per epoch (test acc, sec/epoch, img/s), then d2l's closing line; --json writes the curve.
"""
import argparse, gzip, json, os, struct, sys, time

import torch
from torch import nn
from torch.nn import functional as F


class Residual(nn.Module):
    """d2l.Residual (d2l/torch.py): lazy layers, so init_weights's type test skips them."""
    def __init__(self, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1, stride=strides)
        self.conv2 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1)
        self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1, stride=strides) if use_1x1conv else None
        self.bn1 = nn.LazyBatchNorm2d()
        self.bn2 = nn.LazyBatchNorm2d()

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)


def resnet18(num_classes, in_channels=1):
    """The chapter's resnet18, verbatim."""
    def resnet_block(in_channels, out_channels, num_residuals, first_block=False):
        blk = []
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.append(Residual(out_channels, use_1x1conv=True, strides=2))
            else:
                blk.append(Residual(out_channels))
        return nn.Sequential(*blk)
    net = nn.Sequential(nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1),
                        nn.BatchNorm2d(64), nn.ReLU())
    net.add_module("resnet_block1", resnet_block(64, 64, 2, first_block=True))
    net.add_module("resnet_block2", resnet_block(64, 128, 2))
    net.add_module("resnet_block3", resnet_block(128, 256, 2))
    net.add_module("resnet_block4", resnet_block(256, 512, 2))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
    return net


class MT19937_64:
    """std::mt19937_64, as TrainLab's epochPermutation draws from it."""
    def __init__(self, seed):
        self.mt, self.i, mask = [0] * 312, 312, (1 << 64) - 1
        self.mt[0] = seed & mask
        for k in range(1, 312):
            self.mt[k] = (6364136223846793005 * (self.mt[k - 1] ^ (self.mt[k - 1] >> 62)) + k) & mask

    def __call__(self):
        mt, mask = self.mt, (1 << 64) - 1
        if self.i >= 312:
            for k in range(312):
                y = (mt[k] & 0xFFFFFFFF80000000) | (mt[(k + 1) % 312] & 0x7FFFFFFF)
                mt[k] = mt[(k + 156) % 312] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
            self.i = 0
        y = mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & mask


def trainlab_order(n, seed, epoch):
    """TrainLab's epochPermutation(n, seed, epoch): Fisher-Yates over mt19937_64."""
    order = list(range(n))
    rng = MT19937_64((seed * 0x9E3779B97F4A7C15 + epoch + 1) & ((1 << 64) - 1))
    for i in range(n - 1, 0, -1):
        j = rng() % (i + 1)
        order[i], order[j] = order[j], order[i]
    return torch.tensor(order)


def trainlab_start(net, num_classes, in_channels=1):
    """The weights TrainLab starts from for torch.manual_seed(seed): its layers drawn in its construction order
    (stem conv, each residual's conv1, conv2, conv3, then fc), then N(0, 0.01) on the stem conv and fc."""
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]   # module order: stem, then per residual 1, 2, 3
    fc = net.fc[1]
    fresh = [nn.Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding) for c in convs]
    fresh_fc = nn.Linear(fc.in_features, fc.out_features)
    nn.init.normal_(fresh[0].weight, std=0.01)
    nn.init.normal_(fresh_fc.weight, std=0.01)
    with torch.no_grad():
        for c, f in zip(convs, fresh):
            c.weight.copy_(f.weight)
            c.bias.copy_(f.bias)
        fc.weight.copy_(fresh_fc.weight)
        fc.bias.copy_(fresh_fc.bias)


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    dims = struct.unpack(">" + "I" * (magic & 0xFF), data[4:4 + 4 * (magic & 0xFF)])
    payload = data[4 + 4 * len(dims):]
    return torch.frombuffer(bytearray(payload), dtype=torch.uint8).reshape(dims)


def find(folder, base):
    for name in (base + ".gz", base):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    sys.exit(f"{folder}: missing {base}")


def balanced(images, labels, limit, classes=10):
    """TrainLab's balancedSubset: the first samples in file order that keep the classes equal."""
    n = labels.numel()
    if limit <= 0 or limit >= n:
        return images, labels
    quota = [limit // classes + (1 if c < limit % classes else 0) for c in range(classes)]
    taken, count = [False] * n, 0
    for i, y in enumerate(labels.tolist()):
        if count == limit:
            break
        if quota[y] > 0:
            quota[y] -= 1
            taken[i] = True
            count += 1
    for i in range(n):
        if count == limit:
            break
        if not taken[i]:
            taken[i] = True
            count += 1
    idx = torch.tensor([i for i in range(n) if taken[i]])
    return images[idx], labels[idx]


def load(folder, split, limit):
    images = read_idx(find(folder, f"{split}-images-idx3-ubyte"))
    labels = read_idx(find(folder, f"{split}-labels-idx1-ubyte")).long()
    images, labels = balanced(images, labels, limit)
    return images.unsqueeze(1).float().div_(255), labels   # ToTensor()


def evaluate_accuracy_gpu(net, X, y, batch, device):
    net.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            xb, yb = X[i:i + batch].to(device), y[i:i + batch].to(device)
            correct += (net(xb).argmax(1) == yb).sum().item()
    return correct / len(y)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--train", type=int, default=0)
    p.add_argument("--test", type=int, default=0)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: forward and loss under torch.autocast, as TrainLab's bf16")
    p.add_argument("--sync-metrics", action="store_true",
                   help="read the loss and correct count every step (.item()), which stalls a GPU twice per step")
    p.add_argument("--json")
    p.add_argument("--init", choices=["d2l", "all-normal"], default="d2l",
                   help="all-normal: N(0, 0.01) on every conv too, as TrainLab did before 0.2 (for comparison)")
    p.add_argument("--same-start-as-trainlab", action="store_true",
                   help="TrainLab's initial weights and data order for --seed, so the two runs can be compared step by step")
    p.add_argument("--trainlab-init", action="store_true", help="only TrainLab's initial weights for --seed")
    p.add_argument("--trainlab-order", action="store_true", help="only TrainLab's shuffle for --seed")
    a = p.parse_args()
    a.trainlab_init = a.trainlab_init or a.same_start_as_trainlab
    a.trainlab_order = a.trainlab_order or a.same_start_as_trainlab
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    Xtr, ytr = load(a.data, "train", a.train)
    Xte, yte = load(a.data, "t10k", a.test)

    net = resnet18(10)
    def init_weights(module):
        if type(module) in [nn.Linear, nn.Conv2d]:
            nn.init.normal_(module.weight, std=0.01)
    if a.init == "all-normal" or a.trainlab_init:
        with torch.no_grad():
            net.eval()(Xtr[:2])   # materialises the lazy layers (eval: the BatchNorm statistics stay as they are)
    if a.trainlab_init:
        torch.manual_seed(a.seed)
        trainlab_start(net, 10)
    else:
        net.apply(init_weights)
    net = net.to(device)
    trainer = torch.optim.SGD(net.parameters(), a.lr)
    loss = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(a.seed)
    curve, times = [], []
    for epoch in range(a.epochs):
        net.train()
        start = time.perf_counter()
        order = trainlab_order(len(ytr), a.seed, epoch + 1) if a.trainlab_order \
            else torch.randperm(len(ytr), generator=gen)
        lsum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.int64)
        for i in range(0, len(ytr), a.batch):
            idx = order[i:i + a.batch]
            X, y = Xtr[idx].to(device), ytr[idx].to(device)
            trainer.zero_grad()
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
                out = net(X)
                l = loss(out.float(), y)
            l.backward()
            trainer.step()
            with torch.no_grad():
                lsum += l.detach() * len(y)
                correct += (out.argmax(1) == y).sum()
            if a.sync_metrics:
                lsum.item(), correct.item()
        if device.type == "cuda":
            torch.cuda.synchronize()
        sec = time.perf_counter() - start
        lsum, correct = lsum.item(), correct.item()
        times.append(sec)
        acc = evaluate_accuracy_gpu(net, Xte, yte, a.batch, device)
        row = {"epoch": epoch + 1, "train_loss": lsum / len(ytr), "train_acc": correct / len(ytr),
               "test_acc": acc, "epoch_seconds": sec, "images_per_second": len(ytr) / sec}
        curve.append(row)
        print(f"epoch {epoch + 1}/{a.epochs}  loss {row['train_loss']:.3f}  train acc {row['train_acc']:.3f}  "
              f"test acc {acc:.3f}  {sec:.1f} sec/epoch  {row['images_per_second']:.0f} img/s", flush=True)
    print(f"test acc: {curve[-1]['test_acc']:.2f}, {sum(times) / len(times):.1f} sec/epoch on [{device}]")
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"program": "reference", "seed": a.seed, "epochs": curve}, f)
        os.replace(tmp, a.json)


if __name__ == "__main__":
    main()
