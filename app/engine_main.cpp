// troupe-engine — the commands of `troupe` that run the model: generate,
// score, node, devices (app/engine_commands.h). The front execs it with its
// own argv, so usage lines name `troupe`.
#include <CLI/CLI.hpp>

#include "app/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Troupe's engine: the commands that run the model (started by troupe)"};
  app.require_subcommand(1);
  troupe::app::RegisterGenerate(app);
  troupe::app::RegisterScore(app);
  troupe::app::RegisterNode(app);
  troupe::app::RegisterDevices(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return troupe::app::ExitCode();
}
