#pragma once

#include "core/config.h"
#include "core/sweeps/sweep.h"
#include "core/train/observer.h"

#include <functional>
#include <string>

namespace trainlab {

// Where this process sits in a multi-node world (torchrun's names).
struct NodeOptions
{
    int nnodes = 1;                    // processes in the world (nodes, or GPUs under torchrun's one process per GPU)
    int nodeRank = 0;
    std::string masterAddr = "127.0.0.1";
    int masterPort = 29500;
    int localRank = 0;                 // this process among the processesPerNode of its machine
    int processesPerNode = 1;          // above 1: each process drives the config's device at localRank
    bool hostStore = true;             // false: rank 0 too is a client (torchrun's agent serves the store)
    std::string storePrefix;           // keys of this run in a store shared with others
    std::string launcher;              // where these came from, for the run's log ("torchrun: rank 1 (RANK), ...")
};

struct RunOptions
{
    std::string runsDir;               // empty: defaultRunsDir()
    bool keepRecord = true;            // false: no run folder (tests, benchmarks)
    NodeOptions node;
    SweepTag tag;                      // written to summary.json: the sweep this run belongs to
    std::string notes;                 // the person's notes on a new run, kept in its notes.txt (runstorage.h)
    // Steps between a step and the host reading its summed stop/error/loss slots. -1: 1 when the world
    // has a CUDA device (no host sync per step), else 0 (a stop takes effect after the current batch).
    int controlLag = -1;
    // Test hook: global rank faultRank throws at faultPoint: in its training step or optimizer step number
    // faultStep (0-based, whole run), in setup, or in the evaluation or end of epoch faultStep (1-based).
    enum class FaultPoint { Step, Setup, Evaluate, EpochEnd, OptimizerStep };
    int faultRank = -1;
    long faultStep = -1;
    FaultPoint faultPoint = FaultPoint::Step;
};

// Trains config on its devices, reporting to observer; never throws, the result says how it ended.
RunResult runExperiment(const ExperimentConfig &config, TrainingObserver &observer,
                        const StopFlag &stop, const RunOptions &options = {});

// Goes on with the run in runDir from its last checkpoint (a stopped, failed or interrupted run), or
// continues a completed one when epochs (> 0) is more than it has done. The result equals the
// uninterrupted run's. Refused, leaving the folder as it was, when its config.json no longer matches
// the checkpoint (epochs aside), when the checkpoint is unreadable, or while another process holds it.
// On other nodes of a multi-node run, use runExperiment with the same config: node 0 sends them the state.
RunResult resumeRun(const std::string &runDir, TrainingObserver &observer, const StopFlag &stop,
                    const RunOptions &options = {}, int epochs = 0);

} // namespace trainlab
