#include "transport/security.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "transport/socket_options.h"

namespace troupe::transport {
namespace {

bool StartsWith(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// The host part of "tcp://host:port" with IPv6 brackets removed; empty when
// the endpoint is not of that shape.
std::string TcpHost(const std::string& endpoint) {
  std::string rest = endpoint.substr(6);  // after "tcp://"
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return {};
  std::string host = rest.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

Status SetZapOptions(zmq::socket_t& socket, const SecurityConfig& config) {
  TROUPE_RETURN_IF_ERROR(SetStringOption(socket, ZMQ_ZAP_DOMAIN, config.zap_domain, "ZMQ_ZAP_DOMAIN"));
  return SetIntOption(socket, kZapEnforceDomainOption, 1, "ZMQ_ZAP_ENFORCE_DOMAIN (93)");
}

}  // namespace

SecurityConfig PlainSecurity(bool insecure) {
  SecurityConfig config;
  config.insecure = insecure;
  return config;
}

Result<SecurityConfig> CurveSecurityFromFiles(const std::string& key_path, const std::string& allowlist_path) {
  SecurityConfig config;
  config.curve = true;
  TROUPE_ASSIGN_OR_RETURN(config.keys, ReadSecretKeyFile(key_path));
  TROUPE_ASSIGN_OR_RETURN(config.allowlist, LoadAllowlist(allowlist_path));
  return config;
}

Status ValidateSecurityConfig(const SecurityConfig& config) {
  if (!config.curve) return Status::Ok();
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(config.keys.public_key, "node public key"));
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(config.keys.secret_key, "node secret key"));
  TROUPE_ASSIGN_OR_RETURN(std::string derived, DerivePublicKey(config.keys.secret_key));
  if (derived != config.keys.public_key) {
    return Status::InvalidArgument("node public key does not belong to the node secret key");
  }
  if (config.allowlist.empty()) {
    return Status::InvalidArgument("CURVE needs a non-empty allowlist of peer public keys");
  }
  if (config.zap_domain.empty()) return Status::InvalidArgument("CURVE needs a ZAP domain");
  return Status::Ok();
}

bool IsLoopbackEndpoint(const std::string& endpoint) {
  if (StartsWith(endpoint, "ipc://") || StartsWith(endpoint, "inproc://")) return true;
  if (!StartsWith(endpoint, "tcp://")) return false;
  std::string host = TcpHost(endpoint);
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;  // wildcards, interface names, host names: reachable from elsewhere
}

Status CheckBindAllowed(const std::string& endpoint, const SecurityConfig& config) {
  if (config.curve || config.insecure || IsLoopbackEndpoint(endpoint)) return Status::Ok();
  return Status::InvalidArgument(
      "refusing to bind " + endpoint +
      " without CURVE keys: plain mode is for loopback only (127.0.0.1, ipc://). Give the node "
      "its secret key and a peer allowlist (node config security: curve: true, secret_key, allowlist), "
      "or, to accept unauthenticated, unencrypted traffic from the network, set security: insecure: true "
      "in the node config (cluster up: --insecure)");
}

Status ApplyServerSecurity(zmq::socket_t& socket, const SecurityConfig& config) {
  if (!config.curve) return Status::Ok();
  TROUPE_RETURN_IF_ERROR(ValidateSecurityConfig(config));
  TROUPE_RETURN_IF_ERROR(SetZapOptions(socket, config));
  TROUPE_RETURN_IF_ERROR(SetIntOption(socket, ZMQ_CURVE_SERVER, 1, "ZMQ_CURVE_SERVER"));
  return SetStringOption(socket, ZMQ_CURVE_SECRETKEY, config.keys.secret_key, "ZMQ_CURVE_SECRETKEY");
}

Status ApplyClientSecurity(zmq::socket_t& socket, const SecurityConfig& config, const std::string& server_public_key) {
  if (!config.curve) {
    if (!server_public_key.empty()) {
      return Status::InvalidArgument("a server public key was given but CURVE is off");
    }
    return Status::Ok();
  }
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(config.keys.public_key, "node public key"));
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(config.keys.secret_key, "node secret key"));
  TROUPE_RETURN_IF_ERROR(ValidateZ85Key(server_public_key, "server public key"));
  if (config.zap_domain.empty()) return Status::InvalidArgument("CURVE needs a ZAP domain");
  TROUPE_RETURN_IF_ERROR(SetZapOptions(socket, config));
  TROUPE_RETURN_IF_ERROR(SetStringOption(socket, ZMQ_CURVE_SERVERKEY, server_public_key, "ZMQ_CURVE_SERVERKEY"));
  TROUPE_RETURN_IF_ERROR(SetStringOption(socket, ZMQ_CURVE_PUBLICKEY, config.keys.public_key, "ZMQ_CURVE_PUBLICKEY"));
  return SetStringOption(socket, ZMQ_CURVE_SECRETKEY, config.keys.secret_key, "ZMQ_CURVE_SECRETKEY");
}

}  // namespace troupe::transport
