#include "pipeline/model/torch_device.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>

#include <cstdlib>

namespace troupe {

namespace {

// The index in "cuda:N" (NormalizeDevice's output).
int CudaIndex(const std::string& device) { return std::atoi(device.c_str() + 5); }

int CudaDeviceCount() {
  try {
    if (!at::globalContext().hasCUDA()) return 0;
    return at::detail::getCUDAHooks().getNumGPUs();
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

Result<std::string> NormalizeDevice(const std::string& device) {
  if (device == "cpu") return device;
  if (device == "cuda") return std::string("cuda:0");
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() <= 8 &&
      device.find_first_not_of("0123456789", 5) == std::string::npos)
    return "cuda:" + std::to_string(std::atoi(device.c_str() + 5));
  return Status::InvalidArgument("unknown device '" + device + "' (cpu, cuda or cuda:N)");
}

Status CheckDeviceAvailable(const std::string& device) {
  if (device == "cpu") return Status::Ok();
  if (!at::globalContext().hasCUDA())
    return Status::Unsupported("device '" + device +
                               "': this build's libtorch has no CUDA, or no GPU is visible (build against a CUDA "
                               "libtorch: cmake -DTROUPE_TORCH_ROOT=..., see README)");
  const int n = CudaDeviceCount();
  if (CudaIndex(device) >= n)
    return Status::Unsupported("device '" + device + "': only " + std::to_string(n) + " CUDA device(s) visible");
  return Status::Ok();
}

bool CudaAvailable() { return CudaDeviceCount() > 0; }

Result<DeviceMemory> DeviceMemoryOf(const std::string& device) {
  if (device.rfind("cuda:", 0) != 0) return Status::Unsupported("no device memory to ask on '" + device + "'");
  // The CUDA runtime libtorch's CUDA part loaded; looked up by name so that
  // nothing here needs CUDA headers or a link-time CUDA dependency.
  using GetDevice = int (*)(int*);
  using SetDevice = int (*)(int);
  using MemGetInfo = int (*)(size_t*, size_t*);
  auto get = reinterpret_cast<GetDevice>(dlsym(RTLD_DEFAULT, "cudaGetDevice"));
  auto set = reinterpret_cast<SetDevice>(dlsym(RTLD_DEFAULT, "cudaSetDevice"));
  auto info = reinterpret_cast<MemGetInfo>(dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
  if (!get || !set || !info) return Status::Unsupported("the CUDA runtime is not loaded; cannot ask " + device);
  int previous = 0;
  if (get(&previous) != 0) return Status::Unsupported("cudaGetDevice failed");
  const int index = CudaIndex(device);
  if (set(index) != 0) return Status::Unsupported("cudaSetDevice(" + std::to_string(index) + ") failed");
  size_t free_bytes = 0, total_bytes = 0;
  const int rc = info(&free_bytes, &total_bytes);
  set(previous);
  if (rc != 0) return Status::Unsupported("cudaMemGetInfo on " + device + " failed (" + std::to_string(rc) + ")");
  return DeviceMemory{free_bytes, total_bytes};
}

}  // namespace troupe
