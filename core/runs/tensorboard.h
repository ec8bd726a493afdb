#pragma once

#include "core/config.h"
#include "core/train/observer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

// TensorBoard's event files, written without TensorFlow or protobuf: TFRecord framing (length, masked CRC-32C of
// it, data, masked CRC-32C of the data) around tensorflow.Event messages whose few fields are encoded directly.

// CRC-32C (Castagnoli), as TFRecord frames use; not zlib's CRC-32.
std::uint32_t crc32c(const std::string &bytes);
// One TFRecord: data framed as above.
std::string tfRecord(const std::string &data);
// The records of an events file, each checked (length, both CRCs); throws naming the file and the offset of the
// first bad record. A file above 64 MB is refused.
std::vector<std::string> readTfRecords(const std::string &path);
// The records before the first bad one (a record torn by a crash), without throwing for it.
std::vector<std::string> readTfRecords(const std::string &path, bool upToTheFirstBad);
// An Event's step (field 2), 0 when absent.
std::int64_t eventStep(const std::string &event);

struct TbScalar
{
    std::string tag;
    double value = 0.0;
};

// A tensor's values in TensorBoard's HistogramProto: bucket i counts the values from limits[i - 1] (the lowest value
// for i = 0) up to limits[i].
struct TbHistogram
{
    std::string tag;
    double min = 0.0;
    double max = 0.0;
    double num = 0.0;
    double sum = 0.0;
    double sumSquares = 0.0;
    std::vector<double> limits;
    std::vector<double> counts;
};

// One hyper-parameter of the HParams plugin: a number, a string or a bool (kind picks which).
struct TbHParam
{
    enum class Kind { Number, String, Bool } kind = Kind::Number;
    std::string name;
    double number = 0.0;
    std::string text;
    bool flag = false;
};

std::string tbFileVersionEvent(double wallTime);
// One step's event: its scalars and histograms in one Summary, so a resume that copies events by step keeps both.
std::string tbScalarsEvent(double wallTime, std::int64_t step, const std::vector<TbScalar> &scalars,
                           const std::vector<TbHistogram> &histograms = {});
// The hparams plugin's session start (the run's settings) and end (its status: completed or failed).
std::string tbSessionStartEvent(double wallTime, const std::vector<TbHParam> &hparams);
std::string tbSessionEndEvent(double wallTime, bool succeeded);

// The settings a run is compared by in TensorBoard's HParams tab.
std::vector<TbHParam> tbHParams(const ExperimentConfig &config);
// An epoch's scalars: train/loss, train/accuracy, test/accuracy, learning_rate (when known), speed/*.
std::vector<TbScalar> tbEpochScalars(const EpochMetrics &metrics);

// A run's tb/ folder: one events file, appended and flushed per epoch so TensorBoard reads it while the run goes.
// A resumed run starts a new file holding the earlier files' epochs up to the checkpoint's (so no step is
// repeated), fills in from the record any epoch they lack, then removes them.
class TensorBoardLog
{
public:
    TensorBoardLog(const std::string &runDir, const ExperimentConfig &config, const std::vector<EpochMetrics> &done);
    ~TensorBoardLog();
    TensorBoardLog(const TensorBoardLog &) = delete;
    TensorBoardLog &operator=(const TensorBoardLog &) = delete;

    // The epoch's scalars, and the histograms of its weights where given.
    void epoch(const EpochMetrics &metrics, const std::vector<TbHistogram> &histograms = {});
    // completed or failed: the session's end; stopped leaves it open for a resume.
    void finish(const std::string &status);
    const std::string &path() const { return m_path; }

private:
    void append(const std::string &event);

    std::string m_path;
    int m_fd = -1;
};

} // namespace trainlab
