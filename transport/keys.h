// CURVE keys: generating key pairs, key files on disk, and peer allowlists.
//
// A CURVE key is 32 bytes; everywhere in Troupe it travels as Z85 text,
// exactly 40 characters from the Z85 alphabet (ZeroMQ RFC 32).
//
// Key files are UTF-8 text, one `name = value` entry per line; blank lines and
// lines starting with '#' are ignored, unknown names are an error:
//
//   DIR/node.pub  (mode 0644; share it, put it in the peers' allowlists)
//     # Troupe CURVE public key (Z85)
//     public-key = TMz(j[#y^ZV3snTeRi3YV{Z(c22TwTr:.XfTVMbh
//
//   DIR/node.key  (mode 0600; never leaves the node; this pair is only an example)
//     # Troupe CURVE secret key (Z85) - keep private
//     public-key = TMz(j[#y^ZV3snTeRi3YV{Z(c22TwTr:.XfTVMbh
//     secret-key = x2+N)e&qvISmD]{QT/8Y]=YZ{&WeJa:*W>{dM><4
//
// Reading a secret key file checks that its public key matches the one
// derived from the secret key. An allowlist is a .pub file, a file of several
// `public-key = ...` lines (concatenated .pub files), or a directory whose
// *.pub files are all read.
//
// Thread-safety: free functions, no shared state. Allowlist is a value type,
// immutable once built; safe to read from many threads.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "pipeline/status.h"

namespace troupe::transport {

inline constexpr size_t kZ85KeyLength = 40;     // characters
inline constexpr size_t kBinaryKeyLength = 32;  // bytes
inline constexpr const char* kSecretKeyFileName = "node.key";
inline constexpr const char* kPublicKeyFileName = "node.pub";

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 chars
  std::string secret_key;  // Z85, 40 chars; empty for a public-only identity
};

// The set of peer public keys (Z85) allowed to connect to this node's sockets.
class Allowlist {
 public:
  // InvalidArgument when `z85_key` is not a valid Z85 key.
  Status Add(const std::string& z85_key);
  bool Contains(const std::string& z85_key) const { return keys_.count(z85_key) > 0; }
  // `binary_key` is the 32-byte form ZAP requests carry; false for other sizes.
  bool ContainsBinary(std::string_view binary_key) const;
  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }
  const std::set<std::string>& keys() const { return keys_; }

 private:
  std::set<std::string> keys_;
};

// OK when `key` is 40 Z85 characters; InvalidArgument otherwise, naming
// `what` ("server public key", a file name...) and the problem.
Status ValidateZ85Key(std::string_view key, std::string_view what);

// A fresh random key pair (libsodium through zmq_curve_keypair). Internal when
// the library was built without CURVE.
Result<CurveKeyPair> GenerateKeyPair();

// The public key that belongs to a Z85 secret key.
Result<std::string> DerivePublicKey(const std::string& secret_key);

// 32-byte binary key <-> Z85 text. InvalidArgument on a wrong size or alphabet.
Result<std::string> EncodeZ85Key(std::string_view binary_key);
Result<std::string> DecodeZ85Key(std::string_view z85_key);

// Writes DIR/node.key (0600) and DIR/node.pub (0644), creating DIR (0700) if
// missing. Refuses (InvalidArgument) to overwrite an existing node.key so a
// node's identity is never replaced by accident; IoError when the OS refuses.
Status WriteKeyFiles(const std::string& dir, const CurveKeyPair& keys);

// GenerateKeyPair + WriteKeyFiles: the body of `troupe keys generate --out DIR`.
Status GenerateKeyFiles(const std::string& dir);

// Reads a node.key file: both keys, checked against each other. Refuses a file
// readable by group or others (InvalidArgument naming the mode). NotFound,
// Corrupt (bad line, bad key, mismatch) or IoError otherwise.
Result<CurveKeyPair> ReadSecretKeyFile(const std::string& path);

// Reads the single public key of a .pub file (or of a node.key file).
Result<std::string> ReadPublicKeyFile(const std::string& path);

// A public key as an operator gives it (`--server-key`, a peer's
// `public_key` in YAML): the 40-character Z85 key itself, or the path of a
// .pub (or node.key) file holding it. InvalidArgument naming the value when
// it is neither; the file's own errors otherwise.
Result<std::string> PublicKeyFromArgument(const std::string& value);

// Loads an allowlist from a file or a directory of *.pub files (see above).
// An allowlist that names no key is an error (InvalidArgument): an empty
// allowlist would refuse everyone, which is never what the caller meant.
Result<Allowlist> LoadAllowlist(const std::string& path);

}  // namespace troupe::transport
