// troupe — the command line's front (app/engine_commands.h). An engine
// command (generate, score, node, devices) is handed to troupe-engine before
// anything else; the other commands are registered and dispatched here. Each
// subcommand lives in its own file.
#include <CLI/CLI.hpp>

#include <string>

#include "app/commands.h"
#include "app/engine_commands.h"

namespace {

// An engine command in `troupe --help`: ExecEngineFor has taken it before
// parsing, so its flags are the engine's.
void ListEngineCommand(CLI::App& app, const char* name) {
  app.add_subcommand(name, std::string(troupe::app::EngineCommandDescription(name)))->allow_extras();
}

}  // namespace

int main(int argc, char** argv) {
  troupe::app::ExecEngineFor(argc, argv);
  CLI::App app{"Troupe: one large language model across many processes"};
  app.require_subcommand(1);
  ListEngineCommand(app, "generate");
  troupe::app::RegisterTokenize(app);
  troupe::app::RegisterChatTemplate(app);
  ListEngineCommand(app, "score");
  troupe::app::RegisterKeys(app);
  ListEngineCommand(app, "node");
  troupe::app::RegisterCluster(app);
  troupe::app::RegisterSubmit(app);
  troupe::app::RegisterStatus(app);
  troupe::app::RegisterSession(app);
  troupe::app::RegisterJob(app);
  troupe::app::RegisterBridge(app);
  ListEngineCommand(app, "devices");
  troupe::app::RegisterAdmin(app);
  troupe::app::RegisterConfig(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return troupe::app::ExitCode();
}
