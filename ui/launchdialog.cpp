#include "ui/launchdialog.h"

#include "core/train/launcher.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace trainlab {

namespace {

int processesPerNode(const ExperimentConfig &config)
{
    // GPUs: one process each, as torchrun is usually run; CPU replicas stay in one process per node.
    for (const auto &d : config.devices) {
        if (d.rfind("cuda:", 0) != 0)
            return 1;
    }
    return static_cast<int>(config.devices.size());
}

QPlainTextEdit *commandBox(const char *name)
{
    auto *box = new QPlainTextEdit;
    box->setObjectName(QString::fromLatin1(name));
    box->setReadOnly(true);
    box->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    return box;
}

} // namespace

LaunchDialog::LaunchDialog(const ExperimentConfig &config, const QString &configPath, QWidget *parent)
    : QDialog(parent)
    , m_config(config)
    , m_path(configPath)
    , m_nodes(new QSpinBox)
    , m_layout(new QLabel)
    , m_torchrun(commandBox("torchrunCommand"))
    , m_slurm(commandBox("slurmScript"))
{
    setWindowTitle(tr("Launch on a Cluster"));
    m_nodes->setObjectName(QStringLiteral("nodes"));
    m_nodes->setRange(1, 1024);
    m_layout->setWordWrap(true);
    // One command: wrapped, a few lines high; the script keeps its lines.
    m_torchrun->setMaximumHeight(m_torchrun->fontMetrics().lineSpacing() * 4 + 12);
    m_slurm->setLineWrapMode(QPlainTextEdit::NoWrap);
    auto *note = new QLabel(m_path.isEmpty()
                                ? tr("Save the experiment to a file first (File > Save As…): the commands name it, and every "
                                     "machine needs the same file.")
                                : tr("Every machine needs %1 at the same path, and the dataset.").arg(m_path));
    note->setWordWrap(true);
    auto copyButton = [this](QPlainTextEdit *box, const QString &what) {
        auto *button = new QPushButton(tr("Copy %1").arg(what));
        connect(button, &QPushButton::clicked, this, [box] { QApplication::clipboard()->setText(box->toPlainText()); });
        return button;
    };
    auto *form = new QFormLayout;
    form->addRow(tr("&Machines (nodes):"), m_nodes);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_layout);
    layout->addWidget(new QLabel(tr("torchrun, on each machine (torchrun sets RANK, WORLD_SIZE, LOCAL_RANK and the rendezvous):")));
    layout->addWidget(m_torchrun);
    layout->addWidget(copyButton(m_torchrun, tr("torchrun Command")), 0, Qt::AlignRight);
    layout->addWidget(new QLabel(tr("Slurm: save as job.sh and submit with sbatch job.sh (srun sets SLURM_PROCID and the others):")));
    layout->addWidget(m_slurm);
    layout->addWidget(copyButton(m_slurm, tr("sbatch Script")), 0, Qt::AlignRight);
    layout->addWidget(note);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    connect(m_nodes, &QSpinBox::valueChanged, this, &LaunchDialog::update);
    resize(720, 520);
    update();
}

QString LaunchDialog::torchrunText() const
{
    return m_torchrun->toPlainText();
}

QString LaunchDialog::slurmText() const
{
    return m_slurm->toPlainText();
}

void LaunchDialog::update()
{
    const int perNode = processesPerNode(m_config);
    const int nodes = m_nodes->value();
    const std::string path = m_path.isEmpty() ? std::string("EXPERIMENT.json") : m_path.toStdString();
    const auto devices = m_config.devices.size();
    if (perNode > 1)
        m_layout->setText(tr("%1 processes per machine, one per GPU of the experiment (%2 in all); the global batch of %3 "
                             "is split across them.")
                              .arg(perNode).arg(perNode * nodes).arg(m_config.batchSize));
    else if (devices == 1)
        m_layout->setText(tr("One process per machine driving the experiment's device (%1 in all); the global batch of %2 "
                             "is split across them.")
                              .arg(nodes).arg(m_config.batchSize));
    else
        m_layout->setText(tr("One process per machine driving the experiment's %1 devices (%2 in all); the global batch "
                             "of %3 is split across them.")
                              .arg(devices).arg(devices * static_cast<std::size_t>(nodes)).arg(m_config.batchSize));
    if (nodes > 1)
        m_layout->setText(m_layout->text() + tr(" HOST0: the first machine's name or address."));
    m_torchrun->setPlainText(QString::fromStdString(torchrunCommand(path, nodes, perNode)));
    m_slurm->setPlainText(QString::fromStdString(slurmScript(path, nodes, perNode, perNode > 1)));
}

} // namespace trainlab
