// Defines TROUPE_HAVE_AVX512 (and includes <immintrin.h>) when this
// translation unit is compiled for AVX-512 F/BW/VL/VNNI with F16C and FMA —
// the instruction sets the AVX-512 kernel files need. Include it first in each
// of those files; without them the files compile to nothing.
#pragma once

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__F16C__) && defined(__FMA__)
#define TROUPE_HAVE_AVX512 1
// GCC 12.2's AVX-512 headers trip -Wuninitialized on their own
// _mm512_undefined_* placeholders (GCC bug 105593, fixed in 12.3).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif
