#pragma once

#include <QSortFilterProxyModel>
#include <QStringList>

namespace trainlab {

// The history table as shown: sorted by RunHistoryModel::SortRole (a run without a value last, in either
// direction), and only the runs whose row contains every
// word of the filter text in some column (case-insensitive): "bf16 failed" keeps the failed bf16 runs.
class RunHistoryFilter : public QSortFilterProxyModel
{
    Q_OBJECT

public:
    explicit RunHistoryFilter(QObject *parent = nullptr);

    void setFilterText(const QString &text);
    QString filterText() const { return m_words.join(QLatin1Char(' ')); }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;
    bool lessThan(const QModelIndex &left, const QModelIndex &right) const override;

private:
    QStringList m_words;
};

} // namespace trainlab
