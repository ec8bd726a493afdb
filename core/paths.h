#pragma once

#include <string>

namespace trainlab {

// Folder holding presets/ and sample/: $TRAINLAB_RESOURCES, beside the installed binary, or the source tree.
std::string resourcesDir();
std::string defaultRunsDir();
std::string executablePath();

} // namespace trainlab
