#include "core/monitor/devicemonitor.h"
#include "core/monitor/devicesampler.h"
#include "core/runs/runrecord.h"

#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

using trainlab::DeviceReading;

namespace {

// This process's CPU time (user and system, all threads), in seconds.
double processCpuSeconds()
{
    rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// Keeps one core of this process busy for `span`.
void busyOneCore(std::chrono::milliseconds span)
{
    std::atomic<bool> stop{false};
    std::thread burner([&stop] {
        volatile double x = 0;
        while (!stop.load())
            x = x + 1.0;
    });
    std::this_thread::sleep_for(span);
    stop = true;
    burner.join();
}

} // namespace

// Issue 23: the device monitor against a scripted NVML, without one, and the CPU row against /proc.
class tst_DeviceMonitor : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void fakeNvmlReadings();
    void unsupportedFieldIsNa();
    void deviceThatDisappears();
    void noLibrary_data();
    void noLibrary();
    void cpuRowAgainstProc();
    void cpuCountsFromConstruction();
    void epochMeansAndPeaks();
    void gpusNamedByCudaOrdinal_data();
    void gpusNamedByCudaOrdinal();
    void devicesCsvPerEpoch();
};

void tst_DeviceMonitor::init()
{
    qputenv("TRAINLAB_NVML_LIBRARY", TRAINLAB_FAKE_NVML);
    qunsetenv("FAKE_NVML_GONE");
}

void tst_DeviceMonitor::fakeNvmlReadings()
{
    std::string why;
    const auto nvml = trainlab::Nvml::load(&why);
    QVERIFY2(nvml, why.c_str());
    QCOMPARE(nvml->count(), 2);
    const DeviceReading r = nvml->read(0);
    QCOMPARE(r.id, std::string("gpu0"));
    QCOMPARE(r.name, std::string("Fake H200 #0"));
    QCOMPARE(r.busId, std::string("00000000:18:00.0"));
    QCOMPARE(*r.utilization, 87.0);
    QCOMPARE(*r.memoryUsed, std::uint64_t(40) << 30);
    QCOMPARE(*r.memoryTotal, std::uint64_t(150) << 30);
    QCOMPARE(*r.temperature, 61.0);
    QCOMPARE(*r.power, 420.0);
    QCOMPARE(*r.powerLimit, 700.0);
    QCOMPARE(trainlab::formatReading(r), std::string("gpu0 Fake H200 #0: 87%, 40.0 of 150.0 GiB, 61 C, 420 of 700 W"));
    trainlab::DeviceMonitor monitor;
    QVERIFY(monitor.hasGpus());
    const auto rows = monitor.read();
    QCOMPARE(rows.size(), std::size_t(3));
    QCOMPARE(rows[0].id, std::string("cpu"));
}

void tst_DeviceMonitor::unsupportedFieldIsNa()
{
    const auto nvml = trainlab::Nvml::load();
    QVERIFY(nvml);
    const DeviceReading r = nvml->read(1);
    QVERIFY(!r.lost);
    QVERIFY(!r.power && !r.powerLimit);
    QCOMPARE(*r.temperature, 33.0);
    QCOMPARE(trainlab::formatReading(r), std::string("gpu1 Fake H200 #1: 3%, 1.0 of 150.0 GiB, 33 C, power n/a"));
}

void tst_DeviceMonitor::deviceThatDisappears()
{
    QTemporaryDir dir;
    const std::string flag = dir.filePath(QStringLiteral("gone")).toStdString();
    qputenv("FAKE_NVML_GONE", flag.c_str());
    trainlab::DeviceMonitor monitor;
    QVERIFY(!monitor.read()[2].lost);
    std::ofstream(flag) << "x";
    const auto rows = monitor.read();
    QCOMPARE(rows.size(), std::size_t(3));
    QVERIFY(rows[2].lost);
    QCOMPARE(trainlab::formatReading(rows[2]), std::string("gpu1: lost (not answering)"));
    QVERIFY(!rows[1].lost);   // the other keeps reporting
}

void tst_DeviceMonitor::noLibrary_data()
{
    QTest::addColumn<QString>("library");
    QTest::addColumn<QString>("expected");
    QTest::newRow("no such file") << "/nonexistent/libnvidia-ml.so.1" << "/nonexistent/libnvidia-ml.so.1: ";
    QTest::newRow("not NVML") << "libz.so.1" << "not NVIDIA's management library";
}

// A machine without the driver: no GPU rows, the CPU row as always, and the reason for a log line.
void tst_DeviceMonitor::noLibrary()
{
    QFETCH(QString, library);
    QFETCH(QString, expected);
    qputenv("TRAINLAB_NVML_LIBRARY", library.toUtf8().constData());
    std::string why;
    QVERIFY(!trainlab::Nvml::load(&why));
    QVERIFY2(why.find(expected.toStdString()) != std::string::npos, why.c_str());
    trainlab::DeviceMonitor monitor;
    QVERIFY(!monitor.hasGpus());
    const auto rows = monitor.read();
    QCOMPARE(rows.size(), std::size_t(1));
    QCOMPARE(rows[0].id, std::string("cpu"));
}

void tst_DeviceMonitor::cpuRowAgainstProc()
{
    trainlab::CpuMonitor cpu;
    // The first reading, at once: this process's share since it started, not "n/a" (the status bar's first second).
    const DeviceReading first = cpu.read();
    QVERIFY(first.utilization);
    QVERIFY2(*first.utilization >= 0.0 && *first.utilization <= 100.0 * 1.05, std::to_string(*first.utilization).c_str());
    // One core kept busy for 400 ms: the share is the CPU time this process got (getrusage) over the wall time and
    // the cores, however loaded the machine (the burner may get less than a whole core).
    const auto wallStart = std::chrono::steady_clock::now();
    const double cpuStart = processCpuSeconds();
    busyOneCore(std::chrono::milliseconds(400));
    const double cpuSpent = processCpuSeconds() - cpuStart;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    const DeviceReading r = cpu.read();
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    const double expected = 100.0 * cpuSpent / wall / static_cast<double>(cores);
    QVERIFY(r.utilization);
    QVERIFY2(expected > 5.0, std::to_string(expected).c_str());
    // /proc counts in 10 ms ticks: 400 ms is read to within about 2.5 % of a core.
    QVERIFY2(std::abs(*r.utilization - expected) < 5.0 && *r.utilization <= 100.0 * 1.05,
             (std::to_string(*r.utilization) + " vs " + std::to_string(expected)).c_str());
    // Resident memory as /proc/self/status says it (VmRSS, in kB), within 10 %.
    std::ifstream status("/proc/self/status");
    std::string line;
    std::uint64_t vmRss = 0;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0)
            vmRss = std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
    }
    QVERIFY(r.memoryUsed && vmRss > 0);
    QVERIFY2(std::abs(static_cast<double>(*r.memoryUsed) - static_cast<double>(vmRss)) < 0.1 * static_cast<double>(vmRss),
             (std::to_string(*r.memoryUsed) + " vs " + std::to_string(vmRss)).c_str());
    QVERIFY(trainlab::formatReading(r).rfind("cpu: ", 0) == 0);
}

void tst_DeviceMonitor::cpuCountsFromConstruction()
{
    busyOneCore(std::chrono::milliseconds(300));
    // Both made after the busy spell, then 300 ms idle: only the process-start one counts the spell.
    trainlab::CpuMonitor fromStart(trainlab::CpuSince::ProcessStart);
    trainlab::CpuMonitor fromNow(trainlab::CpuSince::Construction);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const DeviceReading all = fromStart.read(), recent = fromNow.read();
    QVERIFY(all.utilization && recent.utilization);
    QVERIFY2(*recent.utilization < 10.0, std::to_string(*recent.utilization).c_str());
    QVERIFY2(*all.utilization > *recent.utilization + 1.0,
             (std::to_string(*all.utilization) + " vs " + std::to_string(*recent.utilization)).c_str());
}

void tst_DeviceMonitor::epochMeansAndPeaks()
{
    trainlab::DeviceEpochMeter meter;
    DeviceReading cpu, gpu;
    cpu.id = "cpu";
    cpu.utilization = 100.0;
    cpu.memoryUsed = std::uint64_t(1) << 30;
    gpu.id = "gpu0";
    gpu.name = "G";
    gpu.utilization = 90.0;
    gpu.memoryUsed = std::uint64_t(3) << 30;
    gpu.memoryTotal = std::uint64_t(8) << 30;
    gpu.temperature = 60.0;
    meter.add({cpu, gpu});
    cpu.utilization = 200.0;
    cpu.memoryUsed = std::uint64_t(2) << 30;
    gpu.utilization.reset();                    // a reading without the field: left out of the mean
    gpu.memoryUsed = std::uint64_t(1) << 30;    // the peak stays
    gpu.temperature = 70.0;
    gpu.lost = true;
    meter.add({cpu, gpu});
    const auto epoch = meter.take();
    QCOMPARE(epoch.size(), std::size_t(2));
    QCOMPARE(epoch[0].id, std::string("cpu"));
    QCOMPARE(*epoch[0].meanUtilization, 150.0);
    QCOMPARE(*epoch[0].peakMemory, std::uint64_t(2) << 30);
    QCOMPARE(epoch[1].samples, 2);
    QCOMPARE(*epoch[1].meanUtilization, 90.0);
    QCOMPARE(*epoch[1].peakMemory, std::uint64_t(3) << 30);
    QCOMPARE(*epoch[1].peakTemperature, 70.0);
    QVERIFY(!epoch[1].meanPower);
    QVERIFY(epoch[1].lost);
    QCOMPARE(trainlab::formatEpochStats(epoch[1]), std::string("gpu0 G: mean 90%, peak 3.0 of 8.0 GiB, 70 C, lost during the epoch"));
    trainlab::DeviceEpochStats remote = epoch[0];
    remote.name = "2 cores";
    remote.id = "node1:cpu";   // another machine's CPU row, as a multi-node run names it
    QCOMPARE(trainlab::formatEpochStats(remote), std::string("node1:cpu: mean 150% of 2 cores, peak 2.0 GiB resident"));
    QVERIFY(meter.take().empty());   // the next epoch starts afresh
}

void tst_DeviceMonitor::gpusNamedByCudaOrdinal_data()
{
    // The fake's boards: gpu0 on bus 0x18, gpu1 on bus 0x19. Each row: CUDA's bus ids by ordinal.
    QTest::addColumn<QStringList>("cuda");
    QTest::addColumn<QString>("gpu0");
    QTest::addColumn<QString>("gpu1");
    QTest::newRow("same order") << QStringList{"00000000:18:00.0", "00000000:19:00.0"} << "cuda:0" << "cuda:1";
    QTest::newRow("fastest first, reversed") << QStringList{"0000:19:00.0", "0000:18:00.0"} << "cuda:1" << "cuda:0";
    QTest::newRow("CUDA_VISIBLE_DEVICES=1") << QStringList{"00000000:19:00.0"} << "" << "cuda:0";
    QTest::newRow("a board NVML does not list") << QStringList{"00000000:1a:00.0", "0000:19:00.0"} << "" << "cuda:1";
    QTest::newRow("CPU build") << QStringList{} << "" << "";
    QTest::newRow("not a bus id") << QStringList{"GPU-8a5c"} << "" << "";
}

void tst_DeviceMonitor::gpusNamedByCudaOrdinal()
{
    QFETCH(QStringList, cuda);
    QFETCH(QString, gpu0);
    QFETCH(QString, gpu1);
    std::vector<std::string> ids;
    for (const QString &id : cuda)
        ids.push_back(id.toStdString());
    trainlab::DeviceMonitor monitor;
    monitor.setCudaBusIds(ids);
    const auto rows = monitor.read();
    QCOMPARE(rows.size(), std::size_t(3));
    QVERIFY(rows[0].cudaId.empty());   // the CPU
    QCOMPARE(QString::fromStdString(rows[1].cudaId), gpu0);
    QCOMPARE(QString::fromStdString(rows[2].cudaId), gpu1);
    if (!gpu0.isEmpty())
        QVERIFY(trainlab::formatReading(rows[1]).rfind("gpu0 (" + gpu0.toStdString() + ") Fake H200 #0: ", 0) == 0);
}

// devices.csv gains each epoch's rows as the record commits it; a resume keeps the rows of the epochs kept.
void tst_DeviceMonitor::devicesCsvPerEpoch()
{
    QTemporaryDir dir;
    trainlab::ExperimentConfig config;
    config.name = "sampled";
    config.checkpoints = "none";
    std::string runDir;
    {
        trainlab::RunRecord record(dir.path().toStdString(), config, {"cpu"});
        runDir = record.dir();
        record.startDeviceSampling();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));   // a CPU share needs more than 10 ms to measure
        record.commitEpoch({1, 2.0, 0.1, 0.2, 1.0, 10.0, {}, 0.1, {}}, {});
        QCOMPARE(record.lastDevices().size(), std::size_t(3));   // the CPU and the fake's two GPUs
        record.commitEpoch({2, 1.0, 0.3, 0.4, 1.0, 10.0, {}, 0.1, {}}, {});
    }
    auto rows = trainlab::readDeviceEpochs(runDir);
    QCOMPARE(rows.size(), std::size_t(6));
    QCOMPARE(rows[1].epoch, 1);
    QCOMPARE(rows[1].stats.name, std::string("Fake H200 #0"));
    QCOMPARE(*rows[1].stats.memoryTotal, std::uint64_t(150) << 30);
    QCOMPARE(*rows[1].stats.meanPower, 420.0);
    QVERIFY(rows[0].stats.meanUtilization.has_value());
    {
        auto record = trainlab::RunRecord::reopen(runDir, config, {{1, 2.0, 0.1, 0.2, 1.0, 10.0, {}, 0.1, {}}}, 1);
        record->startDeviceSampling();
        record->commitEpoch({2, 0.9, 0.3, 0.5, 1.0, 10.0, {}, 0.1, {}}, {});
    }
    rows = trainlab::readDeviceEpochs(runDir);
    QCOMPARE(rows.size(), std::size_t(6));   // epoch 1's rows kept, epoch 2's written again, not twice
    QCOMPARE(rows[3].epoch, 2);
    QCOMPARE(rows[5].epoch, 2);
    // A run recorded before devices.csv, or a damaged row, reads as no rows rather than failing.
    QVERIFY(trainlab::readDeviceEpochs(dir.path().toStdString() + "/none").empty());
    QCOMPARE(trainlab::parseDeviceEpochs(std::string(trainlab::RunRecord::devicesHeader())
                                         + "\n1,cpu,,x,2,50.0,,,,,0\n1,gpu0,cuda:0,y,two,,,,,,0\n").size(),
             std::size_t(1));
}

QTEST_GUILESS_MAIN(tst_DeviceMonitor)
#include "tst_devicemonitor.moc"
