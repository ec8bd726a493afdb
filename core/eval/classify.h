#pragma once

#include "core/eval/imagefile.h"

#include <string>
#include <utility>
#include <vector>

namespace trainlab {

enum class InvertMode { Auto, Yes, No };

// One picture through a run's model: its top classes, or why it could not be read.
struct Classification
{
    std::string path;
    std::string error;                          // set when the file was refused; nothing else is then
    bool looksInverted = false;                 // dark object on a light background
    bool inverted = false;                      // negated before classifying (Auto: when it looked inverted)
    GrayImage input;                            // the 28×28 the model saw
    std::vector<std::pair<int, double>> top;    // class, probability; most likely first
};

struct ClassifyResult
{
    std::string checkpoint;                     // best.pt or checkpoint.pt
    int epoch = 0;
    std::vector<std::string> classNames;
    std::vector<Classification> images;         // in the order given
};

// Each file decoded, brought to Fashion-MNIST's form (fashionInput) and classified on the CPU with the run's
// checkpoint ("best", "last" or ""). A bad file is reported in its row; a bad run throws naming the file.
ClassifyResult classifyImages(const std::string &runDir, const std::string &which, const std::vector<std::string> &paths,
                              InvertMode invert = InvertMode::Auto, int topK = 3);

// A line per image: the top classes with probabilities, and a note when it was inverted or refused.
std::string formatClassification(const ClassifyResult &r);
std::string classificationJson(const ClassifyResult &r);

} // namespace trainlab
