// `troupe session list|close --endpoint EP`: the head's kept sessions (see
// `troupe submit --session NAME --keep`).
//   list [--json]: one line per live session — "NAME context_tokens/max_length
//     jobs=N idle=S expires_in=S [running=JOB]"; --json: {"sessions": [{"name":
//     ..., "context_tokens": N, "max_length": M, "jobs": N, "running_job": J,
//     "idle_seconds": S, "expires_in_seconds": S, "route": [node, ...]}, ...]}.
//   close NAME: frees its caches at once (its running job ends cancelled);
//     an unknown, expired or closed name is an error saying which.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "app/commands.h"
#include "client/job_client.h"

namespace troupe::app {
namespace {

struct SessionFlags {
  HeadFlags head;
  bool json = false;
  std::string name;
};

void RunList(const SessionFlags& f) {
  auto client = ConnectToHead(f.head);
  if (!client.ok()) return Fail(client.status().ToString());
  auto list = (*client)->KeptSessions();
  if (!list.ok()) return Fail(list.status().message());
  nlohmann::ordered_json sessions = nlohmann::ordered_json::array();
  for (const v1::KeptSession& s : list->sessions()) {
    if (!f.json) {
      std::cout << s.name() << " " << s.context_tokens() << "/" << s.max_length() << " jobs=" << s.jobs()
                << " idle=" << s.idle_seconds() << " expires_in=" << s.expires_in_seconds();
      if (s.running_job() != 0) std::cout << " running=" << s.running_job();
      std::cout << "\n";
      continue;
    }
    sessions.push_back({{"name", s.name()},
                        {"context_tokens", s.context_tokens()},
                        {"max_length", s.max_length()},
                        {"jobs", s.jobs()},
                        {"running_job", s.running_job()},
                        {"idle_seconds", s.idle_seconds()},
                        {"expires_in_seconds", s.expires_in_seconds()},
                        {"route", std::vector<std::string>(s.route().begin(), s.route().end())}});
  }
  if (f.json) std::cout << nlohmann::ordered_json{{"sessions", sessions}}.dump();
  std::cout << std::flush;
  if (f.json) std::cout << std::endl;
}

void RunClose(const SessionFlags& f) {
  auto client = ConnectToHead(f.head);
  if (!client.ok()) return Fail(client.status().ToString());
  if (Status st = (*client)->CloseKeptSession(f.name); !st.ok()) return Fail(st.message());
  std::cout << "closed kept session '" << f.name << "'" << std::endl;
}

}  // namespace

void RegisterSession(CLI::App& app) {
  auto flags = std::make_shared<SessionFlags>();
  CLI::App* cmd = app.add_subcommand("session", "List or close a cluster's kept sessions");
  cmd->require_subcommand(1);
  CLI::App* list = cmd->add_subcommand("list", "The head's live kept sessions");
  AddHeadFlags(list, &flags->head);
  list->add_flag("--json", flags->json, "One JSON object");
  list->callback([flags] { RunList(*flags); });
  CLI::App* close = cmd->add_subcommand("close", "Close a kept session now, freeing its caches");
  AddHeadFlags(close, &flags->head);
  close->add_option("name", flags->name, "The session's name")->required();
  close->callback([flags] { RunClose(*flags); });
}

}  // namespace troupe::app
