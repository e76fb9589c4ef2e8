// `troupe config check [--files] FILE...`: every problem in node configs
// (cluster/node_config.h), one line each on stdout, exit code 1 when there is
// any; "ok: ..." and 0 otherwise. Several files are checked as one cluster:
// ids, the head, ports, spans and — with --files — models, key files and
// which allowlist must hold which key (cluster/config_check.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app/commands.h"
#include "cluster/config_check.h"

namespace troupe::app {
namespace {

struct ConfigCheckFlags {
  std::vector<std::string> files;
  bool check_files = false;
};

void RunConfigCheck(const ConfigCheckFlags& f) {
  cluster::ConfigCheckOptions options;
  options.files = f.check_files;
  const std::vector<std::string> problems = cluster::CheckNodeConfigs(f.files, options);
  for (const std::string& p : problems) std::cout << p << "\n";
  if (!problems.empty()) {
    std::cout << std::flush;
    std::cerr << "troupe config check: " << problems.size() << " problem(s)" << std::endl;
    return SetExitCode(1);
  }
  std::cout << "ok: " << f.files.size() << " node config(s)" << (f.files.size() > 1 ? " as one cluster" : "")
            << (f.check_files ? ", with the files they name" : "") << ", no problems" << std::endl;
}

}  // namespace

void RegisterConfig(CLI::App& app) {
  CLI::App* config = app.add_subcommand("config", "Node configs (YAML, cluster/node_config.h)");
  config->require_subcommand(1);
  auto f = std::make_shared<ConfigCheckFlags>();
  CLI::App* check = config->add_subcommand(
      "check", "Name every problem in node configs; several files are checked as one cluster (exit 1 on any)");
  check->add_option("files", f->files, "Node config files")->required();
  check->add_flag("--files", f->check_files,
                  "Also check what they name: the model, key files, allowlists (and, for a cluster, which "
                  "allowlist must hold which key)");
  check->callback([f] { RunConfigCheck(*f); });
}

}  // namespace troupe::app
