#include "ui/runhistoryfilter.h"

#include "ui/runhistorymodel.h"

namespace trainlab {

RunHistoryFilter::RunHistoryFilter(QObject *parent)
    : QSortFilterProxyModel(parent)
{
    setSortRole(RunHistoryModel::SortRole);
    setSortCaseSensitivity(Qt::CaseInsensitive);
    setSortLocaleAware(true);
}

void RunHistoryFilter::setFilterText(const QString &text)
{
    const QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (words == m_words)
        return;
    m_words = words;
    invalidateFilter();
}

bool RunHistoryFilter::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const
{
    if (m_words.isEmpty())
        return true;
    const QAbstractItemModel *model = sourceModel();
    QString row;
    for (int column = 0; column < model->columnCount(sourceParent); ++column)
        row += model->index(sourceRow, column, sourceParent).data().toString() + QLatin1Char('\n');
    for (const QString &word : m_words) {
        if (!row.contains(word, Qt::CaseInsensitive))
            return false;
    }
    return true;
}

bool RunHistoryFilter::lessThan(const QModelIndex &left, const QModelIndex &right) const
{
    const bool noLeft = !left.data(sortRole()).isValid();
    const bool noRight = !right.data(sortRole()).isValid();
    if (noLeft || noRight)
        return noLeft != noRight && (sortOrder() == Qt::AscendingOrder ? noRight : noLeft);
    return QSortFilterProxyModel::lessThan(left, right);
}

} // namespace trainlab
