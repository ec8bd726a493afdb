#pragma once

#include <torch/optim/sgd.h>

namespace trainlab {

// torch::optim::SGD's step (weight decay, momentum, dampening, Nesterov) as a handful of multi-tensor
// `_foreach_` kernels over all parameters instead of three or four kernels per parameter. The state stays the
// optimizer's own (its momentum buffers, under its own keys), so checkpoints and resume are unchanged, and the
// result equals SGD::step's: the same operations on the same values.
void fusedSgdStep(torch::optim::SGD &optimizer);

} // namespace trainlab
