#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trainlab {

// trainlab-cli's parsed command line; error is set (and names the flag) when it is bad usage.
struct CliArgs
{
    std::string command;          // run, validate, resume, runs, sweep, lr-find, evaluate, classify, export, notes, compare, delete, devices, presets, dataset, help, version
    std::string subcommand;       // dataset: download, verify, where
    std::string datasetDir;       // dataset download --dir, dataset verify DIR
    std::vector<std::string> mirrors;
    std::string configPath;       // run, validate: CONFIG.json; resume, evaluate, classify, export, notes: RUN_DIR; sweep: SWEEP.json
    std::string preset;
    std::optional<int> epochs;
    std::optional<int> sweepRuns;                 // sweep --runs: how many a random sweep draws
    std::optional<long long> randomSeed;          // sweep --random-seed
    std::optional<long long> trainLimit, testLimit, batchSize;
    std::optional<double> learningRate;
    std::optional<std::vector<std::string>> devices;
    std::string runsDir;
    // Unset unless given: torchrun's or Slurm's variables fill them in (core/train/launcher.h).
    std::optional<int> nnodes, nodeRank, masterPort;
    std::optional<std::string> masterAddr;
    bool monitor = false;         // run, resume: the device monitor's line after each epoch
    bool dryRun = false;          // sweep: print the plan only
    bool yes = false;             // sweep: start more than SweepConfig::kAskAbove runs
    bool stopOnFailure = false;   // sweep
    std::string resumeSweep;      // sweep --resume SWEEP_DIR
    std::string checkpoint;       // evaluate, classify, export --checkpoint best|last ("": best.pt where there is one)
    bool json = false;            // evaluate, classify, runs --json
    std::string against;          // evaluate --against OTHER_RUN_DIR: both runs' evaluations side by side
    std::vector<std::string> images;  // classify IMAGE...
    std::string invert = "auto";  // classify --invert auto|yes|no
    std::string outputPath;       // export OUT.pth; lr-find --out CURVE.csv
    std::string exportFormat;     // export: pytorch or onnx (by OUT's name unless --format)
    std::optional<double> minLr, maxLr;   // lr-find
    std::optional<int> steps;     // lr-find
    std::string csv;              // runs --csv metrics|devices: every run's table on stdout
    std::string sort;             // runs --sort date|name|status|epochs|best|to|lr|batch ("": date, the newest first)
    std::string filter;           // runs --filter WORDS: the rows holding every word
    std::string runNotes;         // run --notes TEXT
    std::vector<std::string> settings;   // run, validate, lr-find --set KEY=VALUE (repeatable), in order
    std::vector<std::string> runDirs;   // compare RUN_DIR RUN_DIR..., delete RUN_DIR...
    bool permanently = false;     // delete --permanently
    std::optional<std::string> notes;   // notes RUN_DIR TEXT: the new notes ("-": read from stdin); unset: print them
    std::string error;
};

CliArgs parseCliArgs(const std::vector<std::string> &args);
const char *cliUsage();

} // namespace trainlab
