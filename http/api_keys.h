// ApiKeys: the keys that open the HTTP API (`Authorization: Bearer <key>`),
// what each may do (user or admin) and its limits — parsed from a key file
// or from `--api-key` flags, and looked up by secret. Pure data, no sockets.
//
// Key file format (UTF-8 text, one key per line; a word starting with `#`
// starts a comment to the end of its line; blank lines are skipped):
//
//   [NAME] KEY [role=user|admin] [max_concurrent_jobs=N] [max_prompt_tokens=N]
//              [max_tokens=N] [max_request_bytes=N]
//
//   alice   sk-alice-0123456789  max_concurrent_jobs=2 max_tokens=256
//   ops     sk-ops-0123456789    role=admin
//   sk-anonymous-0123456789                  # no name: "key-<line>"
//
// NAME: 1 to 64 of [A-Za-z0-9_.@-]; it names the key in logs and errors
// (never the secret). KEY: 8 to 512 printable ASCII characters, no spaces,
// not starting with `#`.
// An option is a word `name=value` whose name is lower case letters and
// underscores; limits are integers >= 1 (absent = no limit). role=admin
// marks an admin key: it may do everything a user key may, and the admin
// actions (http/access.h). Names and keys are unique across every source.
//
// Failures name the source and line: "keys.txt:3: max_tokens: expected an
// integer >= 1, got 'ten'". Thread-safety: values; KeyRing is immutable
// after Build and may be read from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/status.h"

namespace troupe::http {

// Per-key limits; 0 = no limit.
struct KeyLimits {
  int64_t max_concurrent_jobs = 0;  // jobs (choices) running at once on this key
  int64_t max_prompt_tokens = 0;    // tokens of one request's prompt
  int64_t max_tokens = 0;           // a request's max_tokens (also its default when absent)
  int64_t max_request_bytes = 0;    // a request's body
};

enum class KeyRole { kUser, kAdmin };

struct ApiKey {
  std::string name;
  std::string secret;
  KeyRole role = KeyRole::kUser;
  KeyLimits limits;
  std::string source;  // "keys.txt:3", "--api-key 1": where it was defined
};

// Parses a key file's text; `source` names it in errors ("keys.txt"); keys
// without role= get `default_role`. InvalidArgument naming the line.
Result<std::vector<ApiKey>> ParseKeyFile(std::string_view text, const std::string& source, KeyRole default_role);
// Reads and parses the file at `path` (NotFound / IoError naming it).
Result<std::vector<ApiKey>> LoadKeyFile(const std::string& path, KeyRole default_role);
// A key given on the command line: checked as a key file's KEY; named
// "api-key-<index>" (from 1), user role, no limits.
Result<ApiKey> FlagKey(const std::string& secret, int index);

// The keys in force: looked up by secret.
class KeyRing {
 public:
  KeyRing() = default;  // no keys
  // InvalidArgument naming both sources for a repeated name or key.
  static Result<KeyRing> Build(std::vector<ApiKey> keys);

  // The key whose secret is `secret`, or nullptr. Compares against every key
  // in constant time per key (no early exit on the first differing byte).
  const ApiKey* Find(std::string_view secret) const;

  bool empty() const { return keys_.empty(); }
  size_t size() const { return keys_.size(); }
  size_t admins() const;
  const std::vector<ApiKey>& keys() const { return keys_; }

 private:
  std::vector<ApiKey> keys_;
};

}  // namespace troupe::http
