#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainlab {

// A dataset file that cannot be used; what() names the file and the problem.
class DataError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

struct IdxImages
{
    std::int64_t count = 0;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    std::vector<std::uint8_t> pixels;   // count * rows * cols, row-major
};

// Raw or gzip-compressed IDX files (magic 2051 for images, 2049 for labels).
IdxImages readIdxImages(const std::string &path);
std::vector<std::uint8_t> readIdxLabels(const std::string &path);

// The four Fashion-MNIST files in a folder, each found as .gz or raw.
struct DatasetFiles
{
    std::string trainImages, trainLabels, testImages, testLabels;
    std::vector<std::string> missing;   // base names not found
};
DatasetFiles findDatasetFiles(const std::string &folder);

// Header-only look at a folder: "60,000 train / 10,000 test found" or what is missing or broken.
struct DatasetStatus
{
    bool ok = false;
    std::int64_t trainCount = 0;
    std::int64_t testCount = 0;
    std::int64_t rows = 0, cols = 0;    // of the training images
    std::string message;
};
DatasetStatus inspectDataset(const std::string &path);
std::string builtinSampleDir();
// 60000 as "60,000", as the dataset messages write counts.
std::string groupedThousands(std::int64_t n);

} // namespace trainlab
