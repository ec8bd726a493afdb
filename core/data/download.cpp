#include "core/data/download.h"

#include "core/util/sha256.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <algorithm>
#include <cctype>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#ifdef TRAINLAB_WITH_CURL
#include "trainlab/version.h"

#include <curl/curl.h>

#include <cstdlib>
#include <mutex>
#include <strings.h>
#include <thread>
#endif

namespace trainlab {

namespace fs = std::filesystem;

namespace {

#ifdef TRAINLAB_WITH_CURL

std::string offlineHint(const std::string &dir)
{
    return "put the four files in " + dir + ", then run: trainlab-cli dataset verify " + dir;
}

using Clock = std::chrono::steady_clock;

// What one file's attempts share: the progress shown and the rate since the file started.
struct FileState
{
    DownloadObserver *observer = nullptr;
    const StopFlag *cancel = nullptr;
    DownloadProgress progress;
    Clock::time_point started = Clock::now();
    Clock::time_point lastReport{};
    std::uint64_t received = 0;
    Clock::time_point requestStarted = Clock::now();
    std::uint64_t requestReceived = 0;

    void report(bool force)
    {
        const Clock::time_point now = Clock::now();
        if (!force && now - lastReport < std::chrono::milliseconds(100))
            return;
        lastReport = now;
        const double seconds = std::chrono::duration<double>(now - started).count();
        progress.bytesPerSecond = seconds > 0 ? static_cast<double>(received) / seconds : 0.0;
        observer->onProgress(progress);
    }
};

// One request: appends to the open .part, which holds offset bytes when it starts.
struct Transfer
{
    CURL *curl = nullptr;
    FileState *state = nullptr;
    int fd = -1;
    std::uint64_t offset = 0;
    std::uint64_t onDisk = 0;
    std::uint64_t expected = 0;
    bool sawBody = false;
    bool tooLarge = false;
    bool badRange = false;
    std::string writeError;
    std::string limitError;             // the minimum rate or the file's deadline, when one ended the request
    const DownloadOptions *options = nullptr;
    long long contentRangeStart = -1;
};

size_t onHeader(char *data, size_t size, size_t count, void *user)
{
    auto *t = static_cast<Transfer *>(user);
    const std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0)
        t->contentRangeStart = -1;
    const std::string key = "content-range:";
    if (line.size() > key.size() && strncasecmp(line.c_str(), key.c_str(), key.size()) == 0) {
        const std::size_t bytes = line.find("bytes", key.size());
        if (bytes != std::string::npos)
            t->contentRangeStart = std::atoll(line.c_str() + bytes + 5);
    }
    return size * count;
}

size_t onData(char *data, size_t size, size_t count, void *user)
{
    auto *t = static_cast<Transfer *>(user);
    const std::size_t length = size * count;
    if (!t->sawBody) {
        t->sawBody = true;
        long code = 0;
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        if (code == 206 && t->contentRangeStart != static_cast<long long>(t->offset)) {
            t->badRange = true;
            t->writeError = "the server resumed at byte " + std::to_string(t->contentRangeStart) + ", not "
                            + std::to_string(t->offset);
            return 0;
        }
        if (code == 200 && t->offset > 0) {
            // The server ignored the Range request and sends the whole file: start the part again.
            if (::ftruncate(t->fd, 0) != 0) {
                t->writeError = std::strerror(errno);
                return 0;
            }
            t->onDisk = 0;
        }
    }
    if (t->onDisk + length > t->expected) {
        t->tooLarge = true;
        return 0;
    }
    std::size_t done = 0;
    while (done < length) {
        const ssize_t n = ::write(t->fd, data + done, length - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            t->writeError = std::strerror(errno);
            return 0;
        }
        done += static_cast<std::size_t>(n);
    }
    t->onDisk += length;
    t->state->received += length;
    t->state->requestReceived += length;
    t->state->progress.bytes = t->onDisk;
    return length;
}

int onTransferInfo(void *user, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
{
    auto *t = static_cast<Transfer *>(user);
    if (t->state->cancel->load())
        return 1;
    const Clock::time_point now = Clock::now();
    const double fileSeconds = std::chrono::duration<double>(now - t->state->started).count();
    const double requestSeconds = std::chrono::duration<double>(now - t->state->requestStarted).count();
    if (fileSeconds > static_cast<double>(t->options->deadlineSeconds)) {
        t->limitError = "not done after " + std::to_string(t->options->deadlineSeconds) + " s, the limit per file";
        return 1;
    }
    if (requestSeconds > static_cast<double>(t->options->stallSeconds)) {
        const double rate = static_cast<double>(t->state->requestReceived) / requestSeconds;
        if (rate < t->options->minAverageBytesPerSecond) {
            t->limitError = "averaged " + std::to_string(static_cast<long long>(rate)) + " bytes/s over "
                            + std::to_string(static_cast<long long>(requestSeconds)) + " s, below the minimum of "
                            + std::to_string(static_cast<long long>(t->options->minAverageBytesPerSecond));
            return 1;
        }
    }
    t->state->report(false);
    return 0;
}

bool syncPath(const std::string &path, int flags)
{
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool ok = ::fsync(fd) == 0;
    return ::close(fd) == 0 && ok;
}

std::uint64_t sizeOf(const std::string &path)
{
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(path, ec);
    return ec ? 0 : static_cast<std::uint64_t>(size);
}

void removeFile(const std::string &path)
{
    std::error_code ec;
    fs::remove(path, ec);
}

bool sleepUnlessCancelled(const StopFlag &cancel, std::chrono::milliseconds total)
{
    const Clock::time_point end = Clock::now() + total;
    while (Clock::now() < end) {
        if (cancel.load())
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return !cancel.load();
}

enum class Outcome { Done, NextMirror, Cancelled, Fatal };

struct Attempt
{
    Outcome outcome = Outcome::NextMirror;
    std::string reason;
};

// "" when the part is the file, else why not (and the part is deleted).
std::string checkPart(const std::string &part, const DatasetFile &file)
{
    const std::uint64_t size = sizeOf(part);
    std::string why;
    if (size != file.size) {
        why = "size mismatch, expected " + std::to_string(file.size) + " bytes, got " + std::to_string(size);
    } else {
        try {
            const std::string got = sha256File(part);
            if (got != file.sha256)
                why = "checksum mismatch, expected " + file.sha256 + ", got " + got;
        } catch (const std::exception &e) {
            why = e.what();
        }
    }
    if (!why.empty())
        removeFile(part);
    return why;
}

// Data on disk before the rename, and the rename on disk before we report success.
std::string finalize(const std::string &part, const std::string &target, const std::string &dir)
{
    if (!syncPath(part, O_RDONLY))
        return part + ": cannot sync: " + std::strerror(errno);
    if (std::rename(part.c_str(), target.c_str()) != 0)
        return target + ": cannot rename " + part + ": " + std::strerror(errno);
    syncPath(dir, O_RDONLY | O_DIRECTORY);
    return {};
}

bool isTransient(CURLcode rc)
{
    switch (rc) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

Attempt fetchFromMirror(CURL *curl, const std::string &url, const std::string &part, const DatasetFile &file,
                        FileState &state, const DownloadOptions &options)
{
    for (int attempt = 0;; ++attempt) {
        if (state.cancel->load())
            return {Outcome::Cancelled, {}};
        Transfer t;
        t.curl = curl;
        t.state = &state;
        t.expected = file.size;
        t.options = &options;
        // Never through a link or into a FIFO planted under the part's name.
        t.fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
        if (t.fd < 0)
            return {Outcome::Fatal, part + ": cannot write: " + std::strerror(errno)};
        struct stat st {};
        if (::fstat(t.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(t.fd);
            return {Outcome::Fatal, part + ": not a regular file; remove it and download again"};
        }
        state.requestStarted = Clock::now();
        state.requestReceived = 0;
        t.offset = t.onDisk = sizeOf(part);
        state.progress.bytes = t.offset;
        state.report(true);

        char errorText[CURL_ERROR_SIZE] = {};
        const std::string range = std::to_string(t.offset) + "-";
        curl_easy_reset(curl);
        curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
        curl_easy_setopt(curl, CURLOPT_USERAGENT, "trainlab/" TRAINLAB_VERSION);
        curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
        curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options.connectTimeoutSeconds);
        curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options.stallSeconds);
        curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errorText);
        curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, onHeader);
        curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, onData);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, onTransferInfo);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        // http and https only, redirects included: no file://, gopher:// or dict:// through a mirror.
#if LIBCURL_VERSION_NUM >= 0x075500
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
        curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
        // CURLOPT_RANGE rather than RESUME_FROM: libcurl fails a 200 answer to RESUME_FROM, and we want to restart then.
        if (t.offset > 0)
            curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
        const CURLcode rc = curl_easy_perform(curl);
        long code = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
        ::close(t.fd);

        if (rc == CURLE_OK) {
            state.progress.bytes = sizeOf(part);
            return {Outcome::Done, {}};
        }
        if (state.cancel->load())
            return {Outcome::Cancelled, {}};
        if (!t.limitError.empty() && t.limitError.rfind("not done", 0) == 0)
            return {Outcome::Fatal, file.name + ": " + t.limitError + "; " + part + " is kept and the next download resumes it"};
        if (!t.limitError.empty())
            return {Outcome::NextMirror, t.limitError};
        if (t.tooLarge) {
            removeFile(part);
            return {Outcome::NextMirror, "larger than the expected " + std::to_string(file.size) + " bytes"};
        }
        if (t.badRange)
            return {Outcome::NextMirror, t.writeError};
        if (!t.writeError.empty())
            return {Outcome::Fatal, part + ": cannot write: " + t.writeError};
        std::string reason = rc == CURLE_HTTP_RETURNED_ERROR ? "HTTP " + std::to_string(code)
                             : errorText[0]                  ? std::string(errorText)
                                                             : std::string(curl_easy_strerror(rc));
        long osErrno = 0;
        curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &osErrno);
        // libcurl's text says "Couldn't connect" and leaves out why; the system's words say it.
        if (osErrno != 0 && reason.find(std::strerror(static_cast<int>(osErrno))) == std::string::npos)
            reason += " (" + std::string(std::strerror(static_cast<int>(osErrno))) + ")";
        if (code == 416 && t.offset > 0 && attempt < options.retriesPerMirror) {
            removeFile(part);
            continue;
        }
        // A connect timeout got no answer at all: another try would wait as long again.
        const bool retry = isTransient(rc) && (code != 0 || rc != CURLE_OPERATION_TIMEDOUT);
        if (!retry || attempt >= options.retriesPerMirror)
            return {Outcome::NextMirror, reason};
        state.observer->onLog(file.name + " from " + redactUrl(url) + ": " + reason + "; resuming at byte "
                              + std::to_string(sizeOf(part)) + " (retry " + std::to_string(attempt + 1) + " of "
                              + std::to_string(options.retriesPerMirror) + ")");
        if (!sleepUnlessCancelled(*state.cancel, std::chrono::milliseconds(250 * (attempt + 1))))
            return {Outcome::Cancelled, {}};
    }
}

void initCurl()
{
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

DownloadResult download(const std::string &dir, const DatasetManifest &manifest, DownloadObserver &observer,
                        const StopFlag &cancel, const DownloadOptions &options)
{
    DownloadResult result;
    result.dir = dir;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir, ec)) {
        result.error = "cannot create the folder " + dir + ": " + (ec ? ec.message() : "not a folder");
        return result;
    }
    std::vector<std::string> mirrors = options.mirrors.empty() ? manifest.mirrors : options.mirrors;
    if (mirrors.empty()) {
        result.error = "no mirror to download from; " + offlineHint(dir);
        return result;
    }
    for (auto &m : mirrors) {
        if (const std::string problem = mirrorProblem(m); !problem.empty()) {
            result.error = "mirror " + redactUrl(m) + ": " + problem;
            return result;
        }
        if (!m.empty() && m.back() != '/')
            m += '/';
    }
    initCurl();
    CURL *curl = curl_easy_init();
    if (!curl) {
        result.error = "cannot start libcurl";
        return result;
    }
    const int count = static_cast<int>(manifest.files.size());
    for (int index = 0; index < count && result.error.empty(); ++index) {
        const DatasetFile &file = manifest.files[static_cast<std::size_t>(index)];
        const std::string target = (fs::path(dir) / file.name).string();
        const std::string part = target + ".part";
        FileState state;
        state.observer = &observer;
        state.cancel = &cancel;
        state.progress.file = file.name;
        state.progress.fileIndex = index + 1;
        state.progress.fileCount = count;
        state.progress.total = file.size;

        if (fs::is_regular_file(target, ec) && sizeOf(target) == file.size) {
            std::string sum;
            try {
                sum = sha256File(target);
            } catch (const std::exception &) {
            }
            if (sum == file.sha256) {
                observer.onLog(file.name + ": already here, checksum ok");
                continue;
            }
        }
        // Something planted under the part's name is refused before its size is read or anything written.
        struct stat partStat {};
        if (::lstat(part.c_str(), &partStat) == 0 && !S_ISREG(partStat.st_mode)) {
            result.error = part + ": " + (S_ISLNK(partStat.st_mode) ? "a symbolic link" : "not a regular file")
                           + ", not a partial download; remove it and download again";
            break;
        }
        // A part as long as the file is either the file (a run stopped before the rename) or garbage.
        if (sizeOf(part) >= file.size && checkPart(part, file).empty()) {
            const std::string error = finalize(part, target, dir);
            if (!error.empty())
                result.error = error;
            else
                observer.onLog(file.name + ": done, checksum ok");
            continue;
        }

        std::vector<std::string> failures;
        bool done = false;
        for (const std::string &mirror : mirrors) {
            if (cancel.load())
                break;
            const std::string url = mirror + file.name;
            const std::string shown = redactUrl(url);
            observer.onLog(file.name + ": downloading from " + shown
                           + (sizeOf(part) > 0 ? " (resuming at byte " + std::to_string(sizeOf(part)) + ")" : ""));
            Attempt a = fetchFromMirror(curl, url, part, file, state, options);
            if (a.outcome == Outcome::Done) {
                a.reason = checkPart(part, file);
                if (a.reason.empty()) {
                    const std::string error = finalize(part, target, dir);
                    if (!error.empty()) {
                        result.error = error;
                    } else {
                        state.progress.bytes = file.size;
                        state.report(true);
                        observer.onLog(file.name + ": done, checksum ok");
                        done = true;
                    }
                    break;
                }
                a.outcome = Outcome::NextMirror;
            }
            if (a.outcome == Outcome::Cancelled)
                break;
            if (a.outcome == Outcome::Fatal) {
                result.error = a.reason;
                break;
            }
            failures.push_back(file.name + " from " + shown + ": " + a.reason);
            observer.onLog(failures.back());
        }
        if (cancel.load()) {
            result.cancelled = true;
            result.error = "cancelled while downloading " + file.name
                           + (sizeOf(part) > 0 ? "; " + part + " is kept and the next download resumes it" : "");
            break;
        }
        if (!done && result.error.empty()) {
            result.error = file.name + ": could not download it from any mirror:";
            for (const auto &f : failures)
                result.error += "\n  " + f;
            result.error += "\nTo go on without the network, " + offlineHint(dir);
        }
    }
    curl_easy_cleanup(curl);
    result.ok = result.error.empty();
    return result;
}

#else

DownloadResult download(const std::string &dir, const DatasetManifest &, DownloadObserver &, const StopFlag &,
                        const DownloadOptions &)
{
    DownloadResult result;
    result.dir = dir;
    result.error = "built without libcurl: download the four files by hand, then trainlab-cli dataset verify " + dir;
    return result;
}

#endif

} // namespace

std::string redactUrl(const std::string &url)
{
    const std::size_t scheme = url.find("://");
    const std::size_t from = scheme == std::string::npos ? 0 : scheme + 3;
    const std::size_t end = std::min(url.find_first_of("/?#", from), url.size());
    const std::size_t at = url.rfind('@', end == 0 ? 0 : end - 1);
    if (at == std::string::npos || at < from || at >= end)
        return url;
    return url.substr(0, from) + "***" + url.substr(at);
}

std::string mirrorProblem(const std::string &url)
{
    const std::size_t scheme = url.find("://");
    std::string name = scheme == std::string::npos ? std::string() : url.substr(0, scheme);
    for (auto &c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "http" || name == "https")
        return {};
    return scheme == std::string::npos ? "not a URL; mirrors are http:// or https:// addresses"
                                       : name + "://: not allowed; mirrors are http:// or https:// addresses";
}

DownloadResult downloadDataset(const std::string &dir, const DatasetManifest &manifest, DownloadObserver &observer,
                               const StopFlag &cancel, const DownloadOptions &options)
{
    try {
        return download(dir, manifest, observer, cancel, options);
    } catch (const std::exception &e) {
        DownloadResult result;
        result.dir = dir;
        result.error = std::string("download failed: ") + e.what();
        return result;
    }
}

} // namespace trainlab
