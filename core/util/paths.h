#pragma once

#include <string>

namespace trainlab {

// Folder holding presets/ and sample/: $TRAINLAB_RESOURCES, beside the installed binary, or the source tree.
std::string resourcesDir();
// "" when resourcesDir() holds presets/, else a message naming the folder (and TRAINLAB_RESOURCES when set).
std::string resourcesProblem();
// $XDG_DATA_HOME when absolute, else ~/.local/share with ~ from HOME or the account; throws when neither is known.
std::string dataHome();
std::string defaultRunsDir();
std::string executablePath();

} // namespace trainlab
