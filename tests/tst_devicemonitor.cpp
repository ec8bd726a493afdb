#include "core/monitor/devicemonitor.h"

#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <unistd.h>

using trainlab::DeviceReading;

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
};

void tst_DeviceMonitor::init()
{
    ::setenv("TRAINLAB_NVML_LIBRARY", TRAINLAB_FAKE_NVML, 1);
    ::unsetenv("FAKE_NVML_GONE");
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
    ::setenv("FAKE_NVML_GONE", flag.c_str(), 1);
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
    ::setenv("TRAINLAB_NVML_LIBRARY", library.toUtf8().constData(), 1);
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
    // One core kept busy for 400 ms: this process's CPU share of all cores is about 100 / cores.
    std::atomic<bool> stop{false};
    std::thread burner([&stop] {
        volatile double x = 0;
        while (!stop.load())
            x = x + 1.0;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    stop = true;
    burner.join();
    const DeviceReading r = cpu.read();
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    QVERIFY(r.utilization);
    QVERIFY2(*r.utilization > 40.0 / static_cast<double>(cores) && *r.utilization <= 100.0 * 1.05,
             std::to_string(*r.utilization).c_str());
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

QTEST_GUILESS_MAIN(tst_DeviceMonitor)
#include "tst_devicemonitor.moc"
