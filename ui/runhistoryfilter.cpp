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
    WordFilter words(text.toStdString());
    if (words.words() == m_words.words())
        return;
    m_words = std::move(words);
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
    row += model->index(sourceRow, RunHistoryModel::Notes, sourceParent).data(RunHistoryModel::NotesRole).toString();
    return m_words.matches(row.toStdString());
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
