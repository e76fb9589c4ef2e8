// Node configs: YAML in, YAML out, and errors that name the bad key.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cluster/node_config.h"

namespace troupe::cluster {
namespace {

TEST(NodeConfigTest, ParsesEveryKey) {
  const std::string yaml = R"(
id: shard-1
roles: [shard]
layers: [10, 20]
model: models/m.gguf
threads: 2
cache_budget_mb: 64
idle_timeout_seconds: 30
burst_wait_ms: 0.25
endpoints:
  listen: tcp://127.0.0.1:0
  advertise: tcp://10.0.0.5:5601
security:
  curve: true
  secret_key: keys/node.key
  allowlist: keys/allow
head: head
peers:
  - {id: head, endpoint: "tcp://127.0.0.1:5600", public_key: "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"}
  - {id: shard-2, layers: [20, 30], endpoint: "tcp://127.0.0.1:5602"}
ready_file: run/ready.json
parent_pid: 42
)";
  auto c = ParseNodeConfig(yaml, "/base", "test");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->id, "shard-1");
  EXPECT_TRUE(c->shard);
  EXPECT_FALSE(c->head);
  EXPECT_EQ(c->layer_begin, 10);
  EXPECT_EQ(c->layer_end, 20);
  EXPECT_EQ(c->model, "/base/models/m.gguf");
  EXPECT_EQ(c->cache_budget_bytes, uint64_t{64} << 20);
  EXPECT_EQ(c->burst_wait_ms, 0.25);
  EXPECT_EQ(c->listen, "tcp://127.0.0.1:*");
  EXPECT_EQ(c->advertise, "tcp://10.0.0.5:5601");
  EXPECT_TRUE(c->curve);
  EXPECT_EQ(c->secret_key_file, "/base/keys/node.key");
  EXPECT_EQ(c->head_id, "head");
  ASSERT_EQ(c->peers.size(), 2u);
  EXPECT_EQ(c->peers[0].public_key, "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
  EXPECT_TRUE(c->peers[1].shard);
  EXPECT_EQ(c->peers[1].layer_begin, 20);
  EXPECT_EQ(c->ready_file, "/base/run/ready.json");
  EXPECT_EQ(c->parent_pid, 42);

  // Round trip through the writer.
  auto again = ParseNodeConfig(NodeConfigToYaml(*c), "/elsewhere", "round trip");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->peers[0].public_key, c->peers[0].public_key);
  EXPECT_EQ(again->model, c->model);
  EXPECT_EQ(again->layer_end, 20);
  EXPECT_EQ(again->cache_budget_bytes, c->cache_budget_bytes);
  EXPECT_EQ(again->burst_wait_ms, 0.25);
}

TEST(NodeConfigTest, NamesTheBadKey) {
  auto bad = [](const std::string& yaml) {
    auto c = ParseNodeConfig(yaml, "", "x.yaml");
    EXPECT_FALSE(c.ok()) << yaml;
    return c.ok() ? std::string() : c.status().message();
  };
  EXPECT_NE(bad("id: a\nroles: [shard]\nmodel: m\n").find("layers"), std::string::npos);
  EXPECT_NE(bad("id: a\nroles: [shard]\nlayers: [5, 5]\nmodel: m\n").find("layers"), std::string::npos);
  EXPECT_NE(bad("id: a\nroles: [chef]\nmodel: m\n").find("chef"), std::string::npos);
  EXPECT_NE(bad("id: a\nroles: [head]\nmodel: m\ncolour: red\n").find("colour"), std::string::npos);
  EXPECT_NE(bad("id: a\nroles: [shard]\nlayers: [0, 1]\nmodel: m\nhead: h\npeers: [{id: h}]\namateur_model: s\n")
                .find("amateur_model"),
            std::string::npos);
  EXPECT_NE(bad("id: a\nroles: [head]\nmodel: m\nsecurity: {curve: true}\n").find("secret_key"), std::string::npos);
  EXPECT_NE(bad("id: a\nroles: [shard]\nlayers: [0, 1]\nmodel: m\nhead: h\n").find("head"), std::string::npos);
  EXPECT_NE(bad("[1, 2]").find("mapping"), std::string::npos);
  EXPECT_NE(bad("id: a\nroles: [head]\nmodel: m\nburst_wait_ms: -1\n").find("burst_wait_ms"), std::string::npos);
  // A stray CR (the file's last line, saved with CRLF) would not survive being written back.
  EXPECT_NE(bad("id: a\nroles: [head]\nmodel: m.gguf\r").find("model: contains control character 13"),
            std::string::npos);
  EXPECT_EQ(ParseNodeConfig("id: a\nroles: [head]\nmodel: m\n", "", "x.yaml")->burst_wait_ms, 1.0);  // the default
  // Every address bound and none advertised: peers would dial 0.0.0.0.
  for (const char* any : {"tcp://0.0.0.0:5601", "tcp://*:5601", "tcp://[::]:5601"}) {
    const std::string why = bad(std::string("id: a\nroles: [head]\nmodel: m\nendpoints: {listen: \"") + any + "\"}\n");
    EXPECT_NE(why.find("set endpoints: advertise"), std::string::npos) << why;
  }
  EXPECT_TRUE(ParseNodeConfig("id: a\nroles: [head]\nmodel: m\nendpoints: {listen: \"tcp://0.0.0.0:5601\", "
                              "advertise: \"tcp://10.0.0.5:5601\"}\n",
                              "", "x.yaml")
                  .ok());
  // A peer's public_key that is neither a key nor a key file.
  EXPECT_NE(bad("id: a\nroles: [head]\nmodel: m\npeers: [{id: s, public_key: nope}]\n").find("public_key"),
            std::string::npos);
}

TEST(NodeConfigTest, HttpListenOfAHead) {
  const std::string yaml = R"(
id: head
roles: [head]
model: m.gguf
endpoints:
  jobs: tcp://127.0.0.1:0
  http: 127.0.0.1:0
)";
  auto c = ParseNodeConfig(yaml, "/base", "test");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->http_listen, "127.0.0.1:0");
  auto again = ParseNodeConfig(NodeConfigToYaml(*c), "/base", "round trip");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->http_listen, "127.0.0.1:0");

  std::string host;
  int port = -1;
  ASSERT_TRUE(ParseHostPort("http://[::1]:8080/", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 8080);
  EXPECT_FALSE(ParseHostPort("localhost", &host, &port).ok());
  EXPECT_FALSE(ParseHostPort("localhost:99999", &host, &port).ok());

  auto bad = ParseNodeConfig("id: h\nroles: [head]\nmodel: m\nendpoints: {http: 'nope'}\n", "", "x.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("endpoints: http"), std::string::npos) << bad.status().ToString();
  auto shard = ParseNodeConfig("id: s\nroles: [shard]\nlayers: [0, 1]\nmodel: m\nendpoints: {http: '127.0.0.1:0'}\n",
                               "", "x.yaml");
  ASSERT_FALSE(shard.ok());
  EXPECT_NE(shard.status().message().find("only a head"), std::string::npos) << shard.status().ToString();
}

TEST(NodeConfigTest, AmateurModelOnAHead) {
  auto c = ParseNodeConfig("id: head\nroles: [head]\nmodel: m.gguf\namateur_model: small/a.gguf\n", "/base", "test");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->amateur_model, "/base/small/a.gguf");
  auto again = ParseNodeConfig(NodeConfigToYaml(*c), "/elsewhere", "round trip");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->amateur_model, "/base/small/a.gguf");
  auto none = ParseNodeConfig("id: head\nroles: [head]\nmodel: m.gguf\n", "/base", "test");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->amateur_model.empty());
  EXPECT_EQ(NodeConfigToYaml(*none).find("amateur_model"), std::string::npos);
}

TEST(NodeConfigTest, KeysOfAHeadsDoors) {
  const std::string yaml = R"(
id: head
roles: [head]
model: m.gguf
api_keys: ["sk-one-0123456789", "sk-two-0123456789"]
api_key_file: keys/api.txt
admin_key_file: keys/admin.txt
endpoints:
  jobs: tcp://127.0.0.1:0
  http: 127.0.0.1:0
security:
  curve: true
  secret_key: keys/head/node.key
  allowlist: keys/allowlist
  client_allowlist: keys/clients
  job_curve: true
)";
  auto c = ParseNodeConfig(yaml, "/base", "test");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->api_keys, (std::vector<std::string>{"sk-one-0123456789", "sk-two-0123456789"}));
  EXPECT_EQ(c->api_key_file, "/base/keys/api.txt");
  EXPECT_EQ(c->admin_key_file, "/base/keys/admin.txt");
  EXPECT_EQ(c->client_allowlist, "/base/keys/clients");
  EXPECT_TRUE(c->job_curve);
  EXPECT_TRUE(JobEndpointCurve(*c));  // on loopback, by job_curve
  auto again = ParseNodeConfig(NodeConfigToYaml(*c), "/elsewhere", "round trip");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->api_keys, c->api_keys);
  EXPECT_EQ(again->api_key_file, c->api_key_file);
  EXPECT_EQ(again->admin_key_file, c->admin_key_file);
  EXPECT_EQ(again->client_allowlist, c->client_allowlist);
  EXPECT_TRUE(again->job_curve);

  NodeConfig plain_jobs = *c;
  plain_jobs.job_curve = false;
  EXPECT_FALSE(JobEndpointCurve(plain_jobs));  // loopback stays plain
  plain_jobs.job_listen = "tcp://10.0.0.5:5600";
  EXPECT_TRUE(JobEndpointCurve(plain_jobs));  // elsewhere CURVE

  auto shard = ParseNodeConfig("id: s\nroles: [shard]\nlayers: [0, 1]\nmodel: m\napi_key_file: k.txt\n", "", "x.yaml");
  ASSERT_FALSE(shard.ok());
  EXPECT_NE(shard.status().message().find("are for a head"), std::string::npos) << shard.status().ToString();
  auto no_curve = ParseNodeConfig("id: h\nroles: [head]\nmodel: m\nsecurity: {job_curve: true}\n", "", "x.yaml");
  ASSERT_FALSE(no_curve.ok());
  EXPECT_NE(no_curve.status().message().find("job_curve needs curve"), std::string::npos);
}

TEST(NodeConfigTest, AJoiningShardWithLayersAuto) {
  const std::string key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  auto c = ParseNodeConfig(
      "id: s\nroles: [shard]\nlayers: auto\nmemory_budget_mb: 2048\nmodel: m\n"
      "join: tcp://10.0.0.1:5601\nhead_public_key: \"" +
          key + "\"\n",
      "", "x.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->layers_auto);
  EXPECT_EQ(c->memory_budget_bytes, uint64_t{2048} << 20);
  EXPECT_EQ(c->head_id, "head");
  const PeerConfig* head = c->FindPeer("head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->endpoint, "tcp://10.0.0.1:5601");
  EXPECT_EQ(head->public_key, key);
  // Written out and read back: the same.
  auto back = ParseNodeConfig(NodeConfigToYaml(*c), "", "y.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << NodeConfigToYaml(*c);
  EXPECT_TRUE(back->layers_auto);
  EXPECT_EQ(back->memory_budget_bytes, c->memory_budget_bytes);
  EXPECT_EQ(back->FindPeer("head")->endpoint, "tcp://10.0.0.1:5601");

  auto bad = [](const std::string& yaml) {
    auto r = ParseNodeConfig(yaml, "", "x.yaml");
    EXPECT_FALSE(r.ok()) << yaml;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(bad("id: s\nroles: [shard]\nlayers: auto\nmodel: m\n").find("needs the head"), std::string::npos);
  EXPECT_NE(bad("id: s\nroles: [shard]\nlayers: sometimes\nmodel: m\n").find("or auto"), std::string::npos);
  EXPECT_NE(bad("id: s\nroles: [shard]\nlayers: [0, 2]\nmodel: m\njoin: 10.0.0.1:5601\n").find("tcp://"),
            std::string::npos);
  EXPECT_NE(bad("id: s\nroles: [shard]\nlayers: [0, 2]\nmodel: m\nhead_public_key: k\n").find("join"),
            std::string::npos);
  EXPECT_NE(bad("id: s\nroles: [shard]\nlayers: [0, 2]\nmodel: m\njoin: tcp://h:1\nhead_public_key: nope\n")
                .find("head_public_key"),
            std::string::npos);
  // CURVE without the head's key: it could never dial the head.
  EXPECT_NE(bad("id: s\nroles: [shard]\nlayers: auto\nmodel: m\njoin: tcp://h:1\n"
                "security: {curve: true, secret_key: k, allowlist: a}\n")
                .find("no public_key"),
            std::string::npos);
}

TEST(NodeConfigTest, ValidateNodeConfigChecksACodeBuiltConfig) {
  NodeConfig c;
  c.id = "s";
  c.shard = true;
  c.model = "m";
  c.layers_auto = true;
  EXPECT_FALSE(ValidateNodeConfig(c, "flags").ok());  // no head to ask
  ASSERT_TRUE(JoinHead(&c, "tcp://127.0.0.1:5601", "").ok());
  EXPECT_TRUE(ValidateNodeConfig(c, "flags").ok());
  c.listen = "tcp://0.0.0.0:*";
  EXPECT_NE(ValidateNodeConfig(c, "flags").message().find("advertise"), std::string::npos);
}

TEST(NodeConfigTest, NamesEveryProblemNotOnlyTheFirst) {
  const std::string yaml = R"(
id: a
roles: [shard, chef]
layers: [5, 2]
colour: red
threads: -1
endpoints: {listen: "tcp://0.0.0.0:5601", port: 5601}
security: {curve: true, secret: x}
)";
  const std::vector<std::string> problems = ParseNodeConfigProblems(yaml, "", "x.yaml", nullptr);
  std::string all;
  for (const std::string& p : problems) all += p + "\n";
  for (const char* what : {"unknown key 'colour'", "unknown role 'chef'", "layers: begin 5 >= end 2",
                           "threads: must be >= 0", "endpoints: unknown key 'port'", "security: unknown key 'secret'",
                           "model: missing", "set endpoints: advertise", "curve needs secret_key and allowlist"}) {
    EXPECT_NE(all.find(what), std::string::npos) << what << " in:\n" << all;
  }
  for (const std::string& p : problems) EXPECT_EQ(p.rfind("x.yaml: ", 0), 0u) << p;
  // ParseNodeConfig still fails with the first.
  auto first = ParseNodeConfig(yaml, "", "x.yaml");
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().message(), problems.front());
}

TEST(NodeConfigTest, ExpandsEnvironmentVariables) {
  setenv("TROUPE_TEST_HOST", "10.1.2.3", 1);
  unsetenv("TROUPE_TEST_UNSET");
  auto c = ParseNodeConfig(
      "id: ${TROUPE_TEST_UNSET:-shard-9}\nroles: [shard]\nlayers: [0, 2]\nmodel: ${TROUPE_TEST_UNSET:-/m/x.gguf}\n"
      "endpoints: {listen: \"tcp://0.0.0.0:5601\", advertise: \"tcp://${TROUPE_TEST_HOST}:5601\"}\n"
      "head: head\npeers: [{id: head, endpoint: \"tcp://h:1\"}]\nready_file: run/$${HOME}-$$.json\n",
      "/base", "env.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->id, "shard-9");
  EXPECT_EQ(c->model, "/m/x.gguf");
  EXPECT_EQ(c->advertise, "tcp://10.1.2.3:5601");
  EXPECT_EQ(c->ready_file, "/base/run/${HOME}-$$.json");
  // Z85 keys hold "$" and "{": never expanded, and written so they read back.
  const std::string key = "ab${cd}fghijklmnopqrstuvwxyz0123456789AB";
  ASSERT_EQ(key.size(), 40u);
  auto with_key = ParseNodeConfig(
      "id: a\nroles: [shard]\nlayers: [0, 2]\nmodel: m\nhead: h\n"
      "peers: [{id: h, endpoint: \"tcp://h:1\", public_key: \"" +
          key + "\"}]\n",
      "/base", "key.yaml");
  ASSERT_TRUE(with_key.ok()) << with_key.status().ToString();
  EXPECT_EQ(with_key->peers[0].public_key, key);
  c->model = "/m/${not-a-var}/x.gguf";
  c->peers[0].public_key = key;
  auto again = ParseNodeConfig(NodeConfigToYaml(*c), "/base", "round trip");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->model, "/m/${not-a-var}/x.gguf");
  EXPECT_EQ(again->peers[0].public_key, key);
  auto unset = ParseNodeConfig("id: a\nroles: [head]\nmodel: ${TROUPE_TEST_UNSET}\n", "", "env.yaml");
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(unset.status().message().find("env.yaml: model: ${TROUPE_TEST_UNSET} is not set"), std::string::npos)
      << unset.status().message();
}

TEST(NodeConfigTest, KeyFilesMayBeLeftUnreadForAConfigCheck) {
  const std::string yaml =
      "id: s\nroles: [shard]\nlayers: [0, 2]\nmodel: m\njoin: tcp://head:5601\nhead_public_key: keys/head/node.pub\n"
      "security: {curve: true, secret_key: keys/s/node.key, allowlist: keys/allowlist}\n"
      "peers: [{id: t, public_key: keys/t/node.pub}]\n";
  EXPECT_FALSE(ParseNodeConfig(yaml, "/nowhere", "k.yaml").ok());  // the .pub files are read
  NodeConfig c;
  EXPECT_TRUE(ParseNodeConfigProblems(yaml, "/nowhere", "k.yaml", &c, /*read_key_files=*/false).empty());
  EXPECT_EQ(c.FindPeer("head")->public_key, "/nowhere/keys/head/node.pub");
  EXPECT_EQ(c.FindPeer("t")->public_key, "/nowhere/keys/t/node.pub");
}

// Found with node_config_fuzz (tests/fuzz/regressions/): a key that is a list
// or mapping made as<std::string>() throw YAML::TypedBadConversion out of the
// parser (std::terminate in `troupe node` and `troupe config check`).
TEST(NodeConfigTest, KeysThatAreListsOrMappingsAreProblems) {
  for (const auto& [yaml, words] : std::vector<std::pair<std::string, std::string>>{
           {"id: a\n? [x]\n: 1\n", "x.yaml: a key that is a list or mapping, not a name"},
           {"id: a\nendpoints:\n  ? {a: b}\n  : 1\n", "x.yaml: endpoints: a key that is a list or mapping"},
           {"id: a\nsecurity: {[curve]: true}\n", "x.yaml: security: a key that is a list or mapping"},
           {"id: a\npeers: [{? [id]: x}]\n", "x.yaml: peers: a peer without id"}}) {
    std::vector<std::string> problems;
    ASSERT_NO_THROW(problems = ParseNodeConfigProblems(yaml, "", "x.yaml", nullptr)) << yaml;
    ASSERT_FALSE(problems.empty()) << yaml;
    EXPECT_NE(problems.front().find(words), std::string::npos) << problems.front();
  }
  // A null key is still read as "null", an unknown key.
  const std::vector<std::string> null_key = ParseNodeConfigProblems("id: a\n~: 1\n", "", "x.yaml", nullptr);
  ASSERT_FALSE(null_key.empty());
  EXPECT_EQ(null_key.front(), "x.yaml: unknown key 'null'");
}

// Found with node_config_fuzz (tests/fuzz/regressions/): memory_budget_mb:
// 1e300 converted 1e300 * 2^20 to uint64_t (undefined behaviour, UBSan:
// "outside the range of representable values"); so did cache_budget_mb. Budgets
// are at most 2^40 MB.
TEST(NodeConfigTest, BudgetsPastTwoToTheFortyMegabytesAreProblems) {
  for (const char* yaml : {"memory_budget_mb: 1e300", "memory_budget_mb: .inf", "memory_budget_mb: .nan",
                           "memory_budget_mb: -1", "cache_budget_mb: 1e300", "cache_budget_mb: .inf"}) {
    auto c = ParseNodeConfig(std::string("id: s\nroles: [shard]\nlayers: auto\nmodel: m\nhead: h\n"
                                         "peers: [{id: h}]\n") +
                                 yaml + "\n",
                             "", "x.yaml");
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.status().message().find("at most 2^40"), std::string::npos) << c.status().message();
  }
  auto most = ParseNodeConfig("id: s\nroles: [shard]\nlayers: [0, 1]\nmodel: m\ncache_budget_mb: 1099511627776\n", "",
                              "x.yaml");
  ASSERT_TRUE(most.ok()) << most.status().ToString();
  EXPECT_EQ(most->cache_budget_bytes, uint64_t{1} << 60);
}

// Found with node_config_fuzz (tests/fuzz/regressions/): an alias is the
// anchored node itself, so nine levels of ten aliases (430 bytes) made the
// ${VAR} expansion walk a billion values (a hang). It walks at most 100000 now,
// and (seen while fixing that) a scalar reached twice is expanded once: before,
// `$${` read back through an alias became `${` and was then expanded as a
// variable.
TEST(NodeConfigTest, AliasesAreWalkedBoundedAndExpandedOnce) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  const std::vector<std::string> problems = ParseNodeConfigProblems(bomb, "", "x.yaml", nullptr);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(std::find_if(problems.begin(), problems.end(),
                         [](const std::string& p) { return p.find("more than 100000 values") != std::string::npos; }),
            problems.end());

  // Found the same way: an alias inside its own anchor is a cycle, which the
  // expansion followed until the stack overflowed.
  const std::vector<std::string> cycle =
      ParseNodeConfigProblems("id: a\nroles: [head]\nmodel: m\napi_keys: &k [x, *k]\n", "", "x.yaml", nullptr);
  ASSERT_FALSE(cycle.empty());
  EXPECT_EQ(cycle.front(), "x.yaml: api_keys: nested more than 64 levels deep (or an alias inside its own anchor)");

  ::unsetenv("TROUPE_TEST_ALIAS");
  auto c =
      ParseNodeConfig("id: h\nroles: [head]\nmodel: &m \"$${TROUPE_TEST_ALIAS:-x}\"\njob_journal: *m\n", "", "x.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model, "${TROUPE_TEST_ALIAS:-x}");
  EXPECT_EQ(c->job_journal, "${TROUPE_TEST_ALIAS:-x}");
}

// Found with node_config_fuzz (tests/fuzz/regressions/): a head with `join:`
// became a peer of itself (JoinHead added the default head id "head", its own),
// which ParseNodeConfig accepted but NodeConfigToYaml's text did not read back
// ("peers: duplicate id 'head'").
TEST(NodeConfigTest, ANodeDoesNotJoinItself) {
  for (const char* yaml : {"id: head\nroles: [head]\nmodel: m\njoin: tcp://127.0.0.1:5601\n",
                           "id: s\nroles: [shard]\nlayers: [0, 1]\nmodel: m\nhead: s\njoin: tcp://10.0.0.1:5601\n"}) {
    auto c = ParseNodeConfig(yaml, "", "x.yaml");
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.status().message().find("is this node's own id: a node does not join itself"), std::string::npos)
        << c.status().message();
  }
  NodeConfig head;
  head.id = "head";
  EXPECT_FALSE(JoinHead(&head, "tcp://127.0.0.1:5601", "").ok());
  EXPECT_TRUE(head.peers.empty());
}

}  // namespace
}  // namespace troupe::cluster
