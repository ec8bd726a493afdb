#include "core/util/jsonread.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace trainlab::detail {

namespace {

constexpr std::size_t kMaxDepth = 64;

// Builds the document as json::parse does, but bounds nesting, reports duplicate keys and keeps numbers as written.
class ConfigSax : public nlohmann::json_sax<json>
{
public:
    bool null() override { return scalar(json(nullptr)); }
    bool boolean(bool value) override { return scalar(json(value)); }
    bool number_integer(number_integer_t value) override { return scalar(json(value)); }
    bool number_unsigned(number_unsigned_t value) override { return scalar(json(value)); }
    bool number_float(number_float_t value, const string_t &written) override
    {
        if (!m_stack.empty() && m_stack.back().value->is_object())
            m_written[childPath()] = written;
        return scalar(json(value));
    }
    bool string(string_t &value) override { return scalar(json(std::move(value))); }
    // JSON text has no binary values.
    bool binary(binary_t &) override { return false; }
    bool start_object(std::size_t) override { return open(json::value_t::object); }
    bool start_array(std::size_t) override { return open(json::value_t::array); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t &name) override
    {
        Frame &frame = m_stack.back();
        frame.key = name;
        if (frame.value->contains(name))
            m_problems.push_back(cut(childPath()) + ": duplicate key");
        return true;
    }

    bool parse_error(std::size_t, const std::string &lastToken, const nlohmann::json::exception &error) override
    {
        if (error.id == 406) {
            m_problems.push_back(label() + "number out of range (beyond \u00b11.8e308), got " + cut(lastToken));
            m_aborted = true;
            return false;
        }
        std::string what = error.what();
        const std::string marker = "; last read: '";
        const std::size_t at = what.find(marker);
        if (at != std::string::npos && what.compare(at + marker.size(), lastToken.size(), lastToken) == 0)
            what.replace(at + marker.size(), lastToken.size(), cut(lastToken));
        m_syntaxError = what;
        return false;
    }

    json &root() { return m_root; }
    const std::string &syntaxError() const { return m_syntaxError; }
    bool aborted() const { return m_aborted; }
    std::vector<std::string> &problems() { return m_problems; }
    const std::map<std::string, std::string> &written() const { return m_written; }

private:
    struct Frame
    {
        json *value;
        std::string path;
        std::string key;
        std::size_t count = 0;
    };

    // The key path of the value about to be read.
    std::string childPath() const
    {
        if (m_stack.empty())
            return {};
        const Frame &frame = m_stack.back();
        if (frame.value->is_object())
            return frame.path.empty() ? frame.key : frame.path + "." + frame.key;
        return frame.path + "[" + std::to_string(frame.count) + "]";
    }

    std::string label() const
    {
        const std::string path = childPath();
        return path.empty() ? std::string() : cut(path) + ": ";
    }

    json *place(json value)
    {
        if (m_stack.empty()) {
            m_root = std::move(value);
            return &m_root;
        }
        Frame &frame = m_stack.back();
        if (frame.value->is_object())
            return &((*frame.value)[frame.key] = std::move(value));
        ++frame.count;
        frame.value->push_back(std::move(value));
        return &frame.value->back();
    }

    bool scalar(json value)
    {
        place(std::move(value));
        return true;
    }

    bool open(json::value_t type)
    {
        if (m_stack.size() >= kMaxDepth) {
            m_problems.push_back(label() + "nested deeper than " + std::to_string(kMaxDepth) + " levels");
            m_aborted = true;
            return false;
        }
        std::string path = childPath();
        json *value = place(json(type));
        m_stack.push_back({value, std::move(path), {}, 0});
        return true;
    }

    bool close()
    {
        m_stack.pop_back();
        return true;
    }

    json m_root;
    std::vector<Frame> m_stack;
    std::vector<std::string> m_problems;
    std::map<std::string, std::string> m_written;
    std::string m_syntaxError;
    bool m_aborted = false;
};

// Bounded, so that a file growing after load() checked its size still cannot exhaust memory.
std::string readConfigFile(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw ConfigError(path + ": cannot open: " + std::strerror(errno));
    std::string text(kMaxFileBytes + 1, '\0');
    in.read(&text[0], static_cast<std::streamsize>(text.size()));
    if (in.bad())
        throw ConfigError(path + ": read error");
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes)
        throw ConfigError(path + ": is larger than 1 MB");
    return text;
}

} // namespace

StrictJson parseStrict(const std::string &text, const std::string &origin)
{
    ConfigSax sax;
    json::sax_parse(text, &sax);
    if (!sax.syntaxError().empty())
        throw ConfigError(origin + ": not valid JSON: " + sax.syntaxError());
    if (sax.aborted())
        throwProblems(origin, sax.problems());
    if (!sax.root().is_object())
        throw ConfigError(origin + ": must be a JSON object, got " + typeName(sax.root()));
    return {std::move(sax.root()), sax.written(), std::move(sax.problems())};
}

void throwProblems(const std::string &origin, const std::vector<std::string> &problems)
{
    if (problems.empty())
        return;
    std::string message = origin + ": ";
    for (std::size_t i = 0; i < problems.size(); ++i)
        message += (i ? "; " : "") + problems[i];
    throw ConfigError(message, problems);
}

std::string readBoundedFile(const std::string &path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (fs::is_directory(status))
        throw ConfigError(path + ": is a directory, not a config file");
    if (fs::exists(status) && !fs::is_regular_file(status))
        throw ConfigError(path + ": not a regular file");
    const std::uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > kMaxFileBytes)
        throw ConfigError(path + ": is larger than 1 MB");
    return readConfigFile(path);
}

} // namespace trainlab::detail
