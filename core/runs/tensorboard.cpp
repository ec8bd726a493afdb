#include "core/runs/tensorboard.h"

#include "core/runs/runrecord.h"
#include "core/util/atomicfile.h"
#include "core/util/protowire.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace trainlab {

namespace {

using namespace proto;

constexpr std::uint64_t kMaxEventFileBytes = 64ull << 20;

const std::array<std::uint32_t, 256> &crcTable()
{
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    return table;
}

std::uint32_t maskedCrc(const std::string &bytes)
{
    const std::uint32_t c = crc32c(bytes);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::uint64_t readLittleEndian(const std::string &bytes, std::size_t at, int count)
{
    std::uint64_t v = 0;
    for (int i = count - 1; i >= 0; --i)
        v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
    return v;
}

// A packed repeated double: its values one after another in a single length-delimited field.
std::string packedDoubles(int field, const std::vector<double> &values)
{
    std::string bytes;
    for (const double v : values) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        bytes += littleEndian(bits, 8);
    }
    return bytesField(field, bytes);
}

// tensorflow.Event: wall_time 1, step 2, file_version 3, summary 5.
std::string event(double wallTime, std::int64_t step, const std::string &rest)
{
    return doubleField(1, wallTime) + (step != 0 ? varintField(2, static_cast<std::uint64_t>(step)) : std::string()) + rest;
}

// Summary.Value carrying hparams plugin data: tag 1, metadata 9 = SummaryMetadata {plugin_data 1 = PluginData
// {plugin_name 1, content 2}}; content is an HParamsPluginData (version 0, so absent).
std::string hparamsEvent(double wallTime, const char *tag, const std::string &pluginData)
{
    const std::string metadata = bytesField(1, bytesField(1, "hparams") + bytesField(2, pluginData));
    const std::string value = bytesField(1, tag) + bytesField(9, metadata);
    return event(wallTime, 0, bytesField(5, bytesField(1, value)));
}

double now()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

std::uint32_t crc32c(const std::string &bytes)
{
    const auto &table = crcTable();
    std::uint32_t c = 0xffffffffu;
    for (const char ch : bytes)
        c = table[(c ^ static_cast<unsigned char>(ch)) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

std::string tfRecord(const std::string &data)
{
    const std::string length = littleEndian(data.size(), 8);
    return length + littleEndian(maskedCrc(length), 4) + data + littleEndian(maskedCrc(data), 4);
}

std::vector<std::string> readTfRecords(const std::string &path)
{
    return readTfRecords(path, false);
}

std::vector<std::string> readTfRecords(const std::string &path, bool upToTheFirstBad)
{
    const std::string bytes = readFile(path, kMaxEventFileBytes);
    std::vector<std::string> records;
    std::size_t at = 0;
    while (at < bytes.size()) {
        std::string problem;
        const std::string length = bytes.substr(at, 8);
        const std::uint64_t n = bytes.size() - at < 12 ? 0 : readLittleEndian(bytes, at, 8);
        std::string data;
        if (bytes.size() - at < 12)
            problem = "cut short in its header";
        else if (readLittleEndian(bytes, at + 8, 4) != maskedCrc(length))
            problem = "the length's CRC does not match";
        else if (n > bytes.size() - at - 12 || bytes.size() - at - 12 - n < 4)
            problem = "cut short (" + std::to_string(n) + " bytes announced)";
        else if (data = bytes.substr(at + 12, static_cast<std::size_t>(n));
                 readLittleEndian(bytes, at + 12 + static_cast<std::size_t>(n), 4) != maskedCrc(data))
            problem = "the data's CRC does not match";
        if (!problem.empty()) {
            if (upToTheFirstBad)
                break;
            throw std::runtime_error(path + ": record at byte " + std::to_string(at) + ": " + problem);
        }
        records.push_back(std::move(data));
        at += 16 + static_cast<std::size_t>(n);
    }
    return records;
}

std::int64_t eventStep(const std::string &event)
{
    std::size_t at = 0;
    auto readVarint = [&](std::uint64_t &v) {
        v = 0;
        for (int shift = 0; shift < 64 && at < event.size(); shift += 7) {
            const auto b = static_cast<unsigned char>(event[at++]);
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80))
                return true;
        }
        return false;
    };
    while (at < event.size()) {
        std::uint64_t k = 0, v = 0;
        if (!readVarint(k))
            return 0;
        switch (k & 7) {
        case 0:
            if (!readVarint(v))
                return 0;
            if ((k >> 3) == 2)
                return static_cast<std::int64_t>(v);
            break;
        case 1: at += 8; break;
        case 5: at += 4; break;
        case 2:
            if (!readVarint(v) || v > event.size() - std::min(at, event.size()))
                return 0;
            at += static_cast<std::size_t>(v);
            break;
        default: return 0;
        }
    }
    return 0;
}

std::string tbFileVersionEvent(double wallTime)
{
    return event(wallTime, 0, bytesField(3, "brain.Event:2"));
}

std::string tbScalarsEvent(double wallTime, std::int64_t step, const std::vector<TbScalar> &scalars,
                           const std::vector<TbHistogram> &histograms)
{
    std::string summary;
    for (const TbScalar &s : scalars)
        summary += bytesField(1, bytesField(1, s.tag) + floatField(2, static_cast<float>(s.value)));
    // Summary.Value: histo 5 = HistogramProto {min 1, max 2, num 3, sum 4, sum_squares 5, bucket_limit 6, bucket 7}.
    for (const TbHistogram &h : histograms) {
        const std::string histo = doubleField(1, h.min) + doubleField(2, h.max) + doubleField(3, h.num)
                                  + doubleField(4, h.sum) + doubleField(5, h.sumSquares) + packedDoubles(6, h.limits)
                                  + packedDoubles(7, h.counts);
        summary += bytesField(1, bytesField(1, h.tag) + bytesField(5, histo));
    }
    return event(wallTime, step, bytesField(5, summary));
}

std::string tbSessionStartEvent(double wallTime, const std::vector<TbHParam> &hparams)
{
    // SessionStartInfo: hparams 1 (map<string, google.protobuf.Value>: entries {key 1, value 2}), start_time_secs 5.
    // google.protobuf.Value: number_value 2, string_value 3, bool_value 4.
    std::string start;
    for (const TbHParam &h : hparams) {
        const std::string value = h.kind == TbHParam::Kind::Number ? doubleField(2, h.number)
                                  : h.kind == TbHParam::Kind::String ? bytesField(3, h.text)
                                                                     : varintField(4, h.flag ? 1 : 0);
        start += bytesField(1, bytesField(1, h.name) + bytesField(2, value));
    }
    start += doubleField(5, wallTime);
    return hparamsEvent(wallTime, "_hparams_/session_start_info", bytesField(3, start));
}

std::string tbSessionEndEvent(double wallTime, bool succeeded)
{
    // SessionEndInfo: status 1 (STATUS_SUCCESS 1, STATUS_FAILURE 2), end_time_secs 2.
    const std::string end = varintField(1, succeeded ? 1 : 2) + doubleField(2, wallTime);
    return hparamsEvent(wallTime, "_hparams_/session_end_info", bytesField(4, end));
}

std::vector<TbHParam> tbHParams(const ExperimentConfig &c)
{
    using K = TbHParam::Kind;
    auto number = [](const char *name, double v) { return TbHParam{K::Number, name, v, {}, false}; };
    auto text = [](const char *name, const std::string &v) { return TbHParam{K::String, name, 0.0, v, false}; };
    auto flag = [](const char *name, bool v) { return TbHParam{K::Bool, name, 0.0, {}, v}; };
    std::string devices;
    for (const auto &d : c.devices)
        devices += (devices.empty() ? "" : ",") + d;
    return {text("name", c.name),
            text("devices", devices),
            number("device_count", static_cast<double>(c.devices.size())),
            number("batch_size", static_cast<double>(c.batchSize)),
            number("learning_rate", c.learningRate),
            number("epochs", c.epochs),
            text("optimizer", c.optimizer),
            number("momentum", c.momentum),
            flag("nesterov", c.nesterov),
            number("weight_decay", c.weightDecay),
            number("label_smoothing", c.labelSmoothing),
            number("grad_clip_norm", c.gradClipNorm),
            number("ema_decay", c.emaDecay),
            text("schedule", c.schedule.kind),
            number("warmup_epochs", c.schedule.warmupEpochs),
            text("augmentation", c.augmentation.describe()),
            text("precision", c.precision),
            number("seed", static_cast<double>(c.seed)),
            number("train_limit", static_cast<double>(c.dataset.trainLimit)),
            text("dataset", c.dataset.path)};
}

std::vector<TbScalar> tbEpochScalars(const EpochMetrics &m)
{
    std::vector<TbScalar> s{{"train/loss", m.trainLoss},
                            {"train/accuracy", m.trainAcc},
                            {"test/accuracy", m.testAcc},
                            {"speed/images_per_second", m.imagesPerSecond},
                            {"speed/seconds_per_epoch", m.seconds}};
    if (m.learningRate > 0)
        s.push_back({"learning_rate", m.learningRate});
    if (m.gradNorm > 0)
        s.push_back({"train/grad_norm", m.gradNorm});
    return s;
}

TensorBoardLog::TensorBoardLog(const std::string &runDir, const ExperimentConfig &config, const std::vector<EpochMetrics> &done)
{
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(runDir) / "tb";
    std::error_code ec;
    fs::create_directory(dir, ec);
    if (ec || fs::is_symlink(fs::symlink_status(dir)) || !fs::is_directory(fs::symlink_status(dir)))
        throw std::runtime_error(dir.string() + ": not a folder TensorBoard's files can go in"
                                 + (ec ? ": " + ec.message() : std::string()));
    const double start = now();
    std::vector<fs::path> earlier;
    for (const auto &entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
            earlier.push_back(entry.path());
    }
    std::sort(earlier.begin(), earlier.end());
    std::string events = tfRecord(tbFileVersionEvent(start)) + tfRecord(tbSessionStartEvent(start, tbHParams(config)));
    const std::int64_t kept = done.empty() ? 0 : done.back().epoch;
    std::int64_t have = 0;
    for (const fs::path &file : earlier) {
        try {
            for (const std::string &e : readTfRecords(file.string(), true)) {
                const std::int64_t step = eventStep(e);
                if (step > have && step <= kept) {
                    events += tfRecord(e);
                    have = step;
                }
            }
        } catch (const std::exception &) {
            // Unreadable (too large, not a file): its epochs come from the record below.
        }
    }
    for (const EpochMetrics &m : done) {
        if (m.epoch > have)
            events += tfRecord(tbScalarsEvent(start, m.epoch, tbEpochScalars(m)));
    }
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "%.0f", start);
    m_path = (dir / ("events.out.tfevents." + std::string(stamp) + "." + hostName())).string();
    if (fs::exists(fs::symlink_status(m_path)))
        m_path += ".1";
    writeFileAtomic(m_path, events);
    for (const fs::path &file : earlier) {
        if (file.string() != m_path)
            fs::remove(file, ec);
    }
    m_fd = ::open(m_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (m_fd < 0)
        throw std::runtime_error(m_path + ": cannot open: " + std::strerror(errno));
}

TensorBoardLog::~TensorBoardLog()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

void TensorBoardLog::append(const std::string &event)
{
    // One write per record: a reader sees whole records or a short tail it waits on, as with TensorFlow's writer.
    const std::string record = tfRecord(event);
    std::size_t done = 0;
    while (done < record.size()) {
        const ssize_t n = ::write(m_fd, record.data() + done, record.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw std::runtime_error(m_path + ": cannot append: " + std::strerror(errno));
        done += static_cast<std::size_t>(n);
    }
}

void TensorBoardLog::epoch(const EpochMetrics &metrics, const std::vector<TbHistogram> &histograms)
{
    append(tbScalarsEvent(now(), metrics.epoch, tbEpochScalars(metrics), histograms));
}

void TensorBoardLog::finish(const std::string &status)
{
    if (status == "completed" || status == "failed")
        append(tbSessionEndEvent(now(), status == "completed"));
}

} // namespace trainlab
