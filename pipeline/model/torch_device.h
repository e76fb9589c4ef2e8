// Devices the torch backend runs on: names, availability, free memory.
//
// Device names: "cpu", "cuda" (= "cuda:0") and "cuda:N". Nothing here needs
// CUDA headers: availability comes from libtorch's CUDA hooks (present when
// the binary links a CUDA libtorch and the driver sees a GPU), free memory
// from the CUDA runtime that libtorch loaded (found at run time).
// Thread-safety: all functions are reentrant.
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/status.h"

namespace troupe {

// "cpu", or "cuda:N" for "cuda" / "cuda:N"; InvalidArgument naming the value
// otherwise.
Result<std::string> NormalizeDevice(const std::string& device);

// Ok for "cpu"; for "cuda:N" Unsupported naming why not: this libtorch has
// no CUDA, no GPU is visible, or N is past the last one.
Status CheckDeviceAvailable(const std::string& device);

// Whether at least one CUDA device is usable (tests skip on false).
bool CudaAvailable();

struct DeviceMemory {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};
// Free and total memory of a CUDA device; Unsupported for "cpu" or when the
// CUDA runtime cannot be asked.
Result<DeviceMemory> DeviceMemoryOf(const std::string& device);

}  // namespace troupe
