// ConfigCheck: every problem in one node config or in the configs of a whole
// cluster, one line each — `troupe config check [--files] FILE...`, what an
// operator runs before starting nodes on separate machines.
//
// Per file (always): what ParseNodeConfigProblems finds (YAML, unknown keys,
// values, keys that go together, `${VAR}`s not set), and a plain listener off
// loopback without `insecure` (the node would refuse to start).
// Per file, with `files`: the model exists (and reads as a model: its layer
// count), the secret key loads (mode 0600, matching keys), the allowlists
// load and hold keys, each peer's public key file reads.
// Across files (two or more: one cluster): node ids are unique; one head;
// every shard names a head that is among the files; the port a shard dials
// its head at is one the head listens on; CURVE on every node or none; fixed
// spans leave no layer unserved (with `files`: of the head's model) unless a
// shard has `layers: auto`. With `files` and CURVE, the keys fit together:
// the head's key in each shard's peers is the head's own, the head's allowlist
// holds every shard, each shard's allowlist holds the head and every other
// shard (shards dial each other), and a key a config names for a node is
// that node's.
//
// Each problem names its file ("deploy/compose/head.yaml: ..."). Plain
// functions over files; no sockets. Thread-safety: none needed.
#pragma once

#include <string>
#include <vector>

namespace troupe::cluster {

struct ConfigCheckOptions {
  bool files = false;  // also check the files the configs name (keys, allowlists, model)
};

// Every problem of the node configs at `paths` (empty: none).
std::vector<std::string> CheckNodeConfigs(const std::vector<std::string>& paths, const ConfigCheckOptions& options);

}  // namespace troupe::cluster
