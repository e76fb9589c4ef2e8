# libtorch straight from a torch package folder (TROUPE_TORCH_ROOT), e.g. the
# CUDA libtorch inside a PyPI `torch` wheel:
#   -DTROUPE_TORCH_ROOT=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
# Unlike that package's own TorchConfig.cmake (-DCMAKE_PREFIX_PATH=
# torch.utils.cmake_prefix_path, which needs the CUDA toolkit to configure a
# CUDA torch), this needs only its headers and libraries: nothing of Troupe
# is CUDA code. The CUDA part (libtorch_cuda.so) is linked whether or not a
# symbol is used, so that its kernels register at start; its own
# dependencies (the CUDA runtime, cuBLAS, ...) are resolved where it runs.
# Defines TORCH_LIBRARIES (an interface target) as find_package(Torch) does.
set(_root "${TROUPE_TORCH_ROOT}")
foreach(_f include/ATen/ATen.h lib/libtorch_cpu.so lib/libc10.so)
  if(NOT EXISTS "${_root}/${_f}")
    message(FATAL_ERROR "TROUPE_TORCH_ROOT=${_root} is not a torch package folder: ${_f} is missing")
  endif()
endforeach()
# The package's include/ also carries copies of libraries Troupe takes from
# the system (protobuf's headers in google/, an older version than Debian's):
# expose only torch's own folders, through links in the build tree.
set(_inc "${CMAKE_BINARY_DIR}/torch-include")
file(MAKE_DIRECTORY "${_inc}")
file(GLOB _entries RELATIVE "${_root}/include" "${_root}/include/*")
foreach(_e ${_entries})
  if(NOT _e STREQUAL "google" AND NOT EXISTS "${_inc}/${_e}")
    file(CREATE_LINK "${_root}/include/${_e}" "${_inc}/${_e}" SYMBOLIC)
  endif()
endforeach()
add_library(troupe_torch_root INTERFACE)
target_include_directories(troupe_torch_root SYSTEM INTERFACE "${_inc}" "${_root}/include/torch/csrc/api/include")
target_compile_definitions(troupe_torch_root INTERFACE _GLIBCXX_USE_CXX11_ABI=1)
set(_libs "${_root}/lib/libtorch.so" "${_root}/lib/libtorch_cpu.so" "${_root}/lib/libc10.so")
set(TROUPE_TORCH_CUDA OFF)
if(EXISTS "${_root}/lib/libtorch_cuda.so")
  set(TROUPE_TORCH_CUDA ON)
  list(APPEND _libs "-Wl,--no-as-needed" "${_root}/lib/libtorch_cuda.so" "${_root}/lib/libc10_cuda.so"
       "-Wl,--as-needed" "-Wl,--allow-shlib-undefined")
endif()
target_link_libraries(troupe_torch_root INTERFACE ${_libs})
target_link_options(troupe_torch_root INTERFACE "-Wl,-rpath,${_root}/lib")
set(TORCH_LIBRARIES troupe_torch_root)
if(TROUPE_TORCH_CUDA)
  # Its binaries may not run where they are built (no CUDA runtime there):
  # GoogleTest lists their tests when ctest runs, not after linking.
  set(CMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE PRE_TEST)
endif()
message(STATUS "libtorch from ${_root} (CUDA part: ${TROUPE_TORCH_CUDA})")
