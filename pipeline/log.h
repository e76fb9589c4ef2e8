// Log: what a node process says on stderr, one line per event.
//
//   format text  "troupe node NODE: message"            (for people)
//   format json  {"time": "2026-11-26T06:40:12.345Z", "level": "info",
//                 "node": "shard-1", "msg": "...", "job_id": "12",
//                 "session_id": "4700..."}               (for log shippers;
//                 ids only when known, as strings: they are 64-bit)
//   format auto  text when stderr is a terminal, else json (the default)
//
// Lines below the configured level are dropped. Never log a key or a
// prompt. Thread-safe: each line is one write(2) to stderr.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "pipeline/status.h"

namespace troupe::logging {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class Format { kAuto, kText, kJson };

Result<Level> ParseLevel(std::string_view name);    // debug, info, warn, error
Result<Format> ParseFormat(std::string_view name);  // auto, text, json

// For the whole process; before the first line (until then: node "troupe",
// info, auto).
void Configure(std::string node, Level min, Format format);

// The job and session a line is about (0: none).
struct Ids {
  uint64_t job_id = 0, session_id = 0;
};

// The line as it would be written (no newline), or "" when `level` is below
// the minimum. `unix_ms` is its time.
std::string FormatLine(Level level, std::string_view msg, Ids ids, int64_t unix_ms);
void Write(Level level, std::string_view msg, Ids ids = {});

// Its arguments streamed into one string: Cat("layers ", 0, "-", 10).
template <class... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

inline void Info(std::string_view msg, Ids ids = {}) { Write(Level::kInfo, msg, ids); }
inline void Warn(std::string_view msg, Ids ids = {}) { Write(Level::kWarn, msg, ids); }
inline void Error(std::string_view msg, Ids ids = {}) { Write(Level::kError, msg, ids); }

}  // namespace troupe::logging
