// libFuzzer target: node config YAML through ParseNodeConfigProblems and
// ParseNodeConfig (the text of `troupe node --config`), NodeConfigToYaml and
// back, and a cluster of configs through CheckNodeConfigs (`troupe config
// check`; written to a scratch folder first: it reads paths, fuzz_files.h).
// Input: up to 4 configs' texts between NUL bytes; the first is parsed alone.
// Key files named by the configs are left unread (read_key_files false,
// files false) but by ParseNodeConfig, as `troupe node` does.
// Properties checked (a violation aborts): every problem names its source;
// a config with no problem passes ValidateNodeConfig, and (when its text is
// well-formed UTF-8, as YAML is) written out with NodeConfigToYaml it reads
// back with no problem and the same id, roles, layers, model, options,
// endpoints, security and peers.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cluster/config_check.h"
#include "cluster/node_config.h"
#include "tests/fuzz/fuzz_files.h"

namespace troupe::fuzz {
namespace {

using cluster::NodeConfig;
using cluster::PeerConfig;

// The YAML a failing round trip read back, printed with the violation.
thread_local const std::string* round_trip_yaml = nullptr;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "node_config_fuzz: property violated: %s\n", what);
    if (round_trip_yaml) std::fprintf(stderr, "--- written out:\n%s---\n", round_trip_yaml->c_str());
    std::abort();
  }
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF). YAML is Unicode text: yaml-cpp reads other bytes as they are but
// writes them as U+FFFD, so only such texts are expected to round-trip.
bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

bool SamePeers(const std::vector<PeerConfig>& a, const std::vector<PeerConfig>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].endpoint != b[i].endpoint || a[i].public_key != b[i].public_key ||
        a[i].shard != b[i].shard ||
        (a[i].shard && (a[i].layer_begin != b[i].layer_begin || a[i].layer_end != b[i].layer_end))) {
      return false;
    }
  }
  return true;
}

// What NodeConfigToYaml writes for every node, compared after a round trip.
void CheckRoundTrip(const NodeConfig& c) {
  const std::string yaml = cluster::NodeConfigToYaml(c);
  round_trip_yaml = &yaml;
  NodeConfig back;
  const std::vector<std::string> problems =
      cluster::ParseNodeConfigProblems(yaml, "", "again.yaml", &back, /*read_key_files=*/false);
  if (!problems.empty()) std::fprintf(stderr, "%s\n", problems.front().c_str());
  Check(problems.empty(), "a config written out reads back without problems");
  Check(back.id == c.id, "id survives");
  Check(back.head == c.head && back.shard == c.shard && back.embedding == c.embedding && back.lm_head == c.lm_head,
        "roles survive");
  Check(!c.head || (back.head_embedding == c.head_embedding && back.head_lm_head == c.head_lm_head),
        "head stages survive");
  Check(back.layers_auto == c.layers_auto, "layers: auto survives");
  Check(!c.shard || c.layers_auto || (back.layer_begin == c.layer_begin && back.layer_end == c.layer_end),
        "layers survive");
  Check(back.model == c.model && back.amateur_model == c.amateur_model, "models survive");
  Check(back.device == c.device && back.backend == c.backend && back.dtype == c.dtype, "model options survive");
  Check(back.threads == c.threads && back.cache_budget_bytes == c.cache_budget_bytes, "threads and cache survive");
  Check(back.listen == c.listen && back.advertise == c.advertise, "endpoints survive");
  Check(!c.head || (back.job_listen == c.job_listen && back.http_listen == c.http_listen), "head endpoints survive");
  Check(back.metrics_listen == c.metrics_listen, "metrics endpoint survives");
  Check(back.curve == c.curve && back.insecure == c.insecure, "security survives");
  Check(!c.curve || (back.secret_key_file == c.secret_key_file && back.allowlist == c.allowlist), "keys survive");
  Check(back.api_keys == c.api_keys && back.api_key_file == c.api_key_file && back.admin_key_file == c.admin_key_file,
        "API keys survive");
  Check(back.head_id == c.head_id && SamePeers(back.peers, c.peers), "head and peers survive");
  Check(back.ready_file == c.ready_file, "ready_file survives");
  round_trip_yaml = nullptr;
}

}  // namespace
}  // namespace troupe::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  static const fuzz::ScratchFolder folder;
  const std::vector<std::string> parts = fuzz::SplitAtNul(data, size, 4);

  cluster::NodeConfig config;
  const std::vector<std::string> problems =
      cluster::ParseNodeConfigProblems(parts[0], "/base", "fuzz.yaml", &config, /*read_key_files=*/false);
  for (const std::string& line : problems)
    fuzz::Check(fuzz::StartsWith(line, "fuzz.yaml: "), "a problem names its source");
  if (problems.empty()) {
    fuzz::Check(cluster::ValidateNodeConfig(config, "fuzz.yaml").ok(), "a config without problems validates");
    if (fuzz::ValidUtf8(parts[0])) fuzz::CheckRoundTrip(config);
  }
  Result<cluster::NodeConfig> strict = cluster::ParseNodeConfig(parts[0], "/base", "fuzz.yaml");
  if (!strict.ok())
    fuzz::Check(fuzz::StartsWith(strict.status().message(), "fuzz.yaml: "), "an error names its source");

  std::vector<std::string> paths;
  for (size_t i = 0; i < parts.size(); ++i)
    paths.push_back(folder.Write("node" + std::to_string(i) + ".yaml", parts[i]));
  for (const std::string& line : cluster::CheckNodeConfigs(paths, cluster::ConfigCheckOptions{})) {
    bool named = false;
    for (const std::string& p : paths) named = named || fuzz::StartsWith(line, p + ": ");
    fuzz::Check(named, "a cluster problem names its file");
  }
  return 0;
}
