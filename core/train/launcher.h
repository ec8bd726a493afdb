#pragma once

#include "core/train/trainer.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainlab {

// What the command line said about the world; unset where the flag was not given.
struct LaunchFlags
{
    std::optional<int> nnodes, nodeRank, masterPort;
    std::optional<std::string> masterAddr;
};

// Where this process sits, from the flags, else torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE), else Slurm's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_NTASKS_PER_NODE, the job's first host, a port from the job id), else a single node.
struct Launch
{
    NodeOptions node;
    std::string launcher = "flags";          // "flags", "torchrun", "Slurm" or "none" (one node)
    std::vector<std::string> origins;         // where each value came from, for the log: "node rank 1 (RANK)"
};

using EnvLookup = std::function<const char *(const char *)>;

// Throws std::invalid_argument naming the flag or variable: a bad number, a rank outside the world, a flag and a
// variable that disagree.
Launch resolveLaunch(const LaunchFlags &flags, const EnvLookup &env);
// The devices this process drives: all of the config's (one process per node), or with several processes per node
// the one at LOCAL_RANK (one process per GPU); a single "cpu" serves every process. Throws naming devices when the
// list fits neither layout.
std::vector<std::string> processDevices(const std::vector<std::string> &devices, const NodeOptions &node);
// Slurm's host list ("gpu[03-05,07],login1") to its first host ("gpu03").
std::string firstSlurmHost(const std::string &nodeList);

// The command lines that start an experiment file under torchrun and under Slurm (one process per GPU).
std::string torchrunCommand(const std::string &configPath, int nodes, int processesPerNode);
std::string slurmScript(const std::string &configPath, int nodes, int processesPerNode, bool gpus = true);

} // namespace trainlab
