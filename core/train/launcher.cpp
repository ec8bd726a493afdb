#include "core/train/launcher.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace trainlab {

namespace {

int integer(const std::string &name, const std::string &text, long long min, long long max)
{
    const char *begin = text.c_str();
    char *end = nullptr;
    errno = 0;
    const long long n = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? 0 : std::strtoll(begin, &end, 10);
    if (!end || end == begin || end != begin + text.size() || errno == ERANGE || n < min || n > max)
        throw std::invalid_argument(name + ": must be an integer from " + std::to_string(min) + " to " + std::to_string(max)
                                    + ", got \"" + text + "\"");
    return static_cast<int>(n);
}

std::string lower(std::string s)
{
    for (char &c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

} // namespace

std::string firstSlurmHost(const std::string &nodeList)
{
    // "gpu[03-05,07],login1": the first name, its bracket's first number with its leading zeros.
    std::string first;
    int depth = 0;
    for (const char c : nodeList) {
        if (c == '[')
            ++depth;
        else if (c == ']')
            --depth;
        else if (c == ',' && depth == 0)
            break;
        first += c;
    }
    const auto open = first.find('[');
    if (open == std::string::npos)
        return first;
    std::string range = first.substr(open + 1);
    const auto stop = range.find_first_of(",-]");
    return first.substr(0, open) + range.substr(0, stop) + (first.back() == ']' ? "" : first.substr(first.find(']') + 1));
}

Launch resolveLaunch(const LaunchFlags &flags, const EnvLookup &env)
{
    auto get = [&env](const char *name) -> std::optional<std::string> {
        const char *v = env(name);
        return v && *v ? std::optional<std::string>(v) : std::nullopt;
    };
    constexpr long long kMax = 1 << 20;
    Launch l;
    const bool torchrun = get("RANK") && get("WORLD_SIZE");
    const bool slurm = !torchrun && get("SLURM_PROCID") && get("SLURM_NTASKS");
    const char *rankVar = torchrun ? "RANK" : "SLURM_PROCID";
    const char *worldVar = torchrun ? "WORLD_SIZE" : "SLURM_NTASKS";
    const char *localVar = torchrun ? "LOCAL_RANK" : "SLURM_LOCALID";
    const std::string who = torchrun ? "torchrun's " : "Slurm's ";
    l.launcher = torchrun ? "torchrun" : slurm ? "Slurm" : flags.nnodes ? "flags" : "none";

    // A flag wins, but one that contradicts the launcher's variable is more likely a mistake than a wish.
    auto pick = [&](const std::optional<int> &flag, const char *flagName, const char *var, long long min, int fallback,
                    const char *what) {
        std::optional<int> fromEnv;
        if ((torchrun || slurm) && get(var))
            fromEnv = integer(var, *get(var), min, kMax);
        if (flag && fromEnv && *flag != *fromEnv)
            throw std::invalid_argument(std::string(flagName) + ": " + std::to_string(*flag) + ", but " + who + var + " says "
                                        + std::to_string(*fromEnv) + " (give one, or the same)");
        const int v = flag ? *flag : fromEnv ? *fromEnv : fallback;
        l.origins.push_back(std::string(what) + " " + std::to_string(v) + " ("
                            + (flag ? flagName : fromEnv ? var : "default") + ")");
        return v;
    };
    l.node.nnodes = pick(flags.nnodes, "--nnodes", worldVar, 1, 1, "processes");
    l.node.nodeRank = pick(flags.nodeRank, "--node-rank", rankVar, 0, 0, "rank");
    if (l.node.nodeRank >= l.node.nnodes) {
        const bool fromFlags = flags.nodeRank.has_value();
        throw std::invalid_argument(std::string(fromFlags ? "--node-rank" : rankVar) + ": must be below "
                                    + (flags.nnodes ? "--nnodes" : (torchrun || slurm) ? worldVar : "--nnodes") + " ("
                                    + std::to_string(l.node.nnodes) + "), got " + std::to_string(l.node.nodeRank));
    }
    if (torchrun || slurm) {
        if (get(localVar))
            l.node.localRank = integer(localVar, *get(localVar), 0, kMax);
        std::optional<std::string> perNode = torchrun ? get("LOCAL_WORLD_SIZE") : get("SLURM_NTASKS_PER_NODE");
        const char *perNodeVar = torchrun ? "LOCAL_WORLD_SIZE" : "SLURM_NTASKS_PER_NODE";
        if (slurm && !perNode && get("SLURM_TASKS_PER_NODE")) {
            // "2(x3)" or "2,1": this layout wants the same count on every node; the first says it.
            const std::string t = *get("SLURM_TASKS_PER_NODE");
            perNode = t.substr(0, t.find_first_of("(,"));
            perNodeVar = "SLURM_TASKS_PER_NODE";
        }
        if (perNode)
            l.node.processesPerNode = integer(perNodeVar, *perNode, 1, kMax);
        if (l.node.localRank >= l.node.processesPerNode)
            throw std::invalid_argument(std::string(localVar) + ": must be below " + perNodeVar + " ("
                                        + std::to_string(l.node.processesPerNode) + "), got " + std::to_string(l.node.localRank));
        if (l.node.processesPerNode > l.node.nnodes)
            throw std::invalid_argument(std::string(perNodeVar) + ": " + std::to_string(l.node.processesPerNode)
                                        + " processes per node, but the world has " + std::to_string(l.node.nnodes));
        l.origins.push_back("local rank " + std::to_string(l.node.localRank) + " of " + std::to_string(l.node.processesPerNode)
                            + " (" + localVar + ", " + perNodeVar + ")");
    }

    std::string addrFrom = "default";
    if (flags.masterAddr) {
        l.node.masterAddr = *flags.masterAddr;
        addrFrom = "--master-addr";
    } else if (get("MASTER_ADDR")) {
        l.node.masterAddr = *get("MASTER_ADDR");
        addrFrom = "MASTER_ADDR";
    } else if (slurm && (get("SLURM_STEP_NODELIST") || get("SLURM_JOB_NODELIST"))) {
        const char *var = get("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
        l.node.masterAddr = firstSlurmHost(*get(var));
        addrFrom = std::string("the first host of ") + var;
    }
    std::string portFrom = "default";
    if (flags.masterPort) {
        l.node.masterPort = *flags.masterPort;
        portFrom = "--master-port";
    } else if (get("MASTER_PORT")) {
        l.node.masterPort = integer("MASTER_PORT", *get("MASTER_PORT"), 1, 65535);
        portFrom = "MASTER_PORT";
    } else if (slurm && get("SLURM_JOB_ID")) {
        // Lightning's choice: every job of a shared cluster its own port, the same on all of the job's nodes.
        const int job = integer("SLURM_JOB_ID", *get("SLURM_JOB_ID"), 0, (1LL << 31) - 1);
        l.node.masterPort = 15000 + job % 10000;
        portFrom = "15000 + SLURM_JOB_ID % 10000";
    }
    if (torchrun && get("TORCHELASTIC_USE_AGENT_STORE") && lower(*get("TORCHELASTIC_USE_AGENT_STORE")) == "true") {
        // torchrun's agent already serves a store at MASTER_ADDR:MASTER_PORT: every process is its client, in a key
        // space of its own for each restart of the job.
        l.node.hostStore = false;
        l.node.storePrefix = "trainlab/" + get("TORCHELASTIC_RESTART_COUNT").value_or("0") + "/";
    }
    l.origins.push_back("rendezvous " + l.node.masterAddr + " (" + addrFrom + "):" + std::to_string(l.node.masterPort) + " ("
                        + portFrom + ")" + (l.node.hostStore ? "" : ", served by torchrun's agent"));
    return l;
}

std::vector<std::string> processDevices(const std::vector<std::string> &devices, const NodeOptions &node)
{
    if (node.processesPerNode <= 1 || (devices.size() == 1 && devices.front() == "cpu"))
        return devices;
    if (devices.size() == static_cast<std::size_t>(node.processesPerNode))
        return {devices[static_cast<std::size_t>(node.localRank)]};
    std::string list;
    for (const auto &d : devices)
        list += (list.empty() ? "" : ", ") + d;
    throw std::invalid_argument("devices: with " + std::to_string(node.processesPerNode)
                                + " processes per node, list one device per process (the one at LOCAL_RANK is used) or only "
                                  "\"cpu\"; got [" + list + "]");
}

std::string torchrunCommand(const std::string &configPath, int nodes, int processesPerNode)
{
    // Underscores: torchrun 1.x knows only those, 2.x both.
    std::string rdzv = nodes > 1 ? " --rdzv_backend c10d --rdzv_endpoint HOST0:29500" : " --standalone";
    return "torchrun --nnodes " + std::to_string(nodes) + " --nproc_per_node " + std::to_string(processesPerNode) + rdzv
           + " --no_python trainlab-cli run " + configPath;
}

std::string slurmScript(const std::string &configPath, int nodes, int processesPerNode, bool gpus)
{
    return "#!/bin/bash\n#SBATCH --nodes=" + std::to_string(nodes) + "\n#SBATCH --ntasks-per-node=" + std::to_string(processesPerNode)
           + (gpus ? "\n#SBATCH --gpus-per-node=" + std::to_string(processesPerNode) : std::string())
           + "\nsrun trainlab-cli run " + configPath + "\n";
}

} // namespace trainlab
