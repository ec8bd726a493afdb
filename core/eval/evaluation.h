#pragma once

#include "core/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

struct ClassStats
{
    std::string name;
    std::int64_t support = 0;       // test images of this class
    std::int64_t predicted = 0;     // test images predicted as this class
    std::int64_t correct = 0;
    double recall = 0.0;            // the class's accuracy: correct / support
    double precision = 0.0;         // correct / predicted (0 when nothing was predicted as it)
};

struct ConfusedPair
{
    int truth = 0;
    int predicted = 0;
    std::int64_t count = 0;
};

// A test image the model got wrong, with the probability it gave its (wrong) answer.
struct Mistake
{
    std::int64_t index = 0;         // in the run's test set (after test_limit)
    int truth = 0;
    int predicted = 0;
    double probability = 0.0;
    std::string pixels;             // the image, Evaluation::imageHeight x imageWidth bytes row-major; "" if not kept
};

// A model's answers on a test set: what the window's Evaluation view and `trainlab-cli evaluate` show.
struct Evaluation
{
    std::string checkpoint;         // the file evaluated: best.pt or checkpoint.pt
    int epoch = 0;                  // the epoch its weights are from
    std::int64_t samples = 0;
    double top1 = 0.0;
    double top3 = 0.0;
    std::vector<std::string> classNames;
    std::vector<std::vector<std::int64_t>> confusion;   // [true class][predicted class], counts
    std::vector<ClassStats> classes;
    std::vector<ConfusedPair> mostConfused;             // off the diagonal, largest first
    std::vector<Mistake> mistakes;                       // most confident first
    int imageHeight = 0, imageWidth = 0;                 // of the mistakes' pixels; 0 when they have none
};

// Fashion-MNIST's ten names for that dataset (the real one and the sample), else "0", "1", ...
std::vector<std::string> classNames(const ExperimentConfig &config);

// From logits (N rows of C = names.size() values, row-major) and N labels: the matrix, per-class figures,
// top-1/top-3, the `pairs` most confused pairs, and as mistakes the `mistakes` most confident ones together with
// each confusion cell's `perCell` most confident (so the gallery can show any cell). No LibTorch here: the CLI
// and the window include this header.
Evaluation summarizePredictions(const std::vector<float> &logits, const std::vector<std::int64_t> &labels,
                                const std::vector<std::string> &names, int pairs = 5, int mistakes = 64, int perCell = 3);
// Copies each mistake's image from the test set's images (count x height x width bytes, row-major), so that
// evaluation.json shows them without the dataset.
void attachMistakeImages(Evaluation &e, const std::uint8_t *images, std::int64_t count, int height, int width);

// Which checkpoint of a run folder: "best" (best.pt), "last" (checkpoint.pt), or "" for best.pt where the
// run has one, else checkpoint.pt. Throws naming the file when it is missing.
std::string evaluationCheckpoint(const std::string &runDir, const std::string &which);

// Loads the run's configuration, its test set and the checkpoint on the CPU and evaluates every test image
// (the mistakes with their images).
// Throws runtime_error naming the file or field at fault.
Evaluation evaluateRun(const std::string &runDir, const std::string &which = "");

std::string evaluationJson(const Evaluation &e);
Evaluation evaluationFromJson(const std::string &text, const std::string &origin);
// A readable report: the figures, the per-class table, the most confused pairs, the matrix.
std::string formatEvaluation(const Evaluation &e);

// Two evaluations of the same test set side by side: "here" is the run looked at, "there" the one it is held against.
struct ClassChange
{
    std::string name;
    double here = 0.0;              // the class's accuracy (recall)
    double there = 0.0;
};

struct PairChange
{
    int truth = 0;
    int predicted = 0;
    std::int64_t here = 0;          // test images of class truth taken for predicted
    std::int64_t there = 0;
};

struct EvaluationDiff
{
    std::int64_t samples = 0;
    double top1Here = 0.0, top1There = 0.0;
    std::vector<std::string> classNames;
    std::vector<ClassChange> classes;
    std::vector<PairChange> pairs;  // the confusions that changed most, by how many images
};

// Throws invalid_argument saying why when the two were not made on the same test set (other classes, other image
// counts per class), so a difference is never a difference of data.
EvaluationDiff diffEvaluations(const Evaluation &here, const Evaluation &there, int pairs = 5);
// The per-class table with both accuracies and the change, then the confusions that changed most.
std::string formatEvaluationDiff(const EvaluationDiff &d, const std::string &hereName, const std::string &thereName);

// evaluation.json in the run folder, written atomically.
constexpr const char *kEvaluationFile = "evaluation.json";

} // namespace trainlab
