// HiddenState: what passes between pipeline stages — an at::Tensor
// of shape [tokens, hidden], fp32, contiguous, on the stage's device.
//
// This header only forward-declares at::Tensor so that widely included
// headers stay free of torch; code that builds or reads tensors includes
// <ATen/core/Tensor.h> itself.
#pragma once

namespace at {
class Tensor;
}  // namespace at

namespace troupe {
using HiddenState = at::Tensor;
}  // namespace troupe
