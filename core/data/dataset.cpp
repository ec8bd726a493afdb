#include "core/data/dataset.h"

#include "core/data/datasetstore.h"
#include "core/data/idx.h"

#include <torch/torch.h>

#include <random>

namespace trainlab {

namespace {

Dataset loadPair(const std::string &imagesPath, const std::string &labelsPath, int numClasses)
{
    IdxImages images = readIdxImages(imagesPath);
    std::vector<std::uint8_t> labels = readIdxLabels(labelsPath);
    if (static_cast<std::int64_t>(labels.size()) != images.count)
        throw DataError(labelsPath + ": holds " + std::to_string(labels.size()) + " labels but " + imagesPath
                        + " holds " + std::to_string(images.count) + " images");
    for (std::size_t i = 0; i < labels.size(); ++i) {
        if (labels[i] >= numClasses)
            throw DataError(labelsPath + ": label " + std::to_string(labels[i]) + " at index " + std::to_string(i)
                            + " is not below num_classes " + std::to_string(numClasses));
    }
    Dataset data;
    data.images = torch::from_blob(images.pixels.data(), {images.count, images.rows, images.cols}, torch::kUInt8).clone();
    data.labels = torch::from_blob(labels.data(), {static_cast<std::int64_t>(labels.size())}, torch::kUInt8)
                      .to(torch::kInt64);
    return data;
}

} // namespace

DataBundle loadData(const DatasetConfig &config, int numClasses)
{
    if (const std::string hint = datasetMissingHint(config.path); !hint.empty())
        throw DataError("dataset.path: " + hint);
    const std::string folder = resolveDatasetPath(config.path);
    const DatasetFiles files = findDatasetFiles(folder);
    if (!files.missing.empty()) {
        std::string missing;
        for (const auto &m : files.missing)
            missing += (missing.empty() ? "" : ", ") + m;
        throw DataError(folder + ": missing " + missing);
    }
    DataBundle bundle;
    bundle.source = folder;
    bundle.train = balancedSubset(loadPair(files.trainImages, files.trainLabels, numClasses), config.trainLimit,
                                  numClasses);
    bundle.test = balancedSubset(loadPair(files.testImages, files.testLabels, numClasses), config.testLimit,
                                 numClasses);
    if (bundle.train.size() == 0)
        throw DataError(files.trainImages + ": holds no images");
    if (bundle.test.size() == 0)
        throw DataError(files.testImages + ": holds no images");
    if (bundle.train.images.sizes().slice(1) != bundle.test.images.sizes().slice(1))
        throw DataError(files.testImages + ": image size differs from " + files.trainImages);
    return bundle;
}

Dataset balancedSubset(const Dataset &data, std::int64_t limit, int numClasses)
{
    const std::int64_t n = data.size();
    if (limit <= 0 || limit >= n)
        return data;
    const auto labels = data.labels.accessor<std::int64_t, 1>();
    std::vector<std::int64_t> quota(static_cast<std::size_t>(numClasses), limit / numClasses);
    for (std::int64_t c = 0; c < limit % numClasses; ++c)
        ++quota[static_cast<std::size_t>(c)];
    std::vector<bool> taken(static_cast<std::size_t>(n), false);
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < n && count < limit; ++i) {
        auto &q = quota[static_cast<std::size_t>(labels[i])];
        if (q > 0) {
            --q;
            taken[static_cast<std::size_t>(i)] = true;
            ++count;
        }
    }
    // A class with too few samples leaves room that the earliest unused samples fill.
    for (std::int64_t i = 0; i < n && count < limit; ++i) {
        if (!taken[static_cast<std::size_t>(i)]) {
            taken[static_cast<std::size_t>(i)] = true;
            ++count;
        }
    }
    std::vector<std::int64_t> index;
    index.reserve(static_cast<std::size_t>(limit));
    for (std::int64_t i = 0; i < n; ++i) {
        if (taken[static_cast<std::size_t>(i)])
            index.push_back(i);
    }
    const torch::Tensor idx = torch::tensor(index, torch::kInt64);
    return Dataset{data.images.index_select(0, idx), data.labels.index_select(0, idx)};
}

std::vector<std::int64_t> epochPermutation(std::int64_t n, std::uint64_t seed, int epoch)
{
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
        order[static_cast<std::size_t>(i)] = i;
    // mt19937_64 and this Fisher-Yates are fully specified, unlike std::shuffle.
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(epoch) + 1);
    for (std::int64_t i = n - 1; i > 0; --i) {
        const std::int64_t j = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(i + 1));
        std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
    }
    return order;
}

torch::Tensor toInput(const torch::Tensor &images)
{
    return images.unsqueeze(1).to(torch::kFloat32).div_(255.0);
}

} // namespace trainlab
