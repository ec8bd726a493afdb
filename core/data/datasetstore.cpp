#include "core/data/datasetstore.h"

#include "core/data/idx.h"
#include "core/util/paths.h"
#include "core/util/sha256.h"

#include <cstdlib>
#include <filesystem>

namespace trainlab {

namespace fs = std::filesystem;

namespace {

// Images and labels of one split; adds a problem naming the file for each thing wrong, returns the image count.
std::int64_t checkSplit(const std::string &imagesPath, const std::string &labelsPath, std::vector<std::string> &problems)
{
    std::int64_t count = -1;
    try {
        count = readIdxImages(imagesPath).count;
    } catch (const std::exception &e) {
        problems.push_back(e.what());
    }
    try {
        const std::vector<std::uint8_t> labels = readIdxLabels(labelsPath);
        for (std::size_t i = 0; i < labels.size(); ++i) {
            if (labels[i] >= 10) {
                problems.push_back(labelsPath + ": label " + std::to_string(labels[i]) + " at index " + std::to_string(i)
                                   + " is not below 10");
                break;
            }
        }
        if (count >= 0 && static_cast<std::int64_t>(labels.size()) != count)
            problems.push_back(labelsPath + ": " + groupedThousands(static_cast<std::int64_t>(labels.size())) + " labels for "
                               + groupedThousands(count) + " images in " + imagesPath);
    } catch (const std::exception &e) {
        problems.push_back(e.what());
    }
    return count < 0 ? 0 : count;
}

} // namespace

std::string managedDatasetDir()
{
    if (const char *env = std::getenv("TRAINLAB_DATA_DIR"); env && *env)
        return env;
    // One name with the runs folder (<data home>/TrainLab/runs); a download kept in the earlier
    // <data home>/trainlab/datasets is still found there until the new folder exists.
    const fs::path home = dataHome();
    const fs::path current = home / "TrainLab" / "datasets" / "fashion-mnist";
    const fs::path earlier = home / "trainlab" / "datasets" / "fashion-mnist";
    std::error_code ec;
    if (!fs::exists(current, ec) && fs::is_directory(earlier, ec))
        return earlier.string();
    return current.string();
}

std::string resolveDatasetPath(const std::string &configPath)
{
    if (configPath == "builtin:sample")
        return builtinSampleDir();
    if (configPath == "fashion-mnist")
        return managedDatasetDir();
    return configPath;
}

std::string datasetMissingHint(const std::string &configPath)
{
    if (configPath != "fashion-mnist")
        return {};
    const std::string dir = managedDatasetDir();
    std::error_code ec;
    if (fs::is_directory(dir, ec)) {
        try {
            if (findDatasetFiles(dir).missing.empty())
                return {};
        } catch (const std::exception &) {
        }
    }
    return "Fashion-MNIST is not downloaded yet (looked in " + dir + "); run: trainlab-cli dataset download";
}

// Sizes and SHA-256 as published by TensorFlow Datasets' url_checksums (zalandoresearch/fashion-mnist's README gives the same files' MD5s).
DatasetManifest fashionMnistManifest()
{
    DatasetManifest m;
    m.files = {
        {"train-images-idx3-ubyte.gz", 26421880, "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"},
        {"train-labels-idx1-ubyte.gz", 29515, "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"},
        {"t10k-images-idx3-ubyte.gz", 4422102, "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"},
        {"t10k-labels-idx1-ubyte.gz", 5148, "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"},
    };
    m.mirrors = {
        "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
    };
    return m;
}

DatasetVerification verifyDataset(const std::string &dir, const DatasetManifest &manifest)
{
    DatasetVerification v;
    auto finish = [&] {
        std::string text = dir + ":";
        for (std::size_t i = 0; i < v.problems.size(); ++i)
            text += (i ? "; " : " ") + v.problems[i];
        v.message = text;
        return v;
    };
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        v.problems.push_back(ec && ec != std::errc::no_such_file_or_directory ? "cannot read the folder: " + ec.message()
                                                                              : "no such folder");
        return finish();
    }
    DatasetFiles files;
    try {
        files = findDatasetFiles(dir);
    } catch (const std::exception &e) {
        v.problems.push_back(e.what());
        return finish();
    }
    for (const auto &name : files.missing)
        v.problems.push_back("missing: " + name);
    if (!v.problems.empty())
        return finish();
    v.present = true;

    v.trainCount = checkSplit(files.trainImages, files.trainLabels, v.problems);
    v.testCount = checkSplit(files.testImages, files.testLabels, v.problems);
    if (!v.problems.empty())
        return finish();
    v.valid = true;

    bool official = !manifest.files.empty();
    for (const std::string &path : {files.trainImages, files.trainLabels, files.testImages, files.testLabels}) {
        const std::string name = fs::path(path).filename().string();
        const DatasetFile *expected = nullptr;
        for (const auto &f : manifest.files)
            if (f.name == name)
                expected = &f;
        std::error_code sizeEc;
        const std::uintmax_t size = fs::file_size(path, sizeEc);
        if (!expected || sizeEc || size != expected->size) {
            official = false;
            break;
        }
        try {
            if (sha256File(path) != expected->sha256) {
                official = false;
                break;
            }
        } catch (const std::exception &) {
            official = false;
            break;
        }
    }
    v.official = official;
    v.message = dir + ": " + (official ? "official Fashion-MNIST" : "custom IDX data") + ", " + groupedThousands(v.trainCount)
                + " train / " + groupedThousands(v.testCount) + " test";
    return v;
}

} // namespace trainlab
