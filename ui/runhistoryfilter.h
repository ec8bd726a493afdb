#pragma once

#include "core/util/wordfilter.h"

#include <QSortFilterProxyModel>

namespace trainlab {

// The history table as shown: sorted by RunHistoryModel::SortRole (a run without a value last, in either
// direction), and only the runs whose row holds every word of the filter text in some column, in any case
// (core's WordFilter, as `trainlab-cli runs --filter`): "bf16 failed" keeps the failed bf16 runs.
class RunHistoryFilter : public QSortFilterProxyModel
{
    Q_OBJECT

public:
    explicit RunHistoryFilter(QObject *parent = nullptr);

    void setFilterText(const QString &text);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;
    bool lessThan(const QModelIndex &left, const QModelIndex &right) const override;

private:
    WordFilter m_words;
};

} // namespace trainlab
