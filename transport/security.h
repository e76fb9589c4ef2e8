// SecurityConfig: how a node's sockets authenticate — CURVE or plain — and
// the checks that keep plain mode local.
//
// Cluster mode (curve = true): every socket uses CURVE. Listeners (ROUTER) are
// CURVE servers with this node's secret key; connections (DEALER) are CURVE
// clients that know the server's public key. Who may connect is decided by a
// ZapHandler (zap_handler.h) holding `allowlist`; every socket sets
// ZMQ_ZAP_DOMAIN and ZMQ_ZAP_ENFORCE_DOMAIN (option 93) = 1, so a missing
// handler means refusal, never acceptance (fail closed).
//
// Plain mode (curve = false) is for local development: no encryption, no
// authentication. CheckBindAllowed refuses a non-loopback bind in plain mode
// unless `insecure` is set.
//
// Thread-safety: SecurityConfig is a value; the Apply* functions touch only
// the socket they are given, which must be used by one thread at a time.
#pragma once

#include <string>

#include <zmq.hpp>

#include "pipeline/status.h"
#include "transport/keys.h"

namespace troupe::transport {

// The ZAP domain Troupe sockets ask their handler about: node links...
inline constexpr const char* kDefaultZapDomain = "troupe";
// ...and a head's job endpoint, whose allowlist holds client keys (kept
// apart, so a client key opens no node link and a node key no job endpoint).
inline constexpr const char* kJobZapDomain = "troupe-jobs";
// ZMQ_ZAP_ENFORCE_DOMAIN: a draft constant in 4.3.4's headers, accepted by the library.
inline constexpr int kZapEnforceDomainOption = 93;

struct SecurityConfig {
  bool curve = false;
  CurveKeyPair keys;                           // this node's keys (curve only)
  Allowlist allowlist;                         // peers this node accepts (curve only)
  bool insecure = false;                       // allow plain mode on a non-loopback address
  std::string zap_domain = kDefaultZapDomain;  // (curve only)
};

// Plain mode.
SecurityConfig PlainSecurity(bool insecure = false);
// Cluster mode from files: DIR/node.key (or a key file path) and an allowlist
// file or directory (keys.h).
Result<SecurityConfig> CurveSecurityFromFiles(const std::string& key_path, const std::string& allowlist_path);

// OK for a usable config. In curve mode: both keys valid and matching, a
// non-empty allowlist and a ZAP domain. InvalidArgument naming the field.
Status ValidateSecurityConfig(const SecurityConfig& config);

// True for endpoints only this host can reach: ipc://, inproc://, and tcp://
// on 127.0.0.0/8, [::1] or localhost. False for wildcards (*, 0.0.0.0, ::),
// interface names and every other address.
bool IsLoopbackEndpoint(const std::string& endpoint);

// OK when `endpoint` may be bound under `config`: always in curve mode, and in
// plain mode only on a loopback endpoint or with `insecure`. Otherwise
// InvalidArgument with a message telling the user to pass keys or --insecure.
Status CheckBindAllowed(const std::string& endpoint, const SecurityConfig& config);

// Makes `socket` (a listener's ROUTER) a CURVE server with the node's secret
// key and the ZAP options, or leaves it plain. Call before bind().
// InvalidArgument for a bad config; IoError when ZeroMQ refuses an option.
Status ApplyServerSecurity(zmq::socket_t& socket, const SecurityConfig& config);

// Makes `socket` (a DEALER) a CURVE client of the server whose public key is
// `server_public_key`, or leaves it plain (then the key must be empty).
// Call before connect().
Status ApplyClientSecurity(zmq::socket_t& socket, const SecurityConfig& config, const std::string& server_public_key);

}  // namespace troupe::transport
