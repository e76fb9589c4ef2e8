// The command line is two binaries, side by side in one folder:
//
//   troupe         the front: every command starts here. Those that need no
//                  libtorch (submit, status, job, session, admin, keys,
//                  config, tokenize, chat-template, cluster, bridge) run in
//                  it and start in milliseconds.
//   troupe-engine  the commands that run the model (kEngineCommands below).
//                  Loading libtorch and the ~300 shared libraries a distro
//                  libtorch pulls in costs about a second per process start,
//                  so only these pay it.
//
// The front execs the engine for an engine command with its own argv
// unchanged (argv[0] included, so usage lines and `ps` still say `troupe`).
// `troupe cluster up` starts its nodes as `troupe-engine node`.
#pragma once

#include <string>
#include <string_view>

namespace troupe::app {

struct EngineCommand {
  const char* name;
  const char* description;  // the one line `troupe --help` shows
};

// generate, score, node, devices.
extern const EngineCommand kEngineCommands[4];

// The description of engine command `name` (empty when it is none).
std::string_view EngineCommandDescription(std::string_view name);

// The file name of the engine binary, and its path: beside this executable.
inline constexpr const char* kEngineBinaryName = "troupe-engine";
std::string EnginePath();

// execv(EnginePath(), argv) when argv[1] names an engine command; returns
// false for any other argv. On a failed exec it prints why ("troupe:
// generate runs in troupe-engine, not found beside this binary at PATH: ...")
// and exits 127.
bool ExecEngineFor(int argc, char** argv);

}  // namespace troupe::app
