#include "ui/devicestrip.h"

#include <QTest>

#include <cstdlib>

// The window's device strip: the CPU always, each GPU NVML reports, refreshed every second (issue 23).
class tst_DeviceStrip : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void gpusFromNvml();
    void cpuOnlyWithoutNvml();
};

void tst_DeviceStrip::gpusFromNvml()
{
    qputenv("TRAINLAB_NVML_LIBRARY", TRAINLAB_FAKE_NVML);
    trainlab::DeviceStrip strip;
    QVERIFY2(strip.text().startsWith(QStringLiteral("cpu ")), qPrintable(strip.text()));
    QVERIFY2(strip.text().contains(QStringLiteral("gpu0 87% 40.0/150.0 GiB 61 C")), qPrintable(strip.text()));
    QVERIFY2(strip.toolTip().contains(QStringLiteral("gpu1 Fake H200 #1: 3%, 1.0 of 150.0 GiB, 33 C, power n/a")),
             qPrintable(strip.toolTip()));
    // Refreshed by itself: the text is set again within about a second.
    strip.setText(QString());
    QTRY_VERIFY_WITH_TIMEOUT(!strip.text().isEmpty(), 3000);
}

void tst_DeviceStrip::cpuOnlyWithoutNvml()
{
    qputenv("TRAINLAB_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    trainlab::DeviceStrip strip;
    QVERIFY(strip.text().startsWith(QStringLiteral("cpu ")));
    QVERIFY(!strip.text().contains(QStringLiteral("gpu")));
}

QTEST_MAIN(tst_DeviceStrip)
#include "tst_devicestrip.moc"
