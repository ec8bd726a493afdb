#pragma once

#include <string>

namespace trainlab {

// Crash-safety tests set TRAINLAB_TEST_PAUSE=point[#N] to freeze the process at the Nth time it reaches
// point (it prints "TRAINLAB_PAUSED point" to stderr, then sleeps until killed). Unset: a no-op.
// Points: folder-created, step, evaluate, epoch-end, write:<file name> (written, not yet renamed).
void testPause(const std::string &point);

} // namespace trainlab
