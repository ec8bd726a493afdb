#include "core/train/launcher.h"

#include <QTest>

#include <map>
#include <stdexcept>

using trainlab::Launch;
using trainlab::LaunchFlags;

namespace {

// "K=V" pairs as the environment, "--flag=V" pairs as the command line.
Launch resolve(const QStringList &env, const QStringList &flags)
{
    std::map<std::string, std::string> vars;
    for (const QString &kv : env)
        vars[kv.section(QLatin1Char('='), 0, 0).toStdString()] = kv.section(QLatin1Char('='), 1).toStdString();
    LaunchFlags f;
    for (const QString &kv : flags) {
        const QString name = kv.section(QLatin1Char('='), 0, 0), value = kv.section(QLatin1Char('='), 1);
        if (name == QLatin1String("--nnodes"))
            f.nnodes = value.toInt();
        else if (name == QLatin1String("--node-rank"))
            f.nodeRank = value.toInt();
        else if (name == QLatin1String("--master-port"))
            f.masterPort = value.toInt();
        else if (name == QLatin1String("--master-addr"))
            f.masterAddr = value.toStdString();
    }
    return trainlab::resolveLaunch(f, [&vars](const char *name) -> const char * {
        const auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    });
}

} // namespace

class tst_Launcher : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void resolves_data();
    void resolves();
    void refused_data();
    void refused();
    void slurmHosts_data();
    void slurmHosts();
    void processDevices_data();
    void processDevices();
    void commandLines();
};

void tst_Launcher::resolves_data()
{
    QTest::addColumn<QStringList>("env");
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QString>("launcher");
    QTest::addColumn<QList<int>>("world");   // nnodes, rank, local rank, processes per node
    QTest::addColumn<QString>("rendezvous");
    QTest::addColumn<bool>("hostStore");
    QTest::newRow("nothing: one node") << QStringList{} << QStringList{} << "none" << QList<int>{1, 0, 0, 1}
                                       << "127.0.0.1:29500" << true;
    QTest::newRow("flags") << QStringList{} << QStringList{"--nnodes=2", "--node-rank=1", "--master-addr=h0", "--master-port=1234"}
                           << "flags" << QList<int>{2, 1, 0, 1} << "h0:1234" << true;
    QTest::newRow("MASTER_* without a launcher") << QStringList{"MASTER_ADDR=m", "MASTER_PORT=4000"} << QStringList{"--nnodes=2"}
                                                 << "flags" << QList<int>{2, 0, 0, 1} << "m:4000" << true;
    QTest::newRow("torchrun, one process per GPU")
        << QStringList{"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29400"}
        << QStringList{} << "torchrun" << QList<int>{4, 3, 1, 2} << "10.0.0.1:29400" << true;
    QTest::newRow("torchrun's agent store")
        << QStringList{"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                       "MASTER_PORT=29500", "TORCHELASTIC_USE_AGENT_STORE=True"}
        << QStringList{} << "torchrun" << QList<int>{2, 0, 0, 2} << "127.0.0.1:29500" << false;
    QTest::newRow("torchrun, flags that agree") << QStringList{"RANK=1", "WORLD_SIZE=2"} << QStringList{"--nnodes=2", "--node-rank=1"}
                                                << "torchrun" << QList<int>{2, 1, 0, 1} << "127.0.0.1:29500" << true;
    QTest::newRow("Slurm, host and port from the job")
        << QStringList{"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4",
                       "SLURM_JOB_NODELIST=gpu[07-08]", "SLURM_JOB_ID=123456"}
        << QStringList{} << "Slurm" << QList<int>{8, 5, 1, 4} << "gpu07:18456" << true;
    QTest::newRow("Slurm, tasks per node as 2(x3), MASTER_* set")
        << QStringList{"SLURM_PROCID=2", "SLURM_NTASKS=6", "SLURM_LOCALID=0", "SLURM_TASKS_PER_NODE=2(x3)",
                       "SLURM_JOB_NODELIST=a,b,c", "MASTER_ADDR=head", "MASTER_PORT=7000"}
        << QStringList{} << "Slurm" << QList<int>{6, 2, 0, 2} << "head:7000" << true;
    QTest::newRow("torchrun wins over Slurm") << QStringList{"RANK=1", "WORLD_SIZE=2", "SLURM_PROCID=0", "SLURM_NTASKS=1"}
                                              << QStringList{} << "torchrun" << QList<int>{2, 1, 0, 1} << "127.0.0.1:29500" << true;
}

void tst_Launcher::resolves()
{
    QFETCH(QStringList, env);
    QFETCH(QStringList, flags);
    QFETCH(QString, launcher);
    QFETCH(QList<int>, world);
    QFETCH(QString, rendezvous);
    QFETCH(bool, hostStore);
    const Launch l = resolve(env, flags);
    QCOMPARE(QString::fromStdString(l.launcher), launcher);
    QCOMPARE((QList<int>{l.node.nnodes, l.node.nodeRank, l.node.localRank, l.node.processesPerNode}), world);
    QCOMPARE(QStringLiteral("%1:%2").arg(QString::fromStdString(l.node.masterAddr)).arg(l.node.masterPort), rendezvous);
    QCOMPARE(l.node.hostStore, hostStore);
    QCOMPARE(l.node.storePrefix.empty(), hostStore);
}

void tst_Launcher::refused_data()
{
    QTest::addColumn<QStringList>("env");
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QString>("message");
    QTest::newRow("flag against WORLD_SIZE") << QStringList{"RANK=0", "WORLD_SIZE=2"} << QStringList{"--nnodes=3"}
                                             << "--nnodes: 3, but torchrun's WORLD_SIZE says 2 (give one, or the same)";
    QTest::newRow("flag against SLURM_PROCID") << QStringList{"SLURM_PROCID=1", "SLURM_NTASKS=2"} << QStringList{"--node-rank=0"}
                                               << "--node-rank: 0, but Slurm's SLURM_PROCID says 1";
    QTest::newRow("RANK outside the world") << QStringList{"RANK=2", "WORLD_SIZE=2"} << QStringList{}
                                            << "RANK: must be below WORLD_SIZE (2), got 2";
    QTest::newRow("flag rank outside") << QStringList{} << QStringList{"--nnodes=2", "--node-rank=2"}
                                       << "--node-rank: must be below --nnodes (2), got 2";
    QTest::newRow("LOCAL_RANK outside") << QStringList{"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"}
                                        << QStringList{} << "LOCAL_RANK: must be below LOCAL_WORLD_SIZE (2), got 2";
    QTest::newRow("WORLD_SIZE not a number") << QStringList{"RANK=0", "WORLD_SIZE=two"} << QStringList{}
                                             << "WORLD_SIZE: must be an integer from 1 to 1048576, got \"two\"";
    QTest::newRow("MASTER_PORT out of range") << QStringList{"MASTER_PORT=70000"} << QStringList{}
                                              << "MASTER_PORT: must be an integer from 1 to 65535, got \"70000\"";
    QTest::newRow("more per node than in the world")
        << QStringList{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_NTASKS_PER_NODE=4"} << QStringList{}
        << "SLURM_NTASKS_PER_NODE: 4 processes per node, but the world has 2";
}

void tst_Launcher::refused()
{
    QFETCH(QStringList, env);
    QFETCH(QStringList, flags);
    QFETCH(QString, message);
    try {
        resolve(env, flags);
        QFAIL("accepted");
    } catch (const std::invalid_argument &e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(message), e.what());
    }
}

void tst_Launcher::slurmHosts_data()
{
    QTest::addColumn<QString>("list");
    QTest::addColumn<QString>("first");
    QTest::newRow("one") << "login1" << "login1";
    QTest::newRow("several") << "a,b,c" << "a";
    QTest::newRow("range") << "gpu[03-05,07],login1" << "gpu03";
    QTest::newRow("list in brackets") << "n[7,9]" << "n7";
    QTest::newRow("suffix") << "node[1-2]-ib" << "node1-ib";
}

void tst_Launcher::slurmHosts()
{
    QFETCH(QString, list);
    QFETCH(QString, first);
    QCOMPARE(QString::fromStdString(trainlab::firstSlurmHost(list.toStdString())), first);
}

void tst_Launcher::processDevices_data()
{
    QTest::addColumn<QStringList>("devices");
    QTest::addColumn<int>("localRank");
    QTest::addColumn<int>("perNode");
    QTest::addColumn<QStringList>("expected");   // empty: refused
    QTest::newRow("one process drives all") << QStringList{"cuda:0", "cuda:1"} << 0 << 1 << QStringList{"cuda:0", "cuda:1"};
    QTest::newRow("one per GPU") << QStringList{"cuda:0", "cuda:1"} << 1 << 2 << QStringList{"cuda:1"};
    QTest::newRow("cpu for each") << QStringList{"cpu"} << 1 << 2 << QStringList{"cpu"};
    QTest::newRow("too few for the processes") << QStringList{"cuda:0", "cuda:1"} << 0 << 4 << QStringList{};
    QTest::newRow("one GPU shared") << QStringList{"cuda:0"} << 1 << 2 << QStringList{};
}

void tst_Launcher::processDevices()
{
    QFETCH(QStringList, devices);
    QFETCH(int, localRank);
    QFETCH(int, perNode);
    QFETCH(QStringList, expected);
    std::vector<std::string> list;
    for (const QString &d : devices)
        list.push_back(d.toStdString());
    trainlab::NodeOptions node;
    node.localRank = localRank;
    node.processesPerNode = perNode;
    try {
        QStringList got;
        for (const auto &d : trainlab::processDevices(list, node))
            got << QString::fromStdString(d);
        QVERIFY2(!expected.isEmpty(), "accepted");
        QCOMPARE(got, expected);
    } catch (const std::invalid_argument &e) {
        QVERIFY2(expected.isEmpty(), e.what());
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(QStringLiteral("devices: with %1 processes per node").arg(perNode)), e.what());
    }
}

void tst_Launcher::commandLines()
{
    QCOMPARE(QString::fromStdString(trainlab::torchrunCommand("exp.json", 1, 2)),
             QStringLiteral("torchrun --nnodes 1 --nproc_per_node 2 --standalone --no_python trainlab-cli run exp.json"));
    QVERIFY(QString::fromStdString(trainlab::slurmScript("exp.json", 2, 4)).contains(QLatin1String("#SBATCH --ntasks-per-node=4\n")));
}

QTEST_APPLESS_MAIN(tst_Launcher)
#include "tst_launcher.moc"
