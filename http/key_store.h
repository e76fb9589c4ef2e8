// KeyStore: the HTTP API keys in force and where they come from — `--api-key`
// flags (node config `api_keys`), a key file (`api_key_file`) and an admin
// key file (`admin_key_file`, every key in it an admin key), formats in
// http/api_keys.h. Reload() re-reads the files (SIGHUP on the head, or
// POST /admin/keys/reload); a bad file leaves the keys in force untouched.
//
// With no source at all the API is open (configured() false). With a source
// that yields no key, no request gets in (fail closed).
//
// Thread-safety: every method may be called from any thread; current()
// hands out an immutable snapshot that stays valid while held.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http/api_keys.h"
#include "pipeline/status.h"

namespace troupe::http {

struct KeySources {
  std::vector<std::string> flag_keys;  // user keys, no limits
  std::string key_file;                // empty = none
  std::string admin_key_file;          // empty = none; its keys default to role=admin
  bool any() const { return !flag_keys.empty() || !key_file.empty() || !admin_key_file.empty(); }
};

class KeyStore {
 public:
  // Reads every source; fails naming the first problem (file, line).
  static Result<std::shared_ptr<KeyStore>> Load(KeySources sources);

  // Re-reads the sources. On success the new keys are in force for every
  // later request; on failure the old ones stay and the Status says why.
  Status Reload();

  std::shared_ptr<const KeyRing> current() const;
  bool configured() const { return sources_.any(); }
  // "3 keys (1 admin) from --api-key, keys.txt": for logs.
  std::string Describe() const;

 private:
  explicit KeyStore(KeySources sources) : sources_(std::move(sources)) {}
  Result<KeyRing> Read() const;

  const KeySources sources_;
  mutable std::mutex mu_;
  std::shared_ptr<const KeyRing> ring_;  // guarded by mu_
};

}  // namespace troupe::http
