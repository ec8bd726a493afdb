#include "core/eval/evaluation.h"
#include "core/eval/runmodel.h"

#include "core/data/dataset.h"
#include "core/train/checkpoint.h"
#include "core/train/model.h"
#include "core/util/atomicfile.h"
#include "core/util/base64.h"
#include "core/util/numtext.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace trainlab {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string padLeft(const std::string &s, std::size_t width)
{
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string padRight(const std::string &s, std::size_t width)
{
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

} // namespace

std::vector<std::string> classNames(const ExperimentConfig &config)
{
    static const char *const fashion[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    std::vector<std::string> names;
    const bool isFashion = config.dataset.name == "fashion-mnist" && config.model.numClasses == 10;
    for (int c = 0; c < config.model.numClasses; ++c)
        names.push_back(isFashion ? fashion[c] : std::to_string(c));
    return names;
}

Evaluation summarizePredictions(const std::vector<float> &logits, const std::vector<std::int64_t> &labels,
                                const std::vector<std::string> &names, int pairs, int mistakes, int perCell)
{
    const auto n = static_cast<std::int64_t>(labels.size());
    const auto classes = static_cast<int>(names.size());
    if (classes < 1 || logits.size() != labels.size() * names.size())
        throw std::invalid_argument("evaluation: " + std::to_string(labels.size()) + " x " + std::to_string(classes)
                                    + " logits expected, got " + std::to_string(logits.size()));
    Evaluation e;
    e.samples = n;
    e.classNames = names;
    e.confusion.assign(static_cast<std::size_t>(classes), std::vector<std::int64_t>(static_cast<std::size_t>(classes), 0));
    std::int64_t top1 = 0, top3 = 0;
    std::vector<int> order(static_cast<std::size_t>(classes));
    for (std::int64_t i = 0; i < n; ++i) {
        const auto label = labels[static_cast<std::size_t>(i)];
        if (label < 0 || label >= classes)
            throw std::invalid_argument("evaluation: label " + std::to_string(label) + " of image " + std::to_string(i)
                                        + " is outside 0.." + std::to_string(classes - 1));
        const float *row = logits.data() + i * classes;
        for (int c = 0; c < classes; ++c)
            order[static_cast<std::size_t>(c)] = c;
        const int k = std::min(3, classes);
        // Ties go to the lower class, as argmax does.
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
        const int predicted = order[0];
        ++e.confusion[static_cast<std::size_t>(label)][static_cast<std::size_t>(predicted)];
        top1 += predicted == label ? 1 : 0;
        top3 += std::find(order.begin(), order.begin() + k, static_cast<int>(label)) != order.begin() + k ? 1 : 0;
        if (predicted != label) {
            double sum = 0.0;
            for (int c = 0; c < classes; ++c)
                sum += std::exp(static_cast<double>(row[c]) - row[predicted]);
            e.mistakes.push_back({i, static_cast<int>(label), predicted, 1.0 / sum, {}});
        }
    }
    e.top1 = n ? static_cast<double>(top1) / static_cast<double>(n) : 0.0;
    e.top3 = n ? static_cast<double>(top3) / static_cast<double>(n) : 0.0;
    for (int c = 0; c < classes; ++c) {
        ClassStats s;
        s.name = names[static_cast<std::size_t>(c)];
        for (int other = 0; other < classes; ++other) {
            s.support += e.confusion[static_cast<std::size_t>(c)][static_cast<std::size_t>(other)];
            s.predicted += e.confusion[static_cast<std::size_t>(other)][static_cast<std::size_t>(c)];
            if (other != c && e.confusion[static_cast<std::size_t>(c)][static_cast<std::size_t>(other)] > 0)
                e.mostConfused.push_back({c, other, e.confusion[static_cast<std::size_t>(c)][static_cast<std::size_t>(other)]});
        }
        s.correct = e.confusion[static_cast<std::size_t>(c)][static_cast<std::size_t>(c)];
        s.recall = s.support ? static_cast<double>(s.correct) / static_cast<double>(s.support) : 0.0;
        s.precision = s.predicted ? static_cast<double>(s.correct) / static_cast<double>(s.predicted) : 0.0;
        e.classes.push_back(s);
    }
    std::stable_sort(e.mostConfused.begin(), e.mostConfused.end(),
                     [](const ConfusedPair &a, const ConfusedPair &b) { return a.count > b.count; });
    if (static_cast<int>(e.mostConfused.size()) > pairs)
        e.mostConfused.resize(static_cast<std::size_t>(std::max(0, pairs)));
    std::stable_sort(e.mistakes.begin(), e.mistakes.end(),
                     [](const Mistake &a, const Mistake &b) { return a.probability > b.probability; });
    std::vector<int> inCell(static_cast<std::size_t>(classes * classes), 0);
    std::vector<Mistake> kept;
    for (std::size_t i = 0; i < e.mistakes.size(); ++i) {
        const Mistake &m = e.mistakes[i];
        int &cell = inCell[static_cast<std::size_t>(m.truth * classes + m.predicted)];
        if (static_cast<int>(i) < mistakes || cell < perCell)
            kept.push_back(m);
        ++cell;
    }
    e.mistakes.swap(kept);
    return e;
}

void attachMistakeImages(Evaluation &e, const std::uint8_t *images, std::int64_t count, int height, int width)
{
    const auto size = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
    for (Mistake &m : e.mistakes) {
        if (m.index < 0 || m.index >= count)
            throw std::out_of_range("evaluation: mistake " + std::to_string(m.index) + " is outside the "
                                    + std::to_string(count) + " test images");
        m.pixels.assign(reinterpret_cast<const char *>(images) + static_cast<std::size_t>(m.index) * size, size);
    }
    e.imageHeight = height;
    e.imageWidth = width;
}

std::string evaluationCheckpoint(const std::string &runDir, const std::string &which)
{
    const std::string best = (fs::path(runDir) / "best.pt").string();
    const std::string last = (fs::path(runDir) / "checkpoint.pt").string();
    std::error_code ec;
    if (which == "best" || which == "last") {
        const std::string path = which == "best" ? best : last;
        if (!fs::is_regular_file(path, ec))
            throw std::runtime_error(path + ": no such checkpoint (the run has not finished an epoch, or the file was removed)");
        return path;
    }
    if (!which.empty())
        throw std::invalid_argument("--checkpoint: best or last, got \"" + which + "\"");
    if (fs::is_regular_file(best, ec))
        return best;
    if (fs::is_regular_file(last, ec))
        return last;
    throw std::runtime_error(runDir + ": no best.pt or checkpoint.pt to evaluate (the run has not finished an epoch)");
}

RunModel loadRunModel(const std::string &runDir, const std::string &which)
{
    RunModel r;
    r.checkpointPath = evaluationCheckpoint(runDir, which);
    r.config = ExperimentConfig::load((fs::path(runDir) / "config.json").string());
    r.model = makeResNet18(r.config.model.inChannels, r.config.model.numClasses);
    r.info = loadEvaluatedWeights(r.checkpointPath, *r.model);
    r.model->eval();
    if (r.config.cpuThreads > 0)
        at::set_num_threads(r.config.cpuThreads);
    return r;
}

Evaluation evaluateRun(const std::string &runDir, const std::string &which)
{
    RunModel run = loadRunModel(runDir, which);
    DataBundle data = loadData(run.config.dataset, run.config.model.numClasses);
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> logits;
    const std::int64_t n = data.test.size(), batch = 256;
    for (std::int64_t i = 0; i < n; i += batch)
        logits.push_back(run.model->forward(toInput(data.test.images.slice(0, i, std::min(n, i + batch)))));
    if (logits.empty())
        throw std::runtime_error(run.config.dataset.path + ": the run's test set is empty");
    const torch::Tensor all = torch::cat(logits).to(torch::kFloat32).contiguous();
    const torch::Tensor labels = data.test.labels.to(torch::kLong).contiguous();
    Evaluation e = summarizePredictions(std::vector<float>(all.data_ptr<float>(), all.data_ptr<float>() + all.numel()),
                                        std::vector<std::int64_t>(labels.data_ptr<std::int64_t>(),
                                                                  labels.data_ptr<std::int64_t>() + labels.numel()),
                                        classNames(run.config));
    const torch::Tensor images = data.test.images.to(torch::kUInt8).contiguous();
    attachMistakeImages(e, images.data_ptr<std::uint8_t>(), images.size(0), static_cast<int>(images.size(1)),
                        static_cast<int>(images.size(2)));
    e.checkpoint = fs::path(run.checkpointPath).filename().string();
    e.epoch = run.info.epoch;
    return e;
}

std::string evaluationJson(const Evaluation &e)
{
    json j;
    j["schema_version"] = 1;
    j["checkpoint"] = e.checkpoint;
    j["epoch"] = e.epoch;
    j["samples"] = e.samples;
    j["top1"] = e.top1;
    j["top3"] = e.top3;
    j["class_names"] = e.classNames;
    j["confusion"] = e.confusion;
    j["classes"] = json::array();
    for (const ClassStats &s : e.classes)
        j["classes"].push_back({{"name", s.name}, {"support", s.support}, {"predicted", s.predicted}, {"correct", s.correct},
                                {"recall", s.recall}, {"precision", s.precision}});
    j["most_confused"] = json::array();
    for (const ConfusedPair &c : e.mostConfused)
        j["most_confused"].push_back({{"true", c.truth}, {"predicted", c.predicted}, {"count", c.count}});
    j["mistakes"] = json::array();
    for (const Mistake &m : e.mistakes) {
        json mistake = {{"index", m.index}, {"true", m.truth}, {"predicted", m.predicted}, {"probability", m.probability}};
        if (!m.pixels.empty())
            mistake["pixels"] = base64Encode(m.pixels);
        j["mistakes"].push_back(mistake);
    }
    if (e.imageHeight > 0) {
        j["image_height"] = e.imageHeight;
        j["image_width"] = e.imageWidth;
    }
    return j.dump(1) + "\n";
}

Evaluation evaluationFromJson(const std::string &text, const std::string &origin)
{
    try {
        const json j = json::parse(text);
        Evaluation e;
        e.checkpoint = j.at("checkpoint").get<std::string>();
        e.epoch = j.at("epoch").get<int>();
        e.samples = j.at("samples").get<std::int64_t>();
        e.top1 = j.at("top1").get<double>();
        e.top3 = j.at("top3").get<double>();
        e.classNames = j.at("class_names").get<std::vector<std::string>>();
        e.confusion = j.at("confusion").get<std::vector<std::vector<std::int64_t>>>();
        const std::size_t classes = e.classNames.size();
        bool square = e.confusion.size() == classes;
        for (const auto &row : e.confusion)
            square = square && row.size() == classes;
        if (!square)
            throw std::runtime_error("confusion: not " + std::to_string(classes) + " x " + std::to_string(classes));
        for (const auto &c : j.at("classes"))
            e.classes.push_back({c.at("name").get<std::string>(), c.at("support").get<std::int64_t>(),
                                 c.at("predicted").get<std::int64_t>(), c.at("correct").get<std::int64_t>(),
                                 c.at("recall").get<double>(), c.at("precision").get<double>()});
        for (const auto &c : j.at("most_confused"))
            e.mostConfused.push_back({c.at("true").get<int>(), c.at("predicted").get<int>(), c.at("count").get<std::int64_t>()});
        e.imageHeight = j.value("image_height", 0);
        e.imageWidth = j.value("image_width", 0);
        if (e.imageHeight < 0 || e.imageWidth < 0 || e.imageHeight > 4096 || e.imageWidth > 4096)
            throw std::runtime_error("image_height, image_width: from 0 to 4096");
        for (const auto &m : j.at("mistakes")) {
            Mistake mistake{m.at("index").get<std::int64_t>(), m.at("true").get<int>(), m.at("predicted").get<int>(),
                            m.at("probability").get<double>(), {}};
            if (mistake.truth < 0 || mistake.predicted < 0 || static_cast<std::size_t>(mistake.truth) >= classes
                || static_cast<std::size_t>(mistake.predicted) >= classes)
                throw std::runtime_error("mistakes: a class outside 0.." + std::to_string(classes - 1));
            if (m.contains("pixels")) {
                const std::optional<std::string> pixels = base64Decode(m.at("pixels").get<std::string>());
                if (!pixels || pixels->size() != static_cast<std::size_t>(e.imageHeight) * static_cast<std::size_t>(e.imageWidth))
                    throw std::runtime_error("mistakes: image of test image " + std::to_string(mistake.index) + " is not "
                                             + std::to_string(e.imageHeight) + " x " + std::to_string(e.imageWidth)
                                             + " bytes of base64");
                mistake.pixels = *pixels;
            }
            e.mistakes.push_back(mistake);
        }
        return e;
    } catch (const json::exception &ex) {
        throw std::runtime_error(origin + ": not an evaluation: " + ex.what());
    } catch (const std::runtime_error &ex) {
        throw std::runtime_error(origin + ": not an evaluation: " + ex.what());
    }
}

std::string formatEvaluation(const Evaluation &e)
{
    std::string out = e.checkpoint + " (epoch " + std::to_string(e.epoch) + "), " + std::to_string(e.samples)
                      + " test images: top-1 " + formatFixed(e.top1, 4) + ", top-3 " + formatFixed(e.top3, 4) + "\n\n";
    std::size_t width = 5;
    for (const auto &name : e.classNames)
        width = std::max(width, name.size());
    out += padRight("class", width) + "  support  accuracy  precision\n";
    for (const ClassStats &s : e.classes)
        out += padRight(s.name, width) + "  " + padLeft(std::to_string(s.support), 7) + "  "
               + padLeft(formatFixed(s.recall, 3), 8) + "  " + padLeft(formatFixed(s.precision, 3), 9) + "\n";
    if (!e.mostConfused.empty()) {
        out += "\nmost confused (true -> predicted):\n";
        for (const ConfusedPair &c : e.mostConfused)
            out += "  " + e.classNames[static_cast<std::size_t>(c.truth)] + " -> "
                   + e.classNames[static_cast<std::size_t>(c.predicted)] + ": " + std::to_string(c.count) + "\n";
    }
    if (!e.mistakes.empty()) {
        out += "\nmost confident mistakes (test image: true -> predicted, probability):\n";
        for (std::size_t i = 0; i < std::min<std::size_t>(5, e.mistakes.size()); ++i) {
            const Mistake &m = e.mistakes[i];
            out += "  #" + std::to_string(m.index) + ": " + e.classNames[static_cast<std::size_t>(m.truth)] + " -> "
                   + e.classNames[static_cast<std::size_t>(m.predicted)] + ", " + formatFixed(m.probability, 3) + "\n";
        }
    }
    out += "\nconfusion matrix (rows: true class, columns: predicted)\n" + std::string(4, ' ');
    for (std::size_t c = 0; c < e.classNames.size(); ++c)
        out += padLeft(std::to_string(c), 6);
    out += "\n";
    for (std::size_t r = 0; r < e.confusion.size(); ++r) {
        out += padLeft(std::to_string(r), 3) + " ";
        for (const auto count : e.confusion[r])
            out += padLeft(std::to_string(count), 6);
        out += "  " + e.classNames[r] + "\n";
    }
    return out;
}

EvaluationDiff diffEvaluations(const Evaluation &here, const Evaluation &there, int pairs)
{
    if (here.classNames != there.classNames)
        throw std::invalid_argument("not the same classes (" + std::to_string(here.classNames.size()) + " and "
                                    + std::to_string(there.classNames.size()) + " classes, or other names)");
    if (here.samples != there.samples)
        throw std::invalid_argument("not the same test set (" + std::to_string(here.samples) + " and "
                                    + std::to_string(there.samples) + " test images)");
    const std::size_t n = here.classNames.size();
    if (here.classes.size() != n || there.classes.size() != n || here.confusion.size() != n || there.confusion.size() != n)
        throw std::invalid_argument("an evaluation without its per-class figures");
    EvaluationDiff d;
    d.samples = here.samples;
    d.top1Here = here.top1;
    d.top1There = there.top1;
    d.classNames = here.classNames;
    for (std::size_t c = 0; c < n; ++c) {
        if (here.classes[c].support != there.classes[c].support)
            throw std::invalid_argument("not the same test set (" + here.classNames[c] + ": "
                                        + std::to_string(here.classes[c].support) + " and "
                                        + std::to_string(there.classes[c].support) + " test images)");
        d.classes.push_back({here.classNames[c], here.classes[c].recall, there.classes[c].recall});
    }
    for (std::size_t t = 0; t < n; ++t) {
        if (here.confusion[t].size() != n || there.confusion[t].size() != n)
            throw std::invalid_argument("an evaluation without its per-class figures");
        for (std::size_t p = 0; p < n; ++p) {
            if (t != p && here.confusion[t][p] != there.confusion[t][p])
                d.pairs.push_back({static_cast<int>(t), static_cast<int>(p), here.confusion[t][p], there.confusion[t][p]});
        }
    }
    const auto change = [](const PairChange &c) { return std::llabs(c.here - c.there); };
    std::stable_sort(d.pairs.begin(), d.pairs.end(), [&](const PairChange &a, const PairChange &b) {
        return change(a) != change(b) ? change(a) > change(b) : std::max(a.here, a.there) > std::max(b.here, b.there);
    });
    if (d.pairs.size() > static_cast<std::size_t>(std::max(0, pairs)))
        d.pairs.resize(static_cast<std::size_t>(std::max(0, pairs)));
    return d;
}

std::string formatEvaluationDiff(const EvaluationDiff &d, const std::string &hereName, const std::string &thereName)
{
    const auto signedFixed = [](double v, int decimals) { return (v >= 0 ? "+" : "") + formatFixed(v, decimals); };
    std::string out = "against " + thereName + ", the same " + std::to_string(d.samples) + " test images: top-1 "
                      + formatFixed(d.top1Here, 4) + " here, " + formatFixed(d.top1There, 4) + " there ("
                      + signedFixed(d.top1Here - d.top1There, 4) + ")\n  here:  " + hereName + "\n  there: " + thereName
                      + "\n\n";
    std::size_t width = 5;
    for (const auto &name : d.classNames)
        width = std::max(width, name.size());
    out += padRight("class", width) + "  accuracy here  there  change\n";
    for (const ClassChange &c : d.classes)
        out += padRight(c.name, width) + "  " + padLeft(formatFixed(c.here, 3), 13) + "  " + padLeft(formatFixed(c.there, 3), 5)
               + "  " + padLeft(signedFixed(c.here - c.there, 3), 6) + "\n";
    if (!d.pairs.empty()) {
        out += "\nconfusions that changed most (true -> predicted: here, there):\n";
        for (const PairChange &p : d.pairs)
            out += "  " + d.classNames[static_cast<std::size_t>(p.truth)] + " -> "
                   + d.classNames[static_cast<std::size_t>(p.predicted)] + ": " + std::to_string(p.here) + ", "
                   + std::to_string(p.there) + " (" + (p.here >= p.there ? "+" : "") + std::to_string(p.here - p.there)
                   + ")\n";
    }
    return out;
}

} // namespace trainlab
