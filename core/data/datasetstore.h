#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

// Where `trainlab-cli dataset download` keeps Fashion-MNIST: $TRAINLAB_DATA_DIR, else under $XDG_DATA_HOME or ~/.local/share.
std::string managedDatasetDir();

// "builtin:sample" and "fashion-mnist" (the managed copy) as folders; any other path unchanged.
std::string resolveDatasetPath(const std::string &configPath);

// "" unless the path is "fashion-mnist" and the managed copy lacks a file; then what to do, without a key prefix.
std::string datasetMissingHint(const std::string &configPath);

struct DatasetFile
{
    std::string name;
    std::uint64_t size = 0;
    std::string sha256;
};

struct DatasetManifest
{
    std::vector<DatasetFile> files;
    std::vector<std::string> mirrors;   // tried in order; a file's URL is mirror + name
};

// The four official Fashion-MNIST files and the mirrors that serve them.
DatasetManifest fashionMnistManifest();

struct DatasetVerification
{
    bool present = false;               // the folder holds all four files
    bool valid = false;                 // each reads as IDX, label and image counts agree, labels below 10
    bool official = false;              // the four .gz files match the manifest's SHA-256
    std::int64_t trainCount = 0, testCount = 0;
    std::string message;                // "DIR: official Fashion-MNIST, 60,000 train / 10,000 test" or the problems
    std::vector<std::string> problems;  // each names its file
};

// Reads every file whole; slow on the full dataset (about a second), so not for every keystroke.
DatasetVerification verifyDataset(const std::string &dir, const DatasetManifest &manifest = fashionMnistManifest());

} // namespace trainlab
