#include "cliargs.h"

#include "core/runs/runstorage.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace trainlab {

namespace {

constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long long kLongLongMax = std::numeric_limits<long long>::max();

// Read in 64 bits and range-checked, so that a value beyond the destination type is refused, not wrapped.
long long toInteger(const std::string &flag, const std::string &value, long long min, long long max)
{
    const char *begin = value.c_str();
    char *end = nullptr;
    errno = 0;
    const long long n = value.empty() || std::isspace(static_cast<unsigned char>(value[0]))
                            ? 0 : std::strtoll(begin, &end, 10);
    if (!end || end == begin || end != begin + value.size())
        throw std::invalid_argument(flag + ": must be an integer, got \"" + value + "\"");
    if (errno == ERANGE || n < min || n > max)
        throw std::invalid_argument(flag + ": must be an integer from " + std::to_string(min) + " to "
                                    + std::to_string(max) + ", got \"" + value + "\"");
    return n;
}

double toNumber(const std::string &flag, const std::string &value)
{
    std::size_t used = 0;
    double x = 0;
    try {
        x = std::stod(value, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used != value.size() || value.empty() || !std::isfinite(x))
        throw std::invalid_argument(flag + ": must be a number, got \"" + value + "\"");
    return x;
}

template <typename Value>
void parseDataset(const std::vector<std::string> &args, std::size_t &i, CliArgs &out, Value value)
{
    if (i >= args.size())
        throw std::invalid_argument("dataset: needs a subcommand (download, verify or where)");
    out.subcommand = args[i++];
    if (out.subcommand != "download" && out.subcommand != "verify" && out.subcommand != "where")
        throw std::invalid_argument("dataset: unknown subcommand \"" + out.subcommand
                                    + "\" (download, verify or where)");
    while (i < args.size()) {
        const std::string arg = args[i++];
        if (arg == "--help" || arg == "-h") {
            out.command = "help";
            return;
        }
        if (out.subcommand == "download" && arg == "--dir") {
            out.datasetDir = value(arg);
            if (out.datasetDir.empty())
                throw std::invalid_argument("--dir: needs a folder, got \"\"");
        } else if (out.subcommand == "download" && arg == "--mirror") {
            out.mirrors.push_back(value(arg));
            if (out.mirrors.back().empty())
                throw std::invalid_argument("--mirror: needs a URL, got \"\"");
        } else if (arg.rfind("--", 0) == 0) {
            throw std::invalid_argument("dataset " + out.subcommand + ": unknown option \"" + arg + "\"");
        } else if (out.subcommand == "verify" && out.datasetDir.empty()) {
            out.datasetDir = arg;
        } else {
            throw std::invalid_argument("dataset " + out.subcommand + ": unexpected argument \"" + arg + "\"");
        }
    }
    if (out.subcommand == "verify" && out.datasetDir.empty())
        throw std::invalid_argument("dataset verify: needs DIR");
}

} // namespace

const char *cliUsage()
{
    return "usage: trainlab-cli COMMAND [options]\n"
           "\n"
           "commands:\n"
           "  run CONFIG.json | --preset NAME   train, keeping the run in the runs folder\n"
           "  validate CONFIG.json             list every problem (exit 2 when invalid)\n"
           "  resume RUN_DIR [--epochs N]      go on with a stopped, failed or interrupted run from its last\n"
           "                                   checkpoint; --epochs N continues a completed run to N epochs\n"
           "  runs [--runs-dir DIR]            list the runs: status (incl. interrupted), epochs, best acc\n"
           "       [--sort best|to|lr|batch|epochs|name|status|date] [--filter WORDS] [--json]\n"
           "                                   best and epochs highest first, to fastest first, date newest\n"
           "                                   first (the default); only the rows holding every word;\n"
           "                                   --json: the same rows as a JSON array, for scripts\n"
           "  runs --csv metrics|devices       every run's metrics (with the time split) or devices.csv as one\n"
           "                                   CSV on stdout, each row led by the run's folder and name\n"
           "  evaluate RUN_DIR [--checkpoint best|last] [--json] [--against OTHER_RUN_DIR]\n"
           "                                   the run's model on its test set: accuracy per class, the most\n"
           "                                   confused classes, the confusion matrix; kept in evaluation.json\n"
           "                                   (--against: both runs per class, and the confusions that changed)\n"
           "  classify RUN_DIR IMAGE... [--checkpoint best|last] [--invert auto|yes|no] [--json]\n"
           "                                   the run's model on image files (PNG, JPEG, BMP, PGM...): each\n"
           "                                   file's class and the top three with their probabilities\n"
           "  export RUN_DIR OUT.pth|OUT.onnx [--checkpoint best|last] [--format pytorch|onnx]\n"
           "                                   the evaluated weights as a PyTorch state_dict for torch.load, or\n"
           "                                   the model as ONNX (by OUT's name, or --format)\n"
           "  compare RUN_DIR RUN_DIR...       runs side by side: the settings that differ between them, then\n"
           "                                   status, best acc, sec/epoch, img/s and time to 0.90 (as a sweep's)\n"
           "  notes RUN_DIR [TEXT | -]         print the run's notes, or replace them with TEXT (- reads them\n"
           "                                   from stdin; \"\" removes them); kept in RUN_DIR/notes.txt\n"
           "  delete RUN_DIR... [--permanently]\n"
           "                                   move runs to the desktop's trash (~/.local/share/Trash), or remove\n"
           "                                   them; never a run a process is training\n"
           "  sweep SWEEP.json | --preset NAME [--dry-run] [--yes] [--stop-on-failure] [--set KEY=VALUE]\n"
           "                                   run every experiment of a sweep one after another, then print\n"
           "                                   the closing table (--dry-run: only the plan; --yes: over 200 runs;\n"
           "                                   a random sweep: --runs N draws, --random-seed N)\n"
           "  sweep --resume SWEEP_DIR         go on with a stopped or killed sweep (<runs>/sweeps/ID)\n"
           "  lr-find CONFIG.json | --preset NAME [--min-lr X] [--max-lr X] [--steps N] [--out CURVE.csv]\n"
           "                                   the learning-rate range test: the loss as the rate rises step by\n"
           "                                   step (1e-5 to 10, 100 steps) and a rate to start from; keeps no\n"
           "                                   run (--out: the curve as CSV; also --batch-size, --devices,\n"
           "                                   --train-limit)\n"
           "  devices                          what this machine can train on\n"
           "  presets                          the shipped presets\n"
           "  dataset download [--dir DIR] [--mirror URL]...\n"
           "                                   fetch Fashion-MNIST (resumable; --mirror replaces the list)\n"
           "  dataset verify DIR               check the four IDX files, official or custom (exit 1: not usable)\n"
           "  dataset where                    the managed folder (dataset.path \"fashion-mnist\") and its state\n"
           "  --version, --help\n"
           "\n"
           "run options (override the config):\n"
           "  --epochs N  --batch-size N  --lr X  --devices cpu,cuda:0,...\n"
           "  --train-limit N  --test-limit N  --runs-dir DIR\n"
           "  --set KEY=VALUE  any configuration key, dotted (also validate, lr-find, a sweep's base;\n"
           "                   repeatable):\n"
           "                   --set optimizer=adamw --set schedule.kind=cosine --set 'devices=[\"cpu\",\"cpu\"]'\n"
           "  --notes TEXT     your notes on the new run (on each run of a sweep), kept in its notes.txt\n"
           "  --monitor        after each epoch, a line per device: CPU and memory, each GPU's use (NVML)\n"
           "multi-node (torchrun's names; absent: torchrun's or Slurm's variables, else one node):\n"
           "  --nnodes N  --node-rank R  --master-addr HOST  --master-port P\n"
           "\n"
           "exit status: 0 completed, 1 failed or stopped, 2 bad usage or config\n"
           "  (a config naming \"fashion-mnist\" before `dataset download` is a config error: 2)\n";
}

CliArgs parseCliArgs(const std::vector<std::string> &args)
{
    CliArgs out;
    try {
        if (args.empty())
            throw std::invalid_argument("no command given");
        std::size_t i = 0;
        const std::string first = args[i++];
        if (first == "--help" || first == "-h" || first == "help")
            out.command = "help";
        else if (first == "--version")
            out.command = "version";
        else if (first == "run" || first == "validate" || first == "devices" || first == "presets" || first == "dataset"
                 || first == "resume" || first == "runs" || first == "sweep" || first == "lr-find" || first == "evaluate"
                 || first == "classify" || first == "export" || first == "notes" || first == "compare"
                 || first == "delete")
            out.command = first;
        else
            throw std::invalid_argument("unknown command \"" + first + "\"");
        auto value = [&](const std::string &flag) -> std::string {
            if (i >= args.size())
                throw std::invalid_argument(flag + ": needs a value");
            return args[i++];
        };
        if (out.command == "dataset") {
            parseDataset(args, i, out, value);
            return out;
        }
        if (out.command == "compare" || out.command == "delete") {
            const bool compare = out.command == "compare";
            for (; i < args.size(); ++i) {
                if (args[i] == "--help" || args[i] == "-h") {
                    out.command = "help";
                    return out;
                }
                if (args[i] == "--permanently" && !compare)
                    out.permanently = true;
                else if (args[i].rfind("--", 0) == 0)
                    throw std::invalid_argument(out.command + ": unknown option \"" + args[i] + "\"");
                else
                    out.runDirs.push_back(args[i]);
            }
            if (out.runDirs.size() < (compare ? 2u : 1u))
                throw std::invalid_argument(compare ? "compare: needs two or more RUN_DIRs (folders `trainlab-cli runs` lists)"
                                                    : "delete: needs RUN_DIR (a folder `trainlab-cli runs` lists)");
            return out;
        }
        if (out.command == "notes") {
            if (i < args.size() && (args[i] == "--help" || args[i] == "-h")) {
                out.command = "help";
                return out;
            }
            if (i >= args.size() || args[i].empty())
                throw std::invalid_argument("notes: needs RUN_DIR (a folder `trainlab-cli runs` lists)");
            out.configPath = args[i++];
            if (i < args.size())
                out.notes = args[i++];
            if (i < args.size())
                throw std::invalid_argument("notes: one TEXT (quote it), got \"" + args[i] + "\" too");
            return out;
        }
        if (out.command == "evaluate" || out.command == "classify" || out.command == "export") {
            const std::string &command = out.command;
            std::vector<std::string> positional;
            while (i < args.size()) {
                const std::string arg = args[i++];
                if (arg == "--checkpoint") {
                    out.checkpoint = value(arg);
                    if (out.checkpoint != "best" && out.checkpoint != "last")
                        throw std::invalid_argument("--checkpoint: best or last, got \"" + out.checkpoint + "\"");
                } else if (arg == "--json" && command != "export") {
                    out.json = true;
                } else if (arg == "--against" && command == "evaluate") {
                    out.against = value(arg);
                    if (out.against.empty())
                        throw std::invalid_argument("--against: needs OTHER_RUN_DIR, the run to hold this one against");
                } else if (arg == "--invert" && command == "classify") {
                    out.invert = value(arg);
                    if (out.invert != "auto" && out.invert != "yes" && out.invert != "no")
                        throw std::invalid_argument("--invert: auto, yes or no, got \"" + out.invert + "\"");
                } else if (arg == "--format" && command == "export") {
                    out.exportFormat = value(arg);
                    if (out.exportFormat != "pytorch" && out.exportFormat != "onnx")
                        throw std::invalid_argument("--format: pytorch (a state_dict for torch.load) or onnx, got \""
                                                    + out.exportFormat + "\"");
                } else if (arg.rfind("--", 0) == 0) {
                    throw std::invalid_argument(command + ": unknown option \"" + arg + "\"");
                } else {
                    positional.push_back(arg);
                }
            }
            if (positional.empty() || positional.front().empty())
                throw std::invalid_argument(command + ": needs RUN_DIR (a folder `trainlab-cli runs` lists)");
            out.configPath = positional.front();
            positional.erase(positional.begin());
            if (command == "evaluate" && !positional.empty())
                throw std::invalid_argument("evaluate: unexpected argument \"" + positional.front() + "\"");
            if (!out.against.empty() && out.json)
                throw std::invalid_argument("evaluate: --against prints a table; --json is for one run (each run keeps its evaluation.json)");
            if (command == "classify") {
                if (positional.empty())
                    throw std::invalid_argument("classify: needs at least one IMAGE after RUN_DIR");
                out.images = positional;
            }
            if (command == "export") {
                if (positional.size() != 1 || positional.front().empty())
                    throw std::invalid_argument(positional.empty() ? "export: needs OUT.pth, the file to write"
                                                                   : "export: one OUT.pth, got \"" + positional[1] + "\" too");
                out.outputPath = positional.front();
                // Without --format, the file's name says: OUT.onnx is an ONNX model, anything else a state_dict.
                const std::string &o = out.outputPath;
                if (out.exportFormat.empty())
                    out.exportFormat = o.size() > 5 && o.compare(o.size() - 5, 5, ".onnx") == 0 ? "onnx" : "pytorch";
            }
            return out;
        }
        while (i < args.size()) {
            const std::string arg = args[i++];
            if (out.command != "run" && out.command != "validate" && out.command != "resume" && out.command != "runs"
                && out.command != "sweep" && out.command != "lr-find")
                throw std::invalid_argument("unexpected argument \"" + arg + "\"");
            if (arg == "--help" || arg == "-h") {
                out.command = "help";
                return out;
            }
            // A resumed run keeps its configuration: only the epochs (to continue) and where the nodes meet.
            static const char *const resumeFlags[] = {"--epochs", "--monitor", "--nnodes", "--node-rank", "--master-addr", "--master-port"};
            if (out.command == "resume" && arg.rfind("--", 0) == 0
                && std::find(std::begin(resumeFlags), std::end(resumeFlags), arg) == std::end(resumeFlags))
                throw std::invalid_argument("resume: " + arg + " cannot change a run being resumed (only --epochs, to continue it, and the multi-node options)");
            static const char *const sweepFlags[] = {"--preset", "--set", "--dry-run", "--yes", "--stop-on-failure", "--resume",
                                                     "--runs-dir", "--epochs", "--train-limit", "--test-limit", "--notes",
                                                     "--runs", "--random-seed"};
            if (out.command == "sweep" && arg.rfind("--", 0) == 0
                && std::find(std::begin(sweepFlags), std::end(sweepFlags), arg) == std::end(sweepFlags))
                throw std::invalid_argument("sweep: unknown option \"" + arg + "\" (the sweep file sets the runs; --set, --epochs, --train-limit and --test-limit change its base)");
            // The range test takes the config's recipe; only what sizes the test, and its own range.
            static const char *const finderFlags[] = {"--preset", "--set", "--batch-size", "--devices", "--train-limit",
                                                      "--min-lr", "--max-lr", "--steps", "--out"};
            if (out.command == "lr-find" && arg.rfind("--", 0) == 0
                && std::find(std::begin(finderFlags), std::end(finderFlags), arg) == std::end(finderFlags))
                throw std::invalid_argument("lr-find: unknown option \"" + arg + "\" (--preset, --set, --batch-size, --devices, --train-limit, --min-lr, --max-lr, --steps, --out)");
            if (out.command == "lr-find" && (arg == "--min-lr" || arg == "--max-lr")) {
                const double v = toNumber(arg, value(arg));
                if (!(v > 0))
                    throw std::invalid_argument(arg + ": must be above 0, got " + args[i - 1]);
                (arg == "--min-lr" ? out.minLr : out.maxLr) = v;
                continue;
            }
            if (out.command == "sweep" && arg == "--runs") {
                out.sweepRuns = static_cast<int>(toInteger(arg, value(arg), 1, 10000));
                continue;
            }
            if (out.command == "sweep" && arg == "--random-seed") {
                out.randomSeed = toInteger(arg, value(arg), 0, std::numeric_limits<long long>::max());
                continue;
            }
            if (out.command == "lr-find" && arg == "--steps") {
                out.steps = static_cast<int>(toInteger(arg, value(arg), 10, 100000));
                continue;
            }
            if (out.command == "lr-find" && arg == "--out") {
                out.outputPath = value(arg);
                if (out.outputPath.empty())
                    throw std::invalid_argument("--out: needs a file name, got \"\"");
                continue;
            }
            if (out.command == "runs" && arg == "--csv") {
                out.csv = value(arg);
                if (out.csv != "metrics" && out.csv != "devices")
                    throw std::invalid_argument("--csv: metrics or devices, got \"" + out.csv + "\"");
                continue;
            }
            if (out.command == "runs" && arg == "--sort") {
                static const char *const keys[] = {"best", "to", "lr", "batch", "epochs", "name", "status", "date"};
                out.sort = value(arg);
                if (std::find(std::begin(keys), std::end(keys), out.sort) == std::end(keys))
                    throw std::invalid_argument("--sort: best, to, lr, batch, epochs, name, status or date, got \"" + out.sort + "\"");
                continue;
            }
            if (out.command == "runs" && arg == "--json") {
                out.json = true;
                continue;
            }
            if (out.command == "runs" && arg == "--filter") {
                out.filter = value(arg);
                continue;
            }
            if (out.command == "runs" && arg != "--runs-dir")
                throw std::invalid_argument("runs: unexpected argument \"" + arg + "\" (only --runs-dir DIR, --sort KEY, --filter WORDS, --json and --csv metrics|devices)");
            if (arg == "--set" && (out.command == "run" || out.command == "validate" || out.command == "lr-find" || out.command == "sweep")) {
                out.settings.push_back(value(arg));
                continue;
            }
            if (out.command == "validate" || arg.rfind("--", 0) != 0) {
                if (arg.rfind("--", 0) == 0 || !out.configPath.empty())
                    throw std::invalid_argument("unexpected argument \"" + arg + "\"");
                out.configPath = arg;
            } else if (arg == "--preset") {
                out.preset = value(arg);
            } else if (arg == "--dry-run") {
                out.dryRun = true;
            } else if (arg == "--yes") {
                out.yes = true;
            } else if (arg == "--stop-on-failure") {
                out.stopOnFailure = true;
            } else if (arg == "--resume") {
                out.resumeSweep = value(arg);
                if (out.resumeSweep.empty())
                    throw std::invalid_argument("--resume: needs a sweep folder, got \"\"");
            } else if (arg == "--epochs") {
                out.epochs = static_cast<int>(toInteger(arg, value(arg), 1, kIntMax));
            } else if (arg == "--train-limit") {
                out.trainLimit = toInteger(arg, value(arg), 0, kLongLongMax);
            } else if (arg == "--test-limit") {
                out.testLimit = toInteger(arg, value(arg), 0, kLongLongMax);
            } else if (arg == "--batch-size") {
                out.batchSize = toInteger(arg, value(arg), 1, kLongLongMax);
            } else if (arg == "--lr") {
                out.learningRate = toNumber(arg, value(arg));
            } else if (arg == "--devices") {
                std::vector<std::string> list;
                std::string v = value(arg), item;
                for (std::size_t p = 0; p <= v.size(); ++p) {
                    if (p == v.size() || v[p] == ',') {
                        if (item.empty())
                            throw std::invalid_argument("--devices: empty device name in \"" + v + "\"");
                        list.push_back(item);
                        item.clear();
                    } else {
                        item += v[p];
                    }
                }
                out.devices = list;
            } else if (arg == "--runs-dir") {
                out.runsDir = value(arg);
            } else if (arg == "--notes" && (out.command == "run" || out.command == "sweep")) {
                out.runNotes = value(arg);
                try {
                    checkRunNotes(out.runNotes);
                } catch (const std::invalid_argument &e) {
                    throw std::invalid_argument(std::string("--") + e.what());   // "--notes: at most 16 KB, ..."
                }
            } else if (arg == "--monitor") {
                out.monitor = true;
            } else if (arg == "--nnodes") {
                out.nnodes = static_cast<int>(toInteger(arg, value(arg), 1, kIntMax));
            } else if (arg == "--node-rank") {
                out.nodeRank = static_cast<int>(toInteger(arg, value(arg), 0, kIntMax));
            } else if (arg == "--master-addr") {
                out.masterAddr = value(arg);
            } else if (arg == "--master-port") {
                out.masterPort = static_cast<int>(toInteger(arg, value(arg), 1, 65535));
            } else {
                throw std::invalid_argument("unknown option \"" + arg + "\"");
            }
        }
        if (out.command == "validate" && out.configPath.empty())
            throw std::invalid_argument("validate: needs CONFIG.json");
        if (out.command == "resume" && out.configPath.empty())
            throw std::invalid_argument("resume: needs RUN_DIR (a folder `trainlab-cli runs` lists)");
        if (out.monitor && out.command != "run" && out.command != "resume")
            throw std::invalid_argument(out.command + ": --monitor is a run and resume option");
        if (out.command != "sweep" && (out.dryRun || out.yes || out.stopOnFailure || !out.resumeSweep.empty()))
            throw std::invalid_argument(out.command + ": --dry-run, --yes, --stop-on-failure and --resume are sweep options");
        if (out.command == "sweep"
            && (out.configPath.empty() ? 0 : 1) + (out.preset.empty() ? 0 : 1) + (out.resumeSweep.empty() ? 0 : 1) != 1)
            throw std::invalid_argument("sweep: give one of SWEEP.json, --preset NAME or --resume SWEEP_DIR");
        if (out.command == "sweep" && !out.resumeSweep.empty()
            && (out.dryRun || out.epochs || out.trainLimit || out.testLimit || !out.runNotes.empty() || out.sweepRuns
                || out.randomSeed || !out.settings.empty()))
            throw std::invalid_argument("sweep --resume: goes on with the sweep as planned (no --dry-run, --set, --epochs, limits, --notes, --runs or --random-seed)");
        if (out.command == "runs" && !out.csv.empty() && (!out.sort.empty() || !out.filter.empty() || out.json))
            throw std::invalid_argument("runs: --sort, --filter and --json order, narrow and format the table, not --csv");
        if (out.command == "lr-find" && out.configPath.empty() == out.preset.empty())
            throw std::invalid_argument("lr-find: give either CONFIG.json or --preset NAME");
        if (out.command == "lr-find" && out.minLr && out.maxLr && *out.maxLr <= *out.minLr)
            throw std::invalid_argument("--max-lr: must be above --min-lr");
        if (out.command == "run" || out.command == "resume" || out.command == "sweep") {
            if (out.command == "run" && out.configPath.empty() == out.preset.empty())
                throw std::invalid_argument("run: give either CONFIG.json or --preset NAME");
            if (out.nodeRank && out.nnodes && *out.nodeRank >= *out.nnodes)
                throw std::invalid_argument("--node-rank: must be below --nnodes (" + std::to_string(*out.nnodes)
                                            + "), got " + std::to_string(*out.nodeRank));
        }
    } catch (const std::invalid_argument &e) {
        out.error = e.what();
    }
    return out;
}

} // namespace trainlab
