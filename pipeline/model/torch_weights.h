// Shared pieces of the torch backend (torch_decoder.cpp, torch_lm_head.cpp):
// where its tensors live, loading a weight expanded onto the device, the
// products it runs, and the fp32 operations every stage uses. Internal to
// pipeline/model: it includes ATen, so only the torch backend's own files
// include it.
//
// Numerics: weights are expanded from the file's blocks exactly (fp32) and
// then rounded to the dtype; products and activations run in the dtype, norms
// and the residual stream in fp32. So f32 computes the model's exact math
// (what tests/python/llama_reference.py computes in float64), and differs
// from the quantized kernels by their 8-bit activation rounding, as llama.cpp
// does; bf16/f16 add the dtype's rounding, for speed.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <functional>
#include <string>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/model_options.h"
#include "pipeline/status.h"

namespace troupe {

// The device and compute dtype of a torch stage.
struct TorchPlacement {
  c10::Device device = c10::Device(c10::kCPU);
  c10::ScalarType dtype = c10::kFloat;
};
TorchPlacement PlacementOf(const ResolvedBackend& backend);

// y = W x (+ b) over rows of x: one weight matrix, or several that read the
// same input fused into one (q/k/v, gate/up).
struct TorchLinear {
  at::Tensor w;  // [rows, cols] in the dtype, on the device
  at::Tensor b;  // [rows] or undefined
  // x: [n, cols] on the device, any float dtype. Returns [n, rows] in the dtype.
  at::Tensor operator()(const at::Tensor& x) const;
};

// Loads the matrices `names` (each [rows_i, cols], in this order) fused into
// one TorchLinear, with `biases` (same order, or none) added. Errors as
// LoadTorchTensor.
Result<TorchLinear> LoadTorchLinear(const ModelSource& source, const std::vector<std::string>& names,
                                    const std::vector<int64_t>& rows, int64_t cols,
                                    const std::vector<std::string>& biases, const TorchPlacement& place);

// The tensor `name` (checked against `shape`, torch order) expanded from its
// file encoding to fp32, then moved to `device` as `dtype`. NotFound /
// InvalidArgument as ModelSource::Require; ResourceExhausted when the device
// runs out of memory.
Result<at::Tensor> LoadTorchTensor(const ModelSource& source, const std::string& name,
                                   const std::vector<int64_t>& shape, c10::Device device, c10::ScalarType dtype);

// x * rsqrt(mean(x^2, -1) + eps) * weight, in fp32 (x, weight fp32).
at::Tensor TorchRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

// Runs `body`, turning what libtorch throws into a Status: a device
// out-of-memory is ResourceExhausted naming `what`, anything else Internal.
Status TorchGuard(const std::string& what, const std::function<Status()>& body);

}  // namespace troupe
