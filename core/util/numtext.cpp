#include "core/util/numtext.h"

#include <charconv>
#include <cmath>

namespace trainlab {

std::string formatFixed(double value, int decimals)
{
    char text[400];
    const auto r = std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, decimals);
    return r.ec == std::errc() ? std::string(text, r.ptr) : std::string("nan");
}

std::string formatGeneral(double value, int digits)
{
    char text[64];
    const auto r = std::to_chars(text, text + sizeof text, value, std::chars_format::general, digits);
    return r.ec == std::errc() ? std::string(text, r.ptr) : std::string("nan");
}

std::string formatShortest(double value)
{
    char text[64];
    const auto r = std::to_chars(text, text + sizeof text, value);
    return r.ec == std::errc() ? std::string(text, r.ptr) : std::string("nan");
}

bool parseDouble(std::string_view text, double &out)
{
    double value = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !std::isfinite(value))
        return false;
    out = value;
    return true;
}

bool parseInt(std::string_view text, int &out)
{
    int value = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size())
        return false;
    out = value;
    return true;
}

} // namespace trainlab
