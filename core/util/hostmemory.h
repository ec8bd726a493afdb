#pragma once

namespace trainlab {

// Keeps LibTorch's large CPU buffers (activations of tens of MB) in the malloc heap instead of a fresh
// mmap per allocation, whose page faults cost a third of a CPU step here. Process-wide; idempotent.
void keepLargeBuffersInHeap();
// Returns the heap's free memory (every thread's arena) to the system: a finished run's activations.
void releaseFreeHeap();

} // namespace trainlab
