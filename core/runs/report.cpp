#include "core/runs/report.h"

#include "core/util/numtext.h"

#include <cstdio>

namespace trainlab {

namespace {

template<typename... Args>
std::string format(const char *pattern, Args... args)
{
    char buffer[512];
    std::snprintf(buffer, sizeof buffer, pattern, args...);
    return buffer;
}

} // namespace

std::string deviceList(const std::vector<std::string> &devices)
{
    std::string text;
    for (const auto &d : devices)
        text += (text.empty() ? "" : ", ") + d;
    return "[" + text + "]";
}

std::string runStartedLine(const RunInfo &info)
{
    return format("training on %s: %lld train / %lld test images, %lld parameters, %d epochs",
                  deviceList(info.devices).c_str(), static_cast<long long>(info.trainSize),
                  static_cast<long long>(info.testSize), static_cast<long long>(info.parameterCount), info.epochs);
}

std::string epochLine(const EpochMetrics &m, int epochs)
{
    std::string line = format("epoch %d/%d  loss %.3f  train acc %.3f  test acc %.3f  %.1f sec/epoch  %.0f img/s", m.epoch,
                              epochs, m.trainLoss, m.trainAcc, m.testAcc, m.seconds, m.imagesPerSecond);
    // The epoch's mean gradient norm: a rising one warns of divergence before the loss does.
    if (m.gradNorm > 0)
        line += format("  grad norm %.3g", m.gradNorm);
    return line;
}

std::string timeSharesLine(const EpochMetrics &m)
{
    TimeSplit sum;
    for (const TimeSplit &t : m.time)
        sum += t;
    const double total = sum.total();
    if (m.time.empty() || total <= 0)
        return {};
    auto share = [total](double part) { return static_cast<int>(100.0 * part / total + 0.5); };
    return format("time  compute %d%%  allreduce %d%%  optimizer %d%%  data %d%%  other %d%%", share(sum.compute),
                  share(sum.allreduce), share(sum.optimizer), share(sum.data), share(sum.other));
}

std::vector<std::string> finishedLines(const RunResult &r, const std::string &devices)
{
    std::vector<std::string> lines;
    if (!r.epochs.empty()) {
        std::string line = format("test acc: %.2f, %.1f sec/epoch on %s", r.epochs.back().testAcc, r.meanEpochSeconds,
                                  devices.c_str());
        // Epoch 1 carries a run's one-off costs (a GPU's autotuning, without the warm-up): shown apart from the pace.
        if (r.epochs.size() >= 2 && r.epochs.front().epoch == 1) {
            double others = 0.0;
            for (std::size_t i = 1; i < r.epochs.size(); ++i)
                others += r.epochs[i].seconds;
            const EpochMetrics &first = r.epochs.front();
            const std::string warmup = first.warmupSeconds > 0 ? format(" after a %.1f s warm-up", first.warmupSeconds) : "";
            line += format(" (epoch 1 %.1f s%s, the others %.1f)", first.seconds, warmup.c_str(),
                           others / static_cast<double>(r.epochs.size() - 1));
        }
        lines.push_back(line);
    }
    if (r.status == RunStatus::Stopped)
        lines.push_back(format("stopped after %zu completed epochs", r.epochs.size()));
    if (r.status == RunStatus::Failed)
        lines.push_back("run failed: " + r.error);
    if (!r.runDir.empty())
        lines.push_back("run kept in " + r.runDir);
    return lines;
}

std::optional<TargetReached> timeToTarget(const std::vector<EpochMetrics> &epochs, double target)
{
    double seconds = 0.0;
    for (const EpochMetrics &m : epochs) {
        seconds += m.seconds;
        if (m.testAcc >= target)
            return TargetReached{m.epoch, seconds};
    }
    return std::nullopt;
}

std::string recipeText(const ExperimentConfig &c)
{
    std::string text;
    auto add = [&text](const std::string &part) { text += (text.empty() ? "" : ", ") + part; };
    if (c.precision != "fp32")
        add(c.precision);
    if (c.model.init != "d2l")
        add(c.model.init + " init");
    if (c.optimizer == "adamw") {
        const ExperimentConfig d;
        const bool defaults = c.adamBeta1 == d.adamBeta1 && c.adamBeta2 == d.adamBeta2 && c.adamEps == d.adamEps;
        add(defaults ? "adamw" : "adamw β " + formatGeneral(c.adamBeta1) + "/" + formatGeneral(c.adamBeta2)
                                     + (c.adamEps == d.adamEps ? "" : " eps " + formatGeneral(c.adamEps)));
    }
    if (c.momentum > 0)
        add((c.nesterov ? "nesterov " : "momentum ") + formatGeneral(c.momentum));
    if (c.weightDecay > 0)
        add("wd " + formatGeneral(c.weightDecay) + (c.weightDecayNormAndBias ? "" : " (not norm/bias)"));
    if (c.labelSmoothing > 0)
        add("smoothing " + formatGeneral(c.labelSmoothing));
    if (c.gradClipNorm > 0)
        add("clip " + formatGeneral(c.gradClipNorm));
    if (c.emaDecay > 0)
        add("EMA " + formatGeneral(c.emaDecay));
    if (c.schedule.kind == "step")
        add("step ×" + formatGeneral(c.schedule.stepFactor) + "/" + std::to_string(c.schedule.stepEpochs));
    else if (c.schedule.kind != "constant")
        add(c.schedule.kind);
    if (c.schedule.warmupEpochs > 0 && c.schedule.kind != "one_cycle")
        add("lr warm-up " + formatGeneral(c.schedule.warmupEpochs));
    if (c.augmentation.any())
        add(c.augmentation.describe());
    if (c.earlyStopping.patience > 0)
        add("early stop " + std::to_string(c.earlyStopping.patience));
    return text.empty() ? "d2l" : text;
}

std::string formatTimeToTarget(const std::optional<TargetReached> &reached)
{
    if (!reached)
        return "-";
    return formatFixed(reached->seconds, 1) + " s (epoch " + std::to_string(reached->epoch) + ")";
}

} // namespace trainlab
