#include "pipeline/log.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

namespace troupe::logging {
namespace {

struct Config {
  std::string node = "troupe";
  Level min = Level::kInfo;
  bool json = false;
};

std::mutex& Mutex() {
  static std::mutex mu;
  return mu;
}

Config& Current() {
  static Config c{"troupe", Level::kInfo, ::isatty(STDERR_FILENO) == 0};
  return c;
}

const char* Name(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

std::string IsoTime(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char ms[8];
  std::snprintf(ms, sizeof(ms), ".%03dZ", static_cast<int>(unix_ms % 1000));
  return std::string(buf, n) + ms;
}

}  // namespace

Result<Level> ParseLevel(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warn" || name == "warning") return Level::kWarn;
  if (name == "error") return Level::kError;
  return Status::InvalidArgument("log level '" + std::string(name) + "' is not one of debug, info, warn, error");
}

Result<Format> ParseFormat(std::string_view name) {
  if (name == "auto") return Format::kAuto;
  if (name == "text") return Format::kText;
  if (name == "json") return Format::kJson;
  return Status::InvalidArgument("log format '" + std::string(name) + "' is not one of auto, text, json");
}

void Configure(std::string node, Level min, Format format) {
  std::lock_guard<std::mutex> lock(Mutex());
  Config& c = Current();
  c.node = std::move(node);
  c.min = min;
  c.json = format == Format::kJson || (format == Format::kAuto && ::isatty(STDERR_FILENO) == 0);
}

std::string FormatLine(Level level, std::string_view msg, Ids ids, int64_t unix_ms) {
  Config c;
  {
    std::lock_guard<std::mutex> lock(Mutex());
    c = Current();
  }
  if (level < c.min) return "";
  if (!c.json) return "troupe node " + c.node + ": " + std::string(msg);
  nlohmann::ordered_json j;
  j["time"] = IsoTime(unix_ms);
  j["level"] = Name(level);
  j["node"] = c.node;
  j["msg"] = std::string(msg);
  if (ids.job_id) j["job_id"] = std::to_string(ids.job_id);
  if (ids.session_id) j["session_id"] = std::to_string(ids.session_id);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Write(Level level, std::string_view msg, Ids ids) {
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::string line = FormatLine(level, msg, ids, now);
  if (line.empty()) return;
  line += '\n';
  for (size_t at = 0; at < line.size();) {  // one write unless interrupted
    const ssize_t n = ::write(STDERR_FILENO, line.data() + at, line.size() - at);
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
}

}  // namespace troupe::logging
