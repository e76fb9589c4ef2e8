#include "transport/keys.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace troupe::transport {
namespace {

constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

// One `name = value` entry, with its line number for error messages.
struct Entry {
  std::string name;
  std::string value;
  int line = 0;
};

// Parses the key file text format (see keys.h). Names are checked by callers.
Result<std::vector<Entry>> ParseEntries(const std::string& path, const std::string& text) {
  std::vector<Entry> entries;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    // Split at the first '=' after the name: Z85 itself may contain '='.
    size_t eq = t.find('=');
    if (eq == std::string::npos) {
      return Status::Corrupt(path + ":" + std::to_string(n) + ": expected `name = value`");
    }
    Entry e{Trim(std::string_view(t).substr(0, eq)), Trim(std::string_view(t).substr(eq + 1)), n};
    if (e.name != "public-key" && e.name != "secret-key") {
      return Status::Corrupt(path + ":" + std::to_string(n) + ": unknown entry '" + e.name +
                             "' (expected public-key or secret-key)");
    }
    Status valid = ValidateZ85Key(e.value, path + ":" + std::to_string(n) + ": " + e.name);
    if (!valid.ok()) return Status::Corrupt(valid.message());
    entries.push_back(std::move(e));
  }
  return entries;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such key file");
    return Status::IoError(Errno(path));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IoError(Errno(path));
  return ss.str();
}

// Writes `text` to `path` with `mode`, failing if the file exists and
// `exclusive` is set. The mode is applied explicitly so umask cannot widen it.
Status WriteFile(const std::string& path, const std::string& text, mode_t mode, bool exclusive) {
  int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (exclusive ? O_EXCL : 0);
  int fd = ::open(path.c_str(), flags, mode);
  if (fd < 0) {
    if (errno == EEXIST) {
      return Status::InvalidArgument(path +
                                     ": already exists; refusing to replace a node's key "
                                     "(delete it first if you mean to)");
    }
    return Status::IoError(Errno(path));
  }
  Status st;
  if (::fchmod(fd, mode) != 0) st = Status::IoError(Errno(path));
  size_t done = 0;
  while (st.ok() && done < text.size()) {
    ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      st = Status::IoError(Errno(path));
    } else {
      done += static_cast<size_t>(w);
    }
  }
  if (st.ok() && ::fsync(fd) != 0) st = Status::IoError(Errno(path));
  if (::close(fd) != 0 && st.ok()) st = Status::IoError(Errno(path));
  return st;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Adds every public-key entry of one file to `out`; returns how many it held.
Result<size_t> AddKeysFromFile(const std::string& path, Allowlist* out) {
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  TROUPE_ASSIGN_OR_RETURN(std::vector<Entry> entries, ParseEntries(path, text));
  size_t n = 0;
  for (const Entry& e : entries) {
    if (e.name == "secret-key") {
      return Status::InvalidArgument(path + ":" + std::to_string(e.line) +
                                     ": an allowlist must hold public keys only, not a secret key");
    }
    TROUPE_RETURN_IF_ERROR(out->Add(e.value));
    ++n;
  }
  return n;
}

}  // namespace

Status Allowlist::Add(const std::string& z85_key) {
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(z85_key, "allowlist key"));
  keys_.insert(z85_key);
  return Status::Ok();
}

bool Allowlist::ContainsBinary(std::string_view binary_key) const {
  auto z85 = EncodeZ85Key(binary_key);
  return z85.ok() && Contains(*z85);
}

Status ValidateZ85Key(std::string_view key, std::string_view what) {
  if (key.size() != kZ85KeyLength) {
    return Status::InvalidArgument(std::string(what) + ": a CURVE key is " + std::to_string(kZ85KeyLength) +
                                   " Z85 characters, got " + std::to_string(key.size()));
  }
  for (size_t i = 0; i < key.size(); ++i) {
    if (kZ85Alphabet.find(key[i]) == std::string_view::npos) {
      return Status::InvalidArgument(std::string(what) + ": character " + std::to_string(i + 1) +
                                     " is not in the Z85 alphabet");
    }
  }
  return Status::Ok();
}

Result<CurveKeyPair> GenerateKeyPair() {
  char pub[kZ85KeyLength + 1] = {};
  char sec[kZ85KeyLength + 1] = {};
  if (zmq_curve_keypair(pub, sec) != 0) {
    return Status::Internal(std::string("zmq_curve_keypair: ") + zmq_strerror(zmq_errno()) +
                            " (libzmq built without CURVE?)");
  }
  return CurveKeyPair{pub, sec};
}

Result<std::string> DerivePublicKey(const std::string& secret_key) {
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(secret_key, "secret key"));
  char pub[kZ85KeyLength + 1] = {};
  if (zmq_curve_public(pub, secret_key.c_str()) != 0) {
    return Status::Internal(std::string("zmq_curve_public: ") + zmq_strerror(zmq_errno()));
  }
  return std::string(pub);
}

Result<std::string> EncodeZ85Key(std::string_view binary_key) {
  if (binary_key.size() != kBinaryKeyLength) {
    return Status::InvalidArgument("a binary CURVE key is 32 bytes, got " + std::to_string(binary_key.size()));
  }
  char out[kZ85KeyLength + 1] = {};
  zmq_z85_encode(out, reinterpret_cast<const uint8_t*>(binary_key.data()), binary_key.size());
  return std::string(out);
}

Result<std::string> DecodeZ85Key(std::string_view z85_key) {
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(z85_key, "key"));
  std::string text(z85_key);
  std::string out(kBinaryKeyLength, '\0');
  if (zmq_z85_decode(reinterpret_cast<uint8_t*>(out.data()), text.c_str()) == nullptr) {
    return Status::InvalidArgument("key: not decodable as Z85");
  }
  return out;
}

Status WriteKeyFiles(const std::string& dir, const CurveKeyPair& keys) {
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(keys.public_key, "public key"));
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(keys.secret_key, "secret key"));
  TROUPE_ASSIGN_OR_RETURN(std::string derived, DerivePublicKey(keys.secret_key));
  if (derived != keys.public_key) {
    return Status::InvalidArgument("public key does not belong to the secret key");
  }
  if (dir.empty()) return Status::InvalidArgument("key directory: empty path");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    // Its parents first (keys generate --out a/b with no a/ yet).
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
    if (ec || (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)) return Status::IoError(Errno(dir));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return Status::IoError(Errno(dir));
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir + ": not a directory");

  const std::string secret_path = dir + "/" + kSecretKeyFileName;
  const std::string public_path = dir + "/" + kPublicKeyFileName;
  TROUPE_RETURN_IF_ERROR(WriteFile(secret_path,
                                   "# Troupe CURVE secret key (Z85) - keep private\n"
                                   "public-key = " +
                                       keys.public_key +
                                       "\n"
                                       "secret-key = " +
                                       keys.secret_key + "\n",
                                   0600, /*exclusive=*/true));
  return WriteFile(public_path, "# Troupe CURVE public key (Z85)\npublic-key = " + keys.public_key + "\n", 0644,
                   /*exclusive=*/false);
}

Status GenerateKeyFiles(const std::string& dir) {
  TROUPE_ASSIGN_OR_RETURN(CurveKeyPair keys, GenerateKeyPair());
  return WriteKeyFiles(dir, keys);
}

Result<CurveKeyPair> ReadSecretKeyFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such key file");
    return Status::IoError(Errno(path));
  }
  if ((st.st_mode & 077) != 0) {
    std::ostringstream mode;
    mode << std::oct << (st.st_mode & 0777);
    return Status::InvalidArgument(path + ": secret key file has mode 0" + mode.str() +
                                   "; it must not be readable by others (chmod 600)");
  }
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  TROUPE_ASSIGN_OR_RETURN(std::vector<Entry> entries, ParseEntries(path, text));
  std::map<std::string, const Entry*> by_name;
  for (const Entry& e : entries) {
    if (!by_name.emplace(e.name, &e).second) {
      return Status::Corrupt(path + ":" + std::to_string(e.line) + ": duplicate " + e.name);
    }
  }
  if (by_name.count("secret-key") == 0) return Status::Corrupt(path + ": no secret-key entry");
  CurveKeyPair keys;
  keys.secret_key = by_name["secret-key"]->value;
  TROUPE_ASSIGN_OR_RETURN(keys.public_key, DerivePublicKey(keys.secret_key));
  if (by_name.count("public-key") != 0 && by_name["public-key"]->value != keys.public_key) {
    return Status::Corrupt(path + ": public-key does not belong to secret-key");
  }
  return keys;
}

Result<std::string> ReadPublicKeyFile(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  TROUPE_ASSIGN_OR_RETURN(std::vector<Entry> entries, ParseEntries(path, text));
  const Entry* found = nullptr;
  for (const Entry& e : entries) {
    if (e.name != "public-key") continue;
    if (found != nullptr) return Status::Corrupt(path + ": more than one public-key entry");
    found = &e;
  }
  if (found == nullptr) return Status::Corrupt(path + ": no public-key entry");
  return found->value;
}

Result<std::string> PublicKeyFromArgument(const std::string& value) {
  if (ValidateZ85Key(value, "public key").ok()) return value;
  struct stat st {};
  if (::stat(value.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return ReadPublicKeyFile(value);
  return Status::InvalidArgument("'" + value +
                                 "' is neither a 40-character Z85 public key nor a key file (node.pub) holding one");
}

Result<Allowlist> LoadAllowlist(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such allowlist file or directory");
    return Status::IoError(Errno(path));
  }
  Allowlist list;
  if (!S_ISDIR(st.st_mode)) {
    TROUPE_RETURN_IF_ERROR(AddKeysFromFile(path, &list).status());
  } else {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return Status::IoError(Errno(path));
    std::vector<std::string> names;
    while (const dirent* ent = ::readdir(d)) {
      std::string name = ent->d_name;
      if (EndsWith(name, ".pub")) names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      TROUPE_ASSIGN_OR_RETURN(size_t n, AddKeysFromFile(path + "/" + name, &list));
      if (n == 0) return Status::Corrupt(path + "/" + name + ": no public-key entry");
    }
  }
  if (list.empty()) {
    return Status::InvalidArgument(path +
                                   ": the allowlist names no public key; every peer would "
                                   "be refused");
  }
  return list;
}

}  // namespace troupe::transport
