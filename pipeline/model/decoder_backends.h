// The backends behind Decoder and LmHead (the public headers say
// what each stage does; model_options.h how a backend is chosen). Only the
// factories in decoder.cpp, lm_head.cpp and embedding.cpp call these.
#pragma once

#include <cstdint>
#include <memory>

#include "pipeline/format/model_source.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/lm_head.h"
#include "pipeline/model/model_options.h"

namespace troupe {

// pipeline/model/kernel_*.cpp: the quantized CPU kernels.
Result<std::unique_ptr<Decoder>> LoadKernelDecoder(const ModelSource& source, int64_t begin, int64_t end,
                                                   const ModelOptions& options);
Result<std::unique_ptr<LmHead>> LoadKernelLmHead(const ModelSource& source, const ModelOptions& options);

// pipeline/model/torch_*.cpp: libtorch ops on `backend.device` in `backend.dtype`.
Result<std::unique_ptr<Decoder>> LoadTorchDecoder(const ModelSource& source, int64_t begin, int64_t end,
                                                  const ModelOptions& options, const ResolvedBackend& backend);
Result<std::unique_ptr<LmHead>> LoadTorchLmHead(const ModelSource& source, const ModelOptions& options,
                                                const ResolvedBackend& backend);

}  // namespace troupe
