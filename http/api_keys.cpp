#include "http/api_keys.h"

#include <fstream>
#include <map>
#include <sstream>

namespace troupe::http {
namespace {

constexpr size_t kMinKeyChars = 8;
constexpr size_t kMaxKeyChars = 512;
constexpr size_t kMaxNameChars = 64;

Status LineError(const std::string& where, const std::string& message) {
  return Status::InvalidArgument(where + ": " + message);
}

Status CheckSecret(const std::string& secret, const std::string& where) {
  if (secret.size() < kMinKeyChars || secret.size() > kMaxKeyChars) {
    return LineError(where, "a key must be " + std::to_string(kMinKeyChars) + " to " + std::to_string(kMaxKeyChars) +
                                " characters, got " + std::to_string(secret.size()));
  }
  if (secret[0] == '#') return LineError(where, "a key must not start with '#' (a comment)");
  for (unsigned char c : secret) {
    if (c <= 0x20 || c >= 0x7f) return LineError(where, "a key holds only printable ASCII characters without spaces");
  }
  return Status::Ok();
}

Status CheckName(const std::string& name, const std::string& where) {
  if (name.empty() || name.size() > kMaxNameChars) {
    return LineError(where, "a name must be 1 to " + std::to_string(kMaxNameChars) + " characters");
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '@' || c == '-';
    if (!ok) return LineError(where, "name '" + name + "' holds a character outside [A-Za-z0-9_.@-]");
  }
  return Status::Ok();
}

// "max_tokens=256" -> option name; empty when `word` is no option.
std::string OptionName(const std::string& word) {
  const size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return "";
  for (size_t i = 0; i < eq; ++i) {
    if (!((word[i] >= 'a' && word[i] <= 'z') || word[i] == '_')) return "";
  }
  return word.substr(0, eq);
}

Status ReadLimit(const std::string& option, const std::string& value, const std::string& where, int64_t* out) {
  int64_t v = 0;
  bool ok = !value.empty() && value.size() <= 18;
  for (char c : value) {
    if (c < '0' || c > '9') ok = false;
  }
  if (ok) v = std::stoll(value);
  if (!ok || v < 1) return LineError(where, option + ": expected an integer >= 1, got '" + value + "'");
  *out = v;
  return Status::Ok();
}

Status ApplyOption(const std::string& word, const std::string& where, ApiKey* key) {
  const std::string option = OptionName(word);
  const std::string value = word.substr(option.size() + 1);
  if (option == "role") {
    if (value == "user") {
      key->role = KeyRole::kUser;
    } else if (value == "admin") {
      key->role = KeyRole::kAdmin;
    } else {
      return LineError(where, "role: expected user or admin, got '" + value + "'");
    }
    return Status::Ok();
  }
  if (option == "max_concurrent_jobs") return ReadLimit(option, value, where, &key->limits.max_concurrent_jobs);
  if (option == "max_prompt_tokens") return ReadLimit(option, value, where, &key->limits.max_prompt_tokens);
  if (option == "max_tokens") return ReadLimit(option, value, where, &key->limits.max_tokens);
  if (option == "max_request_bytes") return ReadLimit(option, value, where, &key->limits.max_request_bytes);
  return LineError(where, "unknown option '" + option +
                              "' (role, max_concurrent_jobs, max_prompt_tokens, max_tokens, max_request_bytes)");
}

// Constant time in the length of `b` (the stored key) for equal lengths.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

Result<std::vector<ApiKey>> ParseKeyFile(std::string_view text, const std::string& source, KeyRole default_role) {
  std::vector<ApiKey> keys;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = source + ":" + std::to_string(number);
    std::istringstream words(line);
    std::vector<std::string> positional;
    ApiKey key;
    key.role = default_role;
    key.source = where;
    std::string word;
    bool options_started = false;
    while (words >> word) {
      if (word[0] == '#') break;  // a comment, to the end of the line
      if (!OptionName(word).empty()) {
        options_started = true;
        TROUPE_RETURN_IF_ERROR(ApplyOption(word, where, &key));
        continue;
      }
      if (options_started) return LineError(where, "'" + word + "' after the options (NAME KEY come first)");
      positional.push_back(word);
    }
    if (positional.empty() && !options_started) continue;  // blank or a comment
    if (positional.empty()) return LineError(where, "options without a key");
    if (positional.size() > 2) {
      return LineError(where, "expected [NAME] KEY then options, got " + std::to_string(positional.size()) +
                                  " words before the options");
    }
    key.secret = positional.back();
    key.name = positional.size() == 2 ? positional[0] : "key-" + std::to_string(number);
    TROUPE_RETURN_IF_ERROR(CheckName(key.name, where));
    TROUPE_RETURN_IF_ERROR(CheckSecret(key.secret, where));
    keys.push_back(std::move(key));
  }
  return keys;
}

Result<std::vector<ApiKey>> LoadKeyFile(const std::string& path, KeyRole default_role) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("key file " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IoError("key file " + path + ": cannot read");
  return ParseKeyFile(ss.str(), path, default_role);
}

Result<ApiKey> FlagKey(const std::string& secret, int index) {
  ApiKey key;
  key.name = "api-key-" + std::to_string(index);
  key.secret = secret;
  key.source = "--api-key " + std::to_string(index);
  TROUPE_RETURN_IF_ERROR(CheckSecret(secret, key.source));
  return key;
}

Result<KeyRing> KeyRing::Build(std::vector<ApiKey> keys) {
  std::map<std::string, const ApiKey*> names;
  for (const ApiKey& k : keys) {
    auto [it, fresh] = names.emplace(k.name, &k);
    if (!fresh) {
      return Status::InvalidArgument(k.source + ": the name '" + k.name + "' is taken already (" + it->second->source +
                                     ")");
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (keys[i].secret == keys[j].secret) {
        return Status::InvalidArgument(keys[i].source + ": the same key as " + keys[j].source + " ('" + keys[j].name +
                                       "')");
      }
    }
  }
  KeyRing ring;
  ring.keys_ = std::move(keys);
  return ring;
}

const ApiKey* KeyRing::Find(std::string_view secret) const {
  const ApiKey* found = nullptr;
  for (const ApiKey& k : keys_) {
    if (SameSecret(secret, k.secret)) found = &k;
  }
  return found;
}

size_t KeyRing::admins() const {
  size_t n = 0;
  for (const ApiKey& k : keys_) n += k.role == KeyRole::kAdmin;
  return n;
}

}  // namespace troupe::http
