#include "pipeline/model/model_options.h"

#include <thread>

#include "pipeline/model/torch_device.h"

namespace troupe {

int ResolveThreads(const ModelOptions& options) {
  if (options.threads > 0) return options.threads;
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

std::string ResolvedBackend::Describe() const {
  if (backend == Backend::kKernels) return "kernels (" + device + ")";
  return "torch (" + device + ", " + dtype + ")";
}

Result<ResolvedBackend> ResolveBackend(const ModelOptions& options) {
  ResolvedBackend r;
  TROUPE_ASSIGN_OR_RETURN(r.device, NormalizeDevice(options.device));
  const bool cpu = r.device == "cpu";
  if (options.backend == "auto") {
    r.backend = cpu ? Backend::kKernels : Backend::kTorch;
  } else if (options.backend == "kernels") {
    if (!cpu)
      return Status::InvalidArgument("backend 'kernels' runs on the CPU only; device '" + options.device +
                                     "' needs --backend torch (or auto)");
    r.backend = Backend::kKernels;
  } else if (options.backend == "torch") {
    r.backend = Backend::kTorch;
  } else {
    return Status::InvalidArgument("unknown backend '" + options.backend + "' (auto, kernels or torch)");
  }
  if (r.backend == Backend::kKernels) {
    if (options.dtype != "auto" && options.dtype != "f16")
      return Status::InvalidArgument("dtype '" + options.dtype +
                                     "' applies to the torch backend; the kernels keep the file's blocks");
    r.dtype = "f16";
    return r;
  }
  if (options.dtype == "auto") {
    r.dtype = cpu ? "f32" : "bf16";
  } else if (options.dtype == "bf16" || options.dtype == "f16" || options.dtype == "f32") {
    r.dtype = options.dtype;
  } else {
    return Status::InvalidArgument("unknown dtype '" + options.dtype + "' (auto, bf16, f16 or f32)");
  }
  TROUPE_RETURN_IF_ERROR(CheckDeviceAvailable(r.device));
  return r;
}

}  // namespace troupe
