// The subcommands of `troupe`. Each Register* adds its flags and a callback
// that runs the command and records its exit code (read by ExitCode()).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "client/job_client.h"
#include "pipeline/model/model_options.h"
#include "pipeline/sampling/sampling_params.h"

namespace troupe::app {

void RegisterGenerate(CLI::App& app);
void RegisterTokenize(CLI::App& app);
void RegisterChatTemplate(CLI::App& app);
void RegisterScore(CLI::App& app);
void RegisterKeys(CLI::App& app);
void RegisterNode(CLI::App& app);
void RegisterCluster(CLI::App& app);
void RegisterSubmit(CLI::App& app);
void RegisterStatus(CLI::App& app);
void RegisterSession(CLI::App& app);
void RegisterJob(CLI::App& app);
void RegisterBridge(CLI::App& app);
void RegisterDevices(CLI::App& app);
void RegisterAdmin(CLI::App& app);
void RegisterConfig(CLI::App& app);

int ExitCode();
void SetExitCode(int code);

// The folder of this executable (symlinks resolved), ending in '/'; empty if unknown.
std::string ExecutableDir();

// --model: the flag, else $TROUPE_MODEL, else the model scripts/setup.sh installed.
std::string ResolveModelPath(const std::string& flag);

// Adds the SamplingParams flags (--max-tokens, --temperature, ..., beam
// search's --num-beams, --length-penalty, --early-stopping,
// --num-return-sequences, --seed, --stop) to `cmd`, writing into `params`.
void AddSamplingFlags(CLI::App* cmd, SamplingParams* params);

// Adds how the model runs here — --threads, --backend (auto | kernels |
// torch), --device (cpu | cuda[:N]), --dtype (auto | bf16 | f16 | f32) — to
// `cmd`, writing into `options` (model_options.h says what each means).
void AddModelOptionFlags(CLI::App* cmd, ModelOptions* options);

// How a client command reaches a head's job endpoint: --endpoint,
// --server-key (the key or the head's node.pub), --client-key.
struct HeadFlags {
  std::string endpoint;
  std::string server_key;
  std::string client_key;
};
void AddHeadFlags(CLI::App* cmd, HeadFlags* flags);
Result<std::unique_ptr<client::JobClient>> ConnectToHead(const HeadFlags& flags);

// Prints "troupe: <message>" to stderr and records exit code 1.
void Fail(const std::string& message);

}  // namespace troupe::app
