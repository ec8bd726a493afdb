#pragma once

#include "core/config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// Strict JSON reading shared by the experiment and sweep files: key paths in every message, no wrap-around.
namespace trainlab::detail {

using nlohmann::json;

constexpr std::uintmax_t kMaxFileBytes = 1 << 20;

// Long values are cut so that a hostile file cannot flood the message.
inline std::string cut(const std::string &text)
{
    constexpr std::size_t kMax = 80;
    if (text.size() <= kMax)
        return text;
    std::size_t end = kMax;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
        --end;
    return text.substr(0, end) + "\u2026";
}

inline std::string quote(const std::string &text)
{
    return "\"" + cut(text) + "\"";
}

inline std::string describe(const json &value)
{
    return cut(value.dump());
}

inline std::string typeName(const json &value)
{
    if (value.is_number_integer())
        return "an integer";
    if (value.is_number())
        return "a number";
    const std::string name = value.type_name();
    return (name == "array" || name == "object" ? "an " : "a ") + name;
}

inline std::string rangeText(std::int64_t min, std::int64_t max)
{
    if (min == max)
        return "must be " + std::to_string(min);
    return "must be an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

// Whether an integral JSON number fits T, without the wrap-around of get<T>().
template<typename T>
bool fitsInto(const json &value, T &out)
{
    using Limits = std::numeric_limits<T>;
    if (value.is_number_unsigned()) {
        const auto u = value.get<std::uint64_t>();
        if constexpr (Limits::digits < 64) {
            if (u > static_cast<std::uint64_t>(Limits::max()))
                return false;
        }
        out = static_cast<T>(u);
        return true;
    }
    if (value.is_number_integer()) {
        const auto s = value.get<std::int64_t>();
        if (s >= 0)
            return fitsInto(json(static_cast<std::uint64_t>(s)), out);
        if constexpr (Limits::is_signed) {
            if constexpr (Limits::digits < 63) {
                if (s < static_cast<std::int64_t>(Limits::min()))
                    return false;
            }
            out = static_cast<T>(s);
            return true;
        }
        return false;
    }
    // T holds exactly [-2^digits, 2^digits) (signed) or [0, 2^digits), and 2^digits is exact in a double.
    const double d = value.get<double>();
    const double upper = std::ldexp(1.0, Limits::digits);
    if (!(d >= (Limits::is_signed ? -upper : 0.0) && d < upper))
        return false;
    out = static_cast<T>(d);
    return true;
}

// Reads one object's keys, recording every unknown key or wrong type.
class Reader
{
public:
    Reader(const json &object, std::string prefix, std::vector<std::string> &problems,
           const std::map<std::string, std::string> &written)
        : m_object(object), m_prefix(std::move(prefix)), m_problems(problems), m_written(written)
    {}

    void checkUnknown(const std::set<std::string> &known) const
    {
        for (const auto &item : m_object.items()) {
            if (!known.count(item.key()))
                m_problems.push_back(cut(path(item.key())) + ": unknown key");
        }
    }

    // A value outside T is refused here, naming the field's range; one inside T but outside it is left to validate().
    template<typename T>
    void integer(const char *key, T &out, std::int64_t min, std::int64_t max) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (!value->is_number()
            || (value->is_number_float() && std::floor(value->get<double>()) != value->get<double>())) {
            wrongType(key, "an integer", *value);
            return;
        }
        if (!fitsInto(*value, out))
            m_problems.push_back(path(key) + ": " + rangeText(min, max) + ", got " + shown(key, *value));
    }

    void number(const char *key, double &out) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (value->is_number())
            out = value->get<double>();
        else
            wrongType(key, "a number", *value);
    }

    void string(const char *key, std::string &out) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (value->is_string())
            out = value->get<std::string>();
        else
            wrongType(key, "a string", *value);
    }

    void boolean(const char *key, bool &out) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (value->is_boolean())
            out = value->get<bool>();
        else
            wrongType(key, "true or false", *value);
    }

    void strings(const char *key, std::vector<std::string> &out) const
    {
        const json *value = find(key);
        if (!value)
            return;
        if (!value->is_array()) {
            wrongType(key, "an array of strings", *value);
            return;
        }
        std::vector<std::string> result;
        for (std::size_t i = 0; i < value->size(); ++i) {
            const json &element = (*value)[i];
            if (element.is_string())
                result.push_back(element.get<std::string>());
            else
                m_problems.push_back(path(key) + "[" + std::to_string(i) + "]: must be a string, got "
                                     + describe(element));
        }
        out = result;
    }

    const json *object(const char *key) const
    {
        const json *value = find(key);
        if (value && !value->is_object()) {
            wrongType(key, "an object", *value);
            return nullptr;
        }
        return value;
    }

    std::string path(const std::string &key) const { return m_prefix.empty() ? key : m_prefix + "." + key; }

private:
    const json *find(const char *key) const
    {
        auto it = m_object.find(key);
        return it == m_object.end() ? nullptr : &*it;
    }

    std::string shown(const char *key, const json &value) const
    {
        const auto it = m_written.find(path(key));
        return it == m_written.end() ? describe(value) : cut(it->second);
    }

    void wrongType(const char *key, const char *expected, const json &value) const
    {
        m_problems.push_back(path(key) + ": must be " + expected + ", got " + typeName(value) + " "
                             + shown(key, value));
    }

    const json &m_object;
    std::string m_prefix;
    std::vector<std::string> &m_problems;
    const std::map<std::string, std::string> &m_written;
};

template<typename T>
std::string str(T value)
{
    std::ostringstream out;
    out << value;
    return out.str();
}

struct StrictJson
{
    json root;                                   // an object
    std::map<std::string, std::string> written;  // key path -> a float as the file spelled it
    std::vector<std::string> problems;           // duplicate keys so far
};

// Parses text bounding nesting and reporting duplicate keys; throws ConfigError (naming origin) on a syntax
// error or when the document is not an object.
StrictJson parseStrict(const std::string &text, const std::string &origin);

// Throws ConfigError, naming `origin: problem; problem`, when problems is not empty.
void throwProblems(const std::string &origin, const std::vector<std::string> &problems);

// A regular file of at most 1 MB, checked before it is opened (a FIFO blocks, /dev/zero never ends).
std::string readBoundedFile(const std::string &path);

} // namespace trainlab::detail
