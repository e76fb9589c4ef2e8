// troupe — the command line. Each subcommand lives in its own file; this file
// only registers them and dispatches.
#include <CLI/CLI.hpp>

#include "app/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Troupe: one large language model across many processes"};
  app.require_subcommand(1);
  troupe::app::RegisterGenerate(app);
  troupe::app::RegisterTokenize(app);
  troupe::app::RegisterChatTemplate(app);
  troupe::app::RegisterScore(app);
  troupe::app::RegisterKeys(app);
  troupe::app::RegisterNode(app);
  troupe::app::RegisterCluster(app);
  troupe::app::RegisterSubmit(app);
  troupe::app::RegisterStatus(app);
  troupe::app::RegisterSession(app);
  troupe::app::RegisterJob(app);
  troupe::app::RegisterBridge(app);
  troupe::app::RegisterDevices(app);
  troupe::app::RegisterAdmin(app);
  troupe::app::RegisterConfig(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return troupe::app::ExitCode();
}
