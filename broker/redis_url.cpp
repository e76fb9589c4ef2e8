#include "broker/redis_url.h"

#include <cctype>
#include <cstdlib>

namespace troupe::broker {
namespace {

Status Bad(const std::string& url, const std::string& why) {
  return Status::InvalidArgument("bad Redis URL '" + url + "': " + why);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes %XX escapes; false on a truncated or non-hex escape.
bool PercentDecode(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = HexValue(in[i + 1]);
    const int lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// A decimal in [lo, hi]; false otherwise (empty, signs, junk, overflow).
bool ParseInt(const std::string& s, int lo, int hi, int* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  const int v = std::atoi(s.c_str());
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

std::string RedisUrl::ToString() const {
  std::string s = "redis://";
  if (!user.empty() || !password.empty()) s += (user.empty() ? "" : user) + ":***@";
  s += (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  s += "/" + std::to_string(db) + "?stream=" + stream + "&group=" + group + "&consumer=" + consumer;
  return s;
}

Result<RedisUrl> ParseRedisUrl(const std::string& url, const std::string& local_host_name) {
  const std::string scheme = "redis://";
  if (url.compare(0, scheme.size(), scheme) != 0) return Bad(url, "it must start with redis://");
  RedisUrl out;
  std::string rest = url.substr(scheme.size());

  std::string query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.resize(q);
  }
  std::string path;
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    path = rest.substr(slash + 1);
    rest.resize(slash);
  }
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    const std::string userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = userinfo.find(':');
    if (colon == std::string::npos) return Bad(url, "credentials must be [user]:password@");
    if (!PercentDecode(userinfo.substr(0, colon), &out.user)) return Bad(url, "bad percent escape in the user");
    if (!PercentDecode(userinfo.substr(colon + 1), &out.password)) {
      return Bad(url, "bad percent escape in the password");
    }
  }

  // host[:port], or [v6]:port.
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) return Bad(url, "unclosed '[' in the host");
    out.host = rest.substr(1, close - 1);
    const std::string after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return Bad(url, "junk after the host's ']'");
      port = after.substr(1);
      if (port.empty()) return Bad(url, "empty port");
    }
  } else {
    const size_t colon = rest.find(':');
    out.host = rest.substr(0, colon);
    if (colon != std::string::npos) {
      port = rest.substr(colon + 1);
      if (port.empty()) return Bad(url, "empty port");
    }
  }
  if (out.host.empty()) return Bad(url, "no host");
  if (!port.empty() && !ParseInt(port, 1, 65535, &out.port)) return Bad(url, "port '" + port + "' is not in 1..65535");
  if (!path.empty() && !ParseInt(path, 0, 1 << 20, &out.db)) return Bad(url, "database '" + path + "' is not a number");

  size_t begin = 0;
  while (begin < query.size()) {
    size_t end = query.find('&', begin);
    if (end == std::string::npos) end = query.size();
    const std::string pair = query.substr(begin, end - begin);
    begin = end + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == std::string::npos) return Bad(url, "query parameter '" + pair + "' has no value");
    const std::string key = pair.substr(0, eq);
    std::string value;
    if (!PercentDecode(pair.substr(eq + 1), &value)) return Bad(url, "bad percent escape in '" + key + "'");
    if (value.empty()) return Bad(url, "empty " + key);
    if (key == "stream") {
      out.stream = value;
    } else if (key == "group") {
      out.group = value;
    } else if (key == "consumer") {
      out.consumer = value;
    } else {
      return Bad(url, "unknown query parameter '" + key + "' (known: stream, group, consumer)");
    }
  }
  if (out.consumer.empty()) out.consumer = "bridge-" + (local_host_name.empty() ? "local" : local_host_name);
  return out;
}

}  // namespace troupe::broker
