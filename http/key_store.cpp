#include "http/key_store.h"

namespace troupe::http {

Result<std::shared_ptr<KeyStore>> KeyStore::Load(KeySources sources) {
  std::shared_ptr<KeyStore> store(new KeyStore(std::move(sources)));
  TROUPE_RETURN_IF_ERROR(store->Reload());
  return store;
}

Result<KeyRing> KeyStore::Read() const {
  std::vector<ApiKey> keys;
  for (size_t i = 0; i < sources_.flag_keys.size(); ++i) {
    TROUPE_ASSIGN_OR_RETURN(ApiKey key, FlagKey(sources_.flag_keys[i], static_cast<int>(i) + 1));
    keys.push_back(std::move(key));
  }
  auto add_file = [&](const std::string& path, KeyRole role) -> Status {
    if (path.empty()) return Status::Ok();
    TROUPE_ASSIGN_OR_RETURN(std::vector<ApiKey> more, LoadKeyFile(path, role));
    for (ApiKey& k : more) keys.push_back(std::move(k));
    return Status::Ok();
  };
  TROUPE_RETURN_IF_ERROR(add_file(sources_.key_file, KeyRole::kUser));
  TROUPE_RETURN_IF_ERROR(add_file(sources_.admin_key_file, KeyRole::kAdmin));
  return KeyRing::Build(std::move(keys));
}

Status KeyStore::Reload() {
  TROUPE_ASSIGN_OR_RETURN(KeyRing ring, Read());
  auto fresh = std::make_shared<const KeyRing>(std::move(ring));
  std::lock_guard<std::mutex> lock(mu_);
  ring_ = std::move(fresh);
  return Status::Ok();
}

std::shared_ptr<const KeyRing> KeyStore::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_ ? ring_ : std::make_shared<const KeyRing>();
}

std::string KeyStore::Describe() const {
  std::shared_ptr<const KeyRing> ring = current();
  std::string from;
  auto add = [&](const std::string& s) { from += (from.empty() ? "" : ", ") + s; };
  if (!sources_.flag_keys.empty()) add("--api-key");
  if (!sources_.key_file.empty()) add(sources_.key_file);
  if (!sources_.admin_key_file.empty()) add(sources_.admin_key_file + " (admin)");
  return std::to_string(ring->size()) + " key(s) (" + std::to_string(ring->admins()) + " admin) from " + from;
}

}  // namespace troupe::http
