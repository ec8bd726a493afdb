#pragma once

#include <string>
#include <vector>

namespace trainlab {

// The run filter of History and `trainlab-cli runs --filter`: a text passes when it holds every word of the query
// (split on white space) somewhere, in any case. Case is folded by Unicode's simple lower case of UTF-8 text,
// whatever the process's locale (a Turkish locale's dotless i would otherwise split "I" from "i").
class WordFilter
{
public:
    explicit WordFilter(const std::string &query = {});

    bool isEmpty() const { return m_words.empty(); }
    const std::vector<std::string> &words() const { return m_words; }   // folded
    bool matches(const std::string &text) const;

    // text with every character lower-cased; bytes that are not UTF-8 are kept as they are.
    static std::string fold(const std::string &text);

private:
    std::vector<std::string> m_words;
};

} // namespace trainlab
