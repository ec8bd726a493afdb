#pragma once

#include "core/data/datasetstore.h"
#include "core/train/observer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

struct DownloadProgress
{
    std::string file;
    int fileIndex = 0;                  // 1-based
    int fileCount = 0;
    std::uint64_t bytes = 0;            // of this file, a resumed part included
    std::uint64_t total = 0;
    double bytesPerSecond = 0;
};

// Called on the downloading thread; onProgress at most about 10 times a second per file.
class DownloadObserver
{
public:
    virtual ~DownloadObserver() = default;
    virtual void onProgress(const DownloadProgress &) {}
    virtual void onLog(const std::string &) {}
};

struct DownloadOptions
{
    std::vector<std::string> mirrors;   // empty: the manifest's
    long connectTimeoutSeconds = 10;
    long stallSeconds = 20;             // a transfer below 1 byte/s this long is dropped and retried
    int retriesPerMirror = 3;           // after a dropped connection, resuming where it stopped
    // A mirror that averages less than this over a request (after stallSeconds) is dropped: a trickle just
    // above the stall limit would take months for the 26 MB file.
    double minAverageBytesPerSecond = 2048;
    long deadlineSeconds = 3600;        // per file, over every mirror and retry; the part is kept for a later resume
};

// url with any user:password@ replaced by ***@, for every message that shows a mirror.
std::string redactUrl(const std::string &url);
// "" when url may be used as a mirror (http:// or https://), else why not.
std::string mirrorProblem(const std::string &url);

struct DownloadResult
{
    bool ok = false;
    bool cancelled = false;
    std::string error;                  // names the file, every URL tried with its reason, and the offline way
    std::string dir;
};

// Fetches each manifest file missing from dir (or failing its SHA-256) through NAME.part, resumed when possible,
// and renames it into place only once its size and SHA-256 match. Runs on the calling thread; never throws.
DownloadResult downloadDataset(const std::string &dir, const DatasetManifest &manifest, DownloadObserver &observer,
                               const StopFlag &cancel, const DownloadOptions &options = {});

} // namespace trainlab
