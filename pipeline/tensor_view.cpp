#include "pipeline/tensor_view.h"

namespace troupe {

bool ggml_type_supported(uint32_t code) {
  switch (static_cast<GgmlType>(code)) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return true;
  }
  return false;
}

const char* ggml_type_name(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return "F32";
    case GgmlType::F16: return "F16";
    case GgmlType::BF16: return "BF16";
    case GgmlType::Q4_0: return "Q4_0";
    case GgmlType::Q4_1: return "Q4_1";
    case GgmlType::Q5_0: return "Q5_0";
    case GgmlType::Q8_0: return "Q8_0";
    case GgmlType::Q4_K: return "Q4_K";
    case GgmlType::Q5_K: return "Q5_K";
    case GgmlType::Q6_K: return "Q6_K";
  }
  return "UNKNOWN";
}

int64_t ggml_block_values(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return 1;
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0: return 32;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return 256;
  }
  return 0;
}

int64_t ggml_block_bytes(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return 4;
    case GgmlType::F16:
    case GgmlType::BF16: return 2;
    case GgmlType::Q4_0: return 18;   // fp16 d + 16 bytes of nibbles
    case GgmlType::Q4_1: return 20;   // fp16 d, fp16 m + 16 bytes of nibbles
    case GgmlType::Q5_0: return 22;   // fp16 d + 4 bytes of high bits + 16 bytes of nibbles
    case GgmlType::Q8_0: return 34;   // fp16 d + 32 int8
    case GgmlType::Q4_K: return 144;  // fp16 d, dmin + 12 bytes scales + 128 bytes nibbles
    case GgmlType::Q5_K: return 176;  // as Q4_K + 32 bytes of fifth bits before the nibbles
    case GgmlType::Q6_K: return 210;  // 128 ql + 64 qh + 16 int8 scales + fp16 d
  }
  return 0;
}

int64_t ggml_row_bytes(GgmlType type, int64_t n) {
  const int64_t bv = ggml_block_values(type);
  return bv == 0 ? 0 : (n / bv) * ggml_block_bytes(type);
}

}  // namespace troupe
