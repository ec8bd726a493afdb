#pragma once

#include "core/config.h"
#include "core/eval/evaluation.h"
#include "core/runs/tensorboard.h"
#include "core/sweeps/sweep.h"
#include "core/train/observer.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace trainlab {

// What summary.json says about a run; also what the run history lists.
struct RunSummary
{
    std::string dir;
    std::string name;
    // running, completed, stopped, failed; "interrupted" when summary.json says running but no live
    // process holds the folder's lock (a crash, a reboot, kill -9).
    std::string status;
    std::string error;
    std::string note;             // "stopped early at epoch 7 (best 4)"
    std::string notes;            // the person's, from notes.txt (runstorage.h); never in summary.json
    double bestTestAcc = 0.0;
    int bestEpoch = 0;
    double finalTestAcc = 0.0;
    int epochsDone = 0;
    int epochsPlanned = 0;
    int checkpointEpoch = 0;      // the epoch checkpoint.pt holds; 0: none
    int bestCheckpointEpoch = 0;  // the epoch best.pt holds; 0: none
    double meanEpochSeconds = 0.0;
    double totalSeconds = 0.0;    // wall time over every session of the run
    double warmupSeconds = 0.0;   // the warm-ups before each session's first epoch, summed (in no epoch's seconds)
    std::vector<std::string> devices;
    std::string startTime;        // ISO 8601, UTC
    std::string endTime;
    std::vector<std::string> resumedAt;
    long long pid = 0;            // the process that last ran it
    std::string host;
    std::string trainlabVersion;
    std::string torchVersion;
    std::string speed;            // SpeedConfig::describe of the devices: "channels_last on; fused SGD; eager steps"
    SweepTag sweep;               // empty id: not part of a sweep

    bool canResume() const { return status == "stopped" || status == "failed" || status == "interrupted"; }
};

// A run's folder: summary.json, config.json, metrics.csv (one row per epoch), checkpoint.pt, best.pt.
// The folder is built as a hidden .creating-* folder and renamed into place complete, so a visible run
// always has all three text files. The owning process holds an flock on the folder for as long as the
// record exists; that lock is what tells a live run from an interrupted one.
// Used from the one thread that drives the run.
class DeviceSampler;

class RunRecord
{
public:
    // Creates <runsDir>/<UTC timestamp>-<safe name>[-N]; throws when the folder cannot be made.
    RunRecord(const std::string &runsDir, const ExperimentConfig &config, const std::vector<std::string> &devices,
              const SweepTag &tag = {});
    // Takes over an existing run folder to go on from `done` (the checkpoint's epochs): locks it (throws
    // when another process holds it), removes stale temporary files, rewrites metrics.csv from done
    // (dropping a torn or extra row), writes config.json and marks summary.json running again.
    static std::unique_ptr<RunRecord> reopen(const std::string &dir, const ExperimentConfig &config,
                                             const std::vector<EpochMetrics> &done, int checkpointEpoch);
    ~RunRecord();
    RunRecord(const RunRecord &) = delete;
    RunRecord &operator=(const RunRecord &) = delete;

    const std::string &dir() const { return m_dir; }
    std::string checkpointPath() const { return m_dir + "/checkpoint.pt"; }
    std::string bestPath() const { return m_dir + "/best.pt"; }
    // Whether commitEpoch(m, ...) will store a checkpoint, by the config's `checkpoints` policy.
    bool wantsCheckpoint(const EpochMetrics &m) const;
    // Checkpoint first (checkpoint.pt, best.pt when it is the best epoch), then metrics.csv, then
    // summary.json, each replaced atomically: the record never claims an epoch the checkpoint does not hold.
    // The weights' histograms go to TensorBoard with the epoch's scalars.
    void commitEpoch(const EpochMetrics &metrics, const std::string &checkpointBytes,
                     const std::vector<TbHistogram> &weights = {});
    // Whether the run writes TensorBoard files, so the weights' histograms are worth computing.
    bool wantsHistograms() const { return m_tensorBoard != nullptr; }
    // evaluation.json for the checkpoint that holds e.epoch's weights (best.pt where it does, else checkpoint.pt),
    // written atomically; false (nothing written) when no checkpoint holds them. Throws when it cannot write.
    bool saveEvaluation(Evaluation e);
    void finish(const RunResult &result);
    // Samples this node's devices (the CPU, NVML's GPUs) every second from now on; each commitEpoch then adds the
    // epoch's figures to devices.csv (cudaBusIds: cuda:N's PCI bus id at N, to name the GPUs the run used). Off by
    // default: a record made by a test or a tool samples nothing.
    void startDeviceSampling(const std::vector<std::string> &cudaBusIds = {});
    // Multi-node runs: this node's devices are written with prefix ("node0:cpu"), and addNodeDevices hands over the
    // other nodes' figures of the epoch the next commitEpoch writes, after this node's.
    void setDevicePrefix(const std::string &prefix) { m_devicePrefix = prefix; }
    void addNodeDevices(const std::vector<DeviceEpochStats> &devices);
    // The figures commitEpoch wrote for its epoch; empty without sampling.
    const std::vector<DeviceEpochStats> &lastDevices() const { return m_lastDevices; }
    // True when the run folder was deleted or moved away while this record held it.
    bool folderGone() const;
    // A problem with the optional extras (TensorBoard's files) since the last call, for the log; empty when none.
    // They never fail the run: the record proper is what a run keeps.
    std::string takeWarning();
    std::string goneMessage() const;

    static std::string safeName(const std::string &name);
    static const char *metricsHeader();
    static const char *timingHeader();
    static const char *devicesHeader();
    static std::string metricsRow(const EpochMetrics &m);
    static std::string devicesRow(int epoch, const DeviceEpochStats &d);

private:
    RunRecord() = default;
    bool isBest(const EpochMetrics &m) const;
    void writeSummary();
    void lock(const std::string &dir);
    void startTensorBoard(const ExperimentConfig &config, const std::vector<EpochMetrics> &done);
    template <typename F> void tensorBoard(F &&write);

    std::string m_dir;
    int m_lockFd = -1;
    std::string m_checkpoints = "last+best";
    std::string m_earlierTiming;   // timing.csv rows of the epochs before a resume
    std::string m_deviceRows;      // devices.csv's rows, the epochs before a resume included
    std::unique_ptr<DeviceSampler> m_sampler;
    std::vector<DeviceEpochStats> m_lastDevices;
    std::string m_devicePrefix;
    std::vector<DeviceEpochStats> m_nodeDevices;   // the other nodes', for the next commitEpoch
    RunSummary m_summary;
    RunResult m_epochs;   // the epochs so far, summarized as the engine's result is
    double m_previousSeconds = 0.0;
    std::chrono::steady_clock::time_point m_sessionStart = std::chrono::steady_clock::now();
    std::unique_ptr<TensorBoardLog> m_tensorBoard;
    std::string m_warning;
};

RunSummary readRunSummary(const std::string &runDir);
std::vector<EpochMetrics> readMetrics(const std::string &runDir);
// timing.csv (epoch, rank, seconds of data, compute, allreduce, optimizer, other), where a run measured it:
// the splits of each epoch attached to readMetrics' rows; a run without the file reads as before.
void readTiming(const std::string &runDir, std::vector<EpochMetrics> &epochs);
// devices.csv: each sampled device's figures per epoch, epochs rising; empty for a run without the file (older,
// or not sampled). Rows that do not parse are left out.
struct DeviceEpochRow
{
    int epoch = 0;
    DeviceEpochStats stats;
};
std::vector<DeviceEpochRow> readDeviceEpochs(const std::string &runDir);
std::vector<DeviceEpochRow> parseDeviceEpochs(const std::string &text);
// Each device over the whole run: means weighted by the epochs' samples, peaks of the epochs' peaks.
std::vector<DeviceEpochStats> summarizeDevices(const std::vector<DeviceEpochRow> &rows);
// The readers' parsing alone (the fuzzers' entry points): every number range-checked, errors name the file.
RunSummary parseRunSummary(const std::string &text, const std::string &runDir);
std::vector<EpochMetrics> parseMetrics(std::string text, const std::string &path);
// Every run folder under runsDir with a summary.json, newest first; one that cannot be read (or is a symbolic
// link) is listed with status "unreadable" and its problem in error. Throws when runsDir is not a folder.
std::vector<RunSummary> listRuns(const std::string &runsDir);
// True while a live process holds the run folder's lock.
bool runFolderInUse(const std::string &runDir);
std::string isoTimeUtc();
std::string hostName();

} // namespace trainlab
