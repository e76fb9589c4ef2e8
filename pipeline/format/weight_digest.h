// WeightDigest: what lets a head check, layer by layer, that a shard serves
// the same weights it expects — not only the same architecture and header
// (ModelSource::fingerprint), so a fine-tune or a damaged copy with an
// identical header is refused instead of answering garbage.
//
// A layer's digest is XXH3-64 over the bytes of its tensors ("blk.N.*", in
// name order, each with its name); a span's digest combines the digests of
// its layers. A shard computes the digests of the layers it serves (pages it
// maps anyway); a head computes every layer's once, handing back the pages
// of each layer it does not serve once hashed (ReleasePages), so its
// resident memory never holds the whole model. For a GGUF file the digests
// are cached in "<file>.troupe-digests.json" beside it, or under
// $XDG_CACHE_HOME/troupe/digests/ (default ~/.cache) where that folder is not
// writable, keyed by the file's size and modification time, so a restart
// reads no weight bytes to check them; a Hugging Face folder is hashed at
// every start (no cache). Writers replace the cache file atomically, so
// nodes sharing one file may start together.
//
// Thread-safety: LayerDigests is a value; the functions are reentrant.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "pipeline/format/model_source.h"
#include "pipeline/status.h"

namespace troupe {

class LayerDigests {
 public:
  // Digests of layers [begin, end) of `source` (end <= n_layers). Layers
  // outside [serve_begin, serve_end) are only checked by the caller, not run:
  // their pages are handed back once hashed. The default serves every layer.
  static Result<LayerDigests> Compute(const ModelSource& source, int64_t begin, int64_t end, int64_t serve_begin = 0,
                                      int64_t serve_end = INT64_MAX);

  // The digest of [begin, end) as 16 hex digits; empty when some layer of
  // the span was not computed.
  std::string Span(int64_t begin, int64_t end) const;
  bool Has(int64_t layer) const { return layers_.count(layer) > 0; }

 private:
  std::map<int64_t, uint64_t> layers_;
};

}  // namespace troupe
