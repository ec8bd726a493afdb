#include "core/eval/classify.h"

#include "core/eval/evaluation.h"
#include "core/eval/runmodel.h"
#include "core/util/numtext.h"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace trainlab {

ClassifyResult classifyImages(const std::string &runDir, const std::string &which, const std::vector<std::string> &paths,
                              InvertMode invert, int topK)
{
    RunModel run = loadRunModel(runDir, which);
    ClassifyResult result;
    result.checkpoint = std::filesystem::path(run.checkpointPath).filename().string();
    result.epoch = run.info.epoch;
    result.classNames = classNames(run.config);
    std::vector<torch::Tensor> inputs;
    std::vector<std::size_t> rows;
    for (const std::string &path : paths) {
        Classification c;
        c.path = path;
        try {
            const GrayImage image = readImageFile(path);
            c.looksInverted = looksInverted(image);
            c.inverted = invert == InvertMode::Yes || (invert == InvertMode::Auto && c.looksInverted);
            c.input = fashionInput(image, c.inverted);
            inputs.push_back(torch::from_blob(c.input.pixels.data(), {1, 1, c.input.height, c.input.width}, torch::kUInt8)
                                 .to(torch::kFloat32)
                                 .div_(255.0));
            rows.push_back(result.images.size());
        } catch (const std::exception &e) {
            c.error = e.what();
        }
        result.images.push_back(std::move(c));
    }
    if (inputs.empty())
        return result;
    torch::NoGradGuard noGrad;
    const torch::Tensor probabilities = torch::softmax(run.model->forward(torch::cat(inputs)), 1).contiguous();
    const auto classes = static_cast<int>(probabilities.size(1));
    const int k = std::min(std::max(1, topK), classes);
    const auto p = probabilities.accessor<float, 2>();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        std::vector<int> order(static_cast<std::size_t>(classes));
        for (int c = 0; c < classes; ++c)
            order[static_cast<std::size_t>(c)] = c;
        const auto row = static_cast<std::int64_t>(i);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[row][a] > p[row][b]; });
        for (int j = 0; j < k; ++j)
            result.images[rows[i]].top.emplace_back(order[static_cast<std::size_t>(j)], p[row][order[static_cast<std::size_t>(j)]]);
    }
    return result;
}

std::string formatClassification(const ClassifyResult &r)
{
    std::string out = "checkpoint " + r.checkpoint + " (epoch " + std::to_string(r.epoch) + ")\n";
    for (const Classification &c : r.images) {
        out += c.path + "\n";
        if (!c.error.empty()) {
            out += "  refused: " + c.error + "\n";
            continue;
        }
        for (const auto &[cls, probability] : c.top)
        {
            const std::string pct = formatFixed(100.0 * probability, 1) + "%";
            out += std::string(2 + (pct.size() < 6 ? 6 - pct.size() : 0), ' ') + pct + "  " + r.classNames[static_cast<std::size_t>(cls)] + "\n";
        }
        if (c.inverted && c.looksInverted)
            out += "  (a light background: negated, as Fashion-MNIST's pictures are light on black; --invert no to keep it)\n";
        else if (c.inverted)
            out += "  (negated: --invert yes)\n";
        else if (c.looksInverted)
            out += "  (a light background, kept as it is: the model expects a light object on black; try --invert yes)\n";
    }
    return out;
}

std::string classificationJson(const ClassifyResult &r)
{
    nlohmann::json j;
    j["checkpoint"] = r.checkpoint;
    j["epoch"] = r.epoch;
    j["images"] = nlohmann::json::array();
    for (const Classification &c : r.images) {
        nlohmann::json row{{"path", c.path}};
        if (!c.error.empty()) {
            row["error"] = c.error;
        } else {
            row["inverted"] = c.inverted;
            row["looks_inverted"] = c.looksInverted;
            row["top"] = nlohmann::json::array();
            for (const auto &[cls, probability] : c.top)
                row["top"].push_back({{"class", cls}, {"name", r.classNames[static_cast<std::size_t>(cls)]}, {"probability", probability}});
        }
        j["images"].push_back(row);
    }
    return j.dump(1) + "\n";
}

} // namespace trainlab
