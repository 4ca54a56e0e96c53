//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//
//
// libgaccrt_cuda does not link libcuda: the driver library is opened with
// dlopen when the backend is first initialized and its functions resolved by
// name. A program that links libgaccrt_cuda therefore starts on a machine
// without an NVIDIA driver and gets a clear "CUDA is not available" instead
// of a loader error. cuBLAS and NCCL load the driver the same way
// themselves. GACCRT_CUDA_DRIVER names another driver library (the tests
// use the toolkit's stub, whose cuInit fails).
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace gaccrt {

DriverApi gCuda;

namespace {

#define GACCRT_STRINGIFY_EXPANDED(name) GACCRT_STRINGIFY(name)
#define GACCRT_STRINGIFY(name) #name

struct DriverLibrary {
  std::mutex mutex;
  void *handle = nullptr;
  bool loaded = false;
  std::string error;
};

DriverLibrary &driverLibrary() {
  static DriverLibrary *library = new DriverLibrary(); // never destroyed
  return *library;
}

template <typename Function>
bool resolve(void *handle, const char *symbol, Function &function,
             bool required, std::string &missing) {
  function = reinterpret_cast<Function>(dlsym(handle, symbol));
  if (!function && required) {
    if (!missing.empty())
      missing += ", ";
    missing += symbol;
  }
  return function != nullptr || !required;
}

} // namespace

bool loadDriver(std::string &error) {
  DriverLibrary &library = driverLibrary();
  std::lock_guard<std::mutex> lock(library.mutex);
  if (library.loaded)
    return true;
  if (!library.error.empty()) {
    error = library.error;
    return false;
  }

  const char *path = std::getenv("GACCRT_CUDA_DRIVER");
  if (!path || !*path)
    path = "libcuda.so.1";
  library.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library.handle) {
    const char *reason = dlerror();
    library.error = std::string("cannot load the CUDA driver library ") + path +
                    " (" + (reason ? reason : "unknown error") +
                    "); is the NVIDIA driver installed?";
    error = library.error;
    return false;
  }

  DriverApi api;
  std::string missing;
#define GACCRT_RESOLVE_REQUIRED(name)                                          \
  resolve(library.handle, GACCRT_STRINGIFY_EXPANDED(name), api.name, true,     \
          missing);
#define GACCRT_RESOLVE_OPTIONAL(name)                                          \
  resolve(library.handle, GACCRT_STRINGIFY_EXPANDED(name), api.name, false,    \
          missing);
  GACCRT_CUDA_DRIVER_FUNCTIONS(GACCRT_RESOLVE_REQUIRED, GACCRT_RESOLVE_OPTIONAL)
#undef GACCRT_RESOLVE_REQUIRED
#undef GACCRT_RESOLVE_OPTIONAL
  if (!missing.empty()) {
    library.error =
        std::string("the CUDA driver library ") + path + " lacks " + missing +
        " (a driver for CUDA " + std::to_string(CUDA_VERSION / 1000) + "." +
        std::to_string(CUDA_VERSION % 1000 / 10) + " or newer is needed)";
    error = library.error;
    return false;
  }
  gCuda = api;
  library.loaded = true;
  return true;
}

std::string cudaResultText(CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (gCuda.cuGetErrorName &&
      gCuda.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (gCuda.cuGetErrorString &&
      gCuda.cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  if (!name) {
    // A driver that cannot describe its own errors (the stub library, a
    // broken installation): name the ones that stop initialization here.
    struct Known {
      CUresult result;
      const char *name;
      const char *text;
    };
    static const Known known[] = {
        {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", nullptr},
        {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", nullptr},
        {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", nullptr},
        {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
         "the CUDA driver is the toolkit's stub library, not a real driver"},
        {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
         nullptr},
        {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
         "no CUDA-capable device is detected"},
        {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", nullptr},
        {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
         nullptr},
        {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", nullptr},
    };
    for (const Known &entry : known)
      if (entry.result == result) {
        name = entry.name;
        if (!text)
          text = entry.text;
      }
  }
  std::string message =
      name ? name : "CUDA error " + std::to_string(static_cast<int>(result));
  if (text)
    message += std::string(" (") + text + ")";
  return message;
}

std::string cublasStatusText(cublasStatus_t status) {
  return std::string(cublasGetStatusName(status)) + " (" +
         cublasGetStatusString(status) + ")";
}

} // namespace gaccrt
