#pragma once

#include <string>
#include <string_view>

// Numbers in the files TrainLab writes and reads: always '.' as the decimal point, whatever the
// process's locale (a Qt program runs under the user's LC_NUMERIC, where printf may write "0,5").
namespace trainlab {

// value with exactly `decimals` digits after the point ("0.250000"); "nan"/"inf" as to_chars spells them.
std::string formatFixed(double value, int decimals);
// As printf's %g with `digits` significant digits ("0.1", "1e-05", "0.3" for 0.30000000000000004).
std::string formatGeneral(double value, int digits = 6);
// The shortest text that reads back as the same double ("0.1", "1e-05").
std::string formatShortest(double value);
// The whole of text as a finite double / an int; false on anything else (a comma, spaces, overflow, nan).
bool parseDouble(std::string_view text, double &out);
bool parseInt(std::string_view text, int &out);

} // namespace trainlab
