// `troupe keys generate --out DIR`: writes a new CURVE key pair for a node —
// DIR/node.key (secret, mode 0600) and DIR/node.pub (share it; peers list it
// in their allowlists). Refuses to replace an existing node.key.

#include <iostream>
#include <memory>

#include "app/commands.h"
#include "transport/keys.h"

namespace troupe::app {
namespace {

void RunKeysGenerate(const std::string& dir) {
  Status st = transport::GenerateKeyFiles(dir);
  if (!st.ok()) return Fail(st.ToString());
  auto pub = transport::ReadPublicKeyFile(dir + "/" + transport::kPublicKeyFileName);
  if (!pub.ok()) return Fail(pub.status().ToString());
  std::cout << "wrote " << dir << "/" << transport::kSecretKeyFileName << " (secret, 0600) and " << dir << "/"
            << transport::kPublicKeyFileName << "\n"
            << "public key: " << *pub << std::endl;
}

}  // namespace

void RegisterKeys(CLI::App& app) {
  CLI::App* keys = app.add_subcommand("keys", "CURVE keys for cluster mode");
  keys->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  CLI::App* generate = keys->add_subcommand("generate", "Write a new key pair: DIR/node.key (0600) and DIR/node.pub");
  generate->add_option("--out", *dir, "Directory for the key files (created if missing)")->required();
  generate->callback([dir] { RunKeysGenerate(*dir); });
}

}  // namespace troupe::app
