// Node configs (YAML in, YAML out) and the registry's routes.
#include <gtest/gtest.h>

#include "actors/node_config.h"
#include "actors/registry.h"

namespace troupe::actors {
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
  EXPECT_NE(bad("id: a\nroles: [head]\nmodel: m\nsecurity: {curve: true}\n").find("secret_key"), std::string::npos);
  EXPECT_NE(bad("id: a\nroles: [shard]\nlayers: [0, 1]\nmodel: m\nhead: h\n").find("head"), std::string::npos);
  EXPECT_NE(bad("[1, 2]").find("mapping"), std::string::npos);
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

TEST(RegistryTest, RoutableDoesNotTakeATurn) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  EXPECT_FALSE(r.Routable(4, now));
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 2, true, now});
  EXPECT_FALSE(r.Routable(4, now));
  r.Upsert(ShardEntry{"b", "tcp://b", 2, 4, true, now});
  r.Upsert(ShardEntry{"b2", "tcp://b2", 2, 4, true, now});
  EXPECT_TRUE(r.Routable(4, now));
  auto first = r.Route(4, now);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(r.Routable(4, now));
  auto second = r.Route(4, now);
  ASSERT_TRUE(second.ok());
  EXPECT_NE((*first)[1].node_id, (*second)[1].node_id);  // round robin untouched by Routable
}

TEST(RegistryTest, RoutesOverSpansAndRoundRobinsReplicas) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, false, now});
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 30, false, now});
  r.Upsert(ShardEntry{"b2", "tcp://b2", 10, 30, false, now});
  auto first = r.Route(30, now);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].node_id, "a");
  auto second = r.Route(30, now);
  ASSERT_TRUE(second.ok());
  EXPECT_NE((*first)[1].node_id, (*second)[1].node_id);  // replicas in turn
}

TEST(RegistryTest, MissingLayersAndStaleNodesGiveNoRoute) {
  Registry r(std::chrono::seconds(5));
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, false, now});
  auto gap = r.Route(30, now);
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("layer 10"), std::string::npos);
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 30, false, now});
  EXPECT_TRUE(r.Route(30, now).ok());
  EXPECT_FALSE(r.Route(30, now + std::chrono::seconds(6)).ok());  // announces stopped
  r.Upsert(ShardEntry{"c", "tcp://c", 0, 30, true, now});
  EXPECT_TRUE(r.Route(30, now + std::chrono::hours(1)).ok());  // config peers never expire
}

TEST(RegistryTest, HeartbeatsKeepKnownNodesAliveAndSilentOnesExpire) {
  Registry r(std::chrono::seconds(5));
  const auto t0 = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 30, false, t0});
  r.Upsert(ShardEntry{"b", "tcp://b", 0, 30, false, t0});
  r.Upsert(ShardEntry{"fixed", "tcp://f", 0, 30, true, t0});
  r.Touch("a", t0 + std::chrono::seconds(4));
  r.Touch("stranger", t0 + std::chrono::seconds(4));  // joins by announcing, not by heartbeat
  EXPECT_EQ(r.Find("stranger"), nullptr);
  EXPECT_TRUE(r.Expired(t0 + std::chrono::seconds(5)).empty());
  EXPECT_EQ(r.Expired(t0 + std::chrono::seconds(6)), std::vector<std::string>{"b"});
  EXPECT_EQ(r.Expired(t0 + std::chrono::seconds(10)), (std::vector<std::string>{"a", "b"}));
  r.Touch("a", t0);  // a late, older heartbeat does not turn the clock back
  EXPECT_EQ(r.Expired(t0 + std::chrono::seconds(6)), std::vector<std::string>{"b"});
}

}  // namespace
}  // namespace troupe::actors
