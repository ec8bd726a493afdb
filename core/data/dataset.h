#pragma once

#include "core/config.h"

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

// Images as uint8 [N, H, W] and labels as int64 [N], kept in memory.
struct Dataset
{
    torch::Tensor images;
    torch::Tensor labels;
    std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

struct DataBundle
{
    Dataset train;
    Dataset test;
    std::string source;   // folder the files came from
};

// Reads and checks the four IDX files named by config.dataset; throws DataError naming the file.
DataBundle loadData(const DatasetConfig &config, int numClasses);
// The first `limit` samples in file order that keep every class equally represented (0: all).
Dataset balancedSubset(const Dataset &data, std::int64_t limit, int numClasses);
// The same (seed, epoch) gives the same order on every machine and LibTorch version.
std::vector<std::int64_t> epochPermutation(std::int64_t n, std::uint64_t seed, int epoch);
// uint8 [B, H, W] to float [B, 1, H, W] in [0, 1] (d2l's ToTensor).
torch::Tensor toInput(const torch::Tensor &images);

} // namespace trainlab
