// Key files, key lookup, the access check and per-key limit accounting
// (http/api_keys.h, http/key_store.h, http/access.h, http/key_usage.h).
#include "http/api_keys.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "http/access.h"
#include "http/key_store.h"
#include "http/key_usage.h"

namespace troupe::http {
namespace {

std::vector<ApiKey> MustParse(const std::string& text) {
  auto keys = ParseKeyFile(text, "keys.txt", KeyRole::kUser);
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  return keys.ok() ? *keys : std::vector<ApiKey>{};
}

std::string MustFail(const std::string& text) {
  auto keys = ParseKeyFile(text, "keys.txt", KeyRole::kUser);
  EXPECT_FALSE(keys.ok()) << text;
  return keys.ok() ? "" : keys.status().message();
}

TEST(KeyFile, ParsesNamesKeysRolesAndLimits) {
  auto keys = MustParse(
      "# the team's keys\n"
      "\n"
      "alice  sk-alice-0123456789  max_concurrent_jobs=2 max_tokens=256  # Alice\n"
      "ops sk-ops-0123456789 role=admin max_request_bytes=1000 max_prompt_tokens=50\r\n"
      "sk-anonymous-0123456789\n");
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0].name, "alice");
  EXPECT_EQ(keys[0].secret, "sk-alice-0123456789");
  EXPECT_EQ(keys[0].role, KeyRole::kUser);
  EXPECT_EQ(keys[0].limits.max_concurrent_jobs, 2);
  EXPECT_EQ(keys[0].limits.max_tokens, 256);
  EXPECT_EQ(keys[0].limits.max_prompt_tokens, 0);
  EXPECT_EQ(keys[0].source, "keys.txt:3");
  EXPECT_EQ(keys[1].role, KeyRole::kAdmin);
  EXPECT_EQ(keys[1].secret, "sk-ops-0123456789");  // the \r is no part of it
  EXPECT_EQ(keys[1].limits.max_request_bytes, 1000);
  EXPECT_EQ(keys[1].limits.max_prompt_tokens, 50);
  EXPECT_EQ(keys[2].name, "key-5");
  EXPECT_EQ(keys[2].secret, "sk-anonymous-0123456789");
}

TEST(KeyFile, TheDefaultRoleAppliesUnlessTheLineSaysOtherwise) {
  auto keys = ParseKeyFile("a sk-aaaaaaaaaa\nb sk-bbbbbbbbbb role=user\n", "admin.txt", KeyRole::kAdmin);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ((*keys)[0].role, KeyRole::kAdmin);
  EXPECT_EQ((*keys)[1].role, KeyRole::kUser);
}

TEST(KeyFile, BadLinesAreNamedWithTheProblem) {
  EXPECT_EQ(MustFail("ok sk-0123456789\nbad sk-0123456789b max_tokens=ten\n"),
            "keys.txt:2: max_tokens: expected an integer >= 1, got 'ten'");
  EXPECT_EQ(MustFail("x sk-0123456789 max_tokens=0"), "keys.txt:1: max_tokens: expected an integer >= 1, got '0'");
  EXPECT_NE(MustFail("x sk-0123456789 colour=blue").find("keys.txt:1: unknown option 'colour'"), std::string::npos);
  EXPECT_NE(MustFail("x sk-0123456789 role=root").find("keys.txt:1: role: expected user or admin"), std::string::npos);
  EXPECT_NE(MustFail("\n\nshort").find("keys.txt:3: a key must be 8 to 512 characters, got 5"), std::string::npos);
  EXPECT_NE(MustFail("a b sk-0123456789").find("keys.txt:1: expected [NAME] KEY"), std::string::npos);
  EXPECT_NE(MustFail("max_tokens=5").find("keys.txt:1: options without a key"), std::string::npos);
  EXPECT_NE(MustFail("x sk-0123456789 max_tokens=5 extra").find("keys.txt:1: 'extra' after the options"),
            std::string::npos);
  EXPECT_NE(MustFail("al!ce sk-0123456789").find("keys.txt:1: name 'al!ce'"), std::string::npos);
  EXPECT_NE(MustFail("x sk-01234\x01"
                     "56789")
                .find("printable ASCII"),
            std::string::npos);
}

TEST(KeyRing, FindsKeysBySecretOnly) {
  auto ring = KeyRing::Build(MustParse("alice sk-alice-0123456789\nbob sk-bob-0123456789 role=admin\n"));
  ASSERT_TRUE(ring.ok());
  ASSERT_NE(ring->Find("sk-bob-0123456789"), nullptr);
  EXPECT_EQ(ring->Find("sk-bob-0123456789")->name, "bob");
  EXPECT_EQ(ring->Find("sk-alice-0123456789")->name, "alice");
  EXPECT_EQ(ring->Find("sk-alice-012345678"), nullptr);  // a prefix
  EXPECT_EQ(ring->Find("sk-alice-01234567890"), nullptr);
  EXPECT_EQ(ring->Find("alice"), nullptr);  // a name is no key
  EXPECT_EQ(ring->Find(""), nullptr);
  EXPECT_EQ(ring->size(), 2u);
  EXPECT_EQ(ring->admins(), 1u);
}

TEST(KeyRing, RefusesRepeatedNamesAndKeysNamingBothLines) {
  auto names = KeyRing::Build(MustParse("a sk-0123456789a\na sk-0123456789b\n"));
  ASSERT_FALSE(names.ok());
  EXPECT_EQ(names.status().message(), "keys.txt:2: the name 'a' is taken already (keys.txt:1)");
  auto secrets = KeyRing::Build(MustParse("a sk-0123456789a\nb sk-0123456789a\n"));
  ASSERT_FALSE(secrets.ok());
  EXPECT_EQ(secrets.status().message(), "keys.txt:2: the same key as keys.txt:1 ('a')");
}

TEST(KeyRing, FlagKeysAreCheckedAndNamed) {
  auto key = FlagKey("sk-from-the-command-line", 2);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->name, "api-key-2");
  EXPECT_EQ(key->role, KeyRole::kUser);
  auto bad = FlagKey("short", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--api-key 1: a key must be 8 to 512"), std::string::npos);
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("troupe-keys-" + std::to_string(::getpid()) + "-" + std::to_string(next_++)))
                .string();
    Write(text);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  void Write(const std::string& text) const { std::ofstream(path_) << text; }
  const std::string& path() const { return path_; }

 private:
  static inline int next_ = 0;
  std::string path_;
};

TEST(KeyStore, ReloadTakesNewKeysAndKeepsTheOldOnesWhenTheFileIsBad) {
  TempFile file("alice sk-alice-0123456789\n");
  TempFile admin("root sk-root-0123456789\n");
  KeySources sources;
  sources.flag_keys = {"sk-flag-0123456789"};
  sources.key_file = file.path();
  sources.admin_key_file = admin.path();
  auto store = KeyStore::Load(sources);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->configured());
  auto ring = (*store)->current();
  EXPECT_EQ(ring->size(), 3u);
  ASSERT_NE(ring->Find("sk-root-0123456789"), nullptr);
  EXPECT_EQ(ring->Find("sk-root-0123456789")->role, KeyRole::kAdmin);
  EXPECT_NE(ring->Find("sk-flag-0123456789"), nullptr);

  file.Write("bob sk-bob-0123456789\n");
  ASSERT_TRUE((*store)->Reload().ok());
  EXPECT_EQ((*store)->current()->Find("sk-alice-0123456789"), nullptr);
  EXPECT_NE((*store)->current()->Find("sk-bob-0123456789"), nullptr);
  EXPECT_NE(ring->Find("sk-alice-0123456789"), nullptr);  // an old snapshot stays valid

  file.Write("carol sk-carol-0123456789 max_tokens=-1\n");
  Status st = (*store)->Reload();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(file.path() + ":1: max_tokens"), std::string::npos) << st.message();
  EXPECT_NE((*store)->current()->Find("sk-bob-0123456789"), nullptr);  // still in force
  EXPECT_EQ((*store)->current()->Find("sk-carol-0123456789"), nullptr);
}

TEST(KeyStore, AMissingFileFailsTheLoadNamingIt) {
  KeySources sources;
  sources.key_file = "/nonexistent/keys.txt";
  auto store = KeyStore::Load(sources);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("/nonexistent/keys.txt"), std::string::npos);
}

KeyRing Ring(const std::string& text) {
  auto ring = KeyRing::Build(MustParse(text));
  EXPECT_TRUE(ring.ok());
  return ring.ok() ? *ring : KeyRing();
}

TEST(Access, RoutesNeedWhatTheyChange) {
  EXPECT_EQ(AccessFor("GET", "/health"), Access::kOpen);
  EXPECT_EQ(AccessFor("POST", "/v1/chat/completions"), Access::kUser);
  EXPECT_EQ(AccessFor("GET", "/metrics"), Access::kUser);
  EXPECT_EQ(AccessFor("POST", "/admin/keys/reload"), Access::kAdmin);
  EXPECT_EQ(AccessFor("POST", "/administrator"), Access::kUser);
}

TEST(Access, TheConsolesViewsNeedAnAdminKeyUnlessTheApiListensOnLoopback) {
  // The page holds no data: open. Its views: admin, or open on loopback.
  for (bool loopback : {false, true}) {
    EXPECT_EQ(AccessFor("GET", "/", loopback), Access::kOpen);
    EXPECT_EQ(AccessFor("GET", "/console.js", loopback), Access::kOpen);
    EXPECT_EQ(AccessFor("GET", "/api/v1/nodes", loopback), loopback ? Access::kOpen : Access::kAdmin);
    EXPECT_EQ(AccessFor("GET", "/api/v1/sessions/5/timeline", loopback), loopback ? Access::kOpen : Access::kAdmin);
    // Actions stay admin-only either way.
    EXPECT_EQ(AccessFor("POST", "/api/v1/nodes/shard-1/drain", loopback), Access::kAdmin);
    EXPECT_EQ(AccessFor("POST", "/api/v1/jobs/7/cancel", loopback), Access::kAdmin);
    EXPECT_EQ(AccessFor("POST", "/admin/nodes/shard-1/drain", loopback), Access::kAdmin);
    EXPECT_EQ(AccessFor("POST", "/admin/jobs/7/cancel", loopback), Access::kAdmin);
  }
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.7"));
  EXPECT_FALSE(IsLoopbackHost("::"));
}

TEST(Access, KeysOpenUserRoutesAndOnlyAdminKeysOpenAdminRoutes) {
  const KeyRing ring = Ring("alice sk-alice-0123456789\nops sk-ops-0123456789 role=admin\n");
  const ApiKey* who = nullptr;
  auto missing = RequireAccess(ring, true, "", Access::kUser, &who);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(missing->code, "invalid_api_key");
  EXPECT_EQ(missing->type, "invalid_request_error");
  auto wrong = RequireAccess(ring, true, "Bearer sk-nobody-0123456789", Access::kUser, &who);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto scheme = RequireAccess(ring, true, "Basic sk-alice-0123456789", Access::kUser, &who);
  ASSERT_TRUE(scheme);
  EXPECT_EQ(scheme->status, 401);
  EXPECT_FALSE(RequireAccess(ring, true, "Bearer sk-alice-0123456789", Access::kUser, &who));
  ASSERT_NE(who, nullptr);
  EXPECT_EQ(who->name, "alice");
  auto user_on_admin = RequireAccess(ring, true, "Bearer sk-alice-0123456789", Access::kAdmin, &who);
  ASSERT_TRUE(user_on_admin);
  EXPECT_EQ(user_on_admin->status, 403);
  EXPECT_EQ(user_on_admin->code, "admin_key_required");
  EXPECT_NE(user_on_admin->message.find("admin key"), std::string::npos);
  EXPECT_FALSE(RequireAccess(ring, true, "Bearer sk-ops-0123456789", Access::kAdmin, &who));
  EXPECT_EQ(who->name, "ops");
  EXPECT_FALSE(RequireAccess(ring, true, "Bearer sk-ops-0123456789", Access::kUser, &who));  // admin ⊇ user
  EXPECT_FALSE(RequireAccess(ring, true, "", Access::kOpen, &who));
  EXPECT_EQ(who, nullptr);
}

TEST(Access, WithoutKeysTheApiIsOpenButAdminRoutesAreShut) {
  const KeyRing none;
  const ApiKey* who = nullptr;
  EXPECT_FALSE(RequireAccess(none, false, "", Access::kUser, &who));
  EXPECT_EQ(who, nullptr);
  auto admin = RequireAccess(none, false, "Bearer anything-at-all", Access::kAdmin, &who);
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->status, 403);
  // A configured source without any key lets nobody in (fail closed).
  auto closed = RequireAccess(none, true, "Bearer anything-at-all", Access::kUser, &who);
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->status, 401);
}

TEST(Limits, EachLimitIsRefusedNamingItsValue) {
  ApiKey key = MustParse(
      "alice sk-alice-0123456789 max_tokens=32 max_prompt_tokens=10 max_request_bytes=500 max_concurrent_jobs=1")[0];
  RequestFacts ok;
  ok.body_bytes = 500;
  ok.max_tokens = 32;
  ok.max_tokens_given = true;
  ok.prompt_tokens = 10;
  EXPECT_FALSE(CheckRequestLimits(key, ok));

  RequestFacts big = ok;
  big.body_bytes = 501;
  auto e = CheckRequestLimits(key, big);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 413);
  EXPECT_EQ(e->code, "limit_exceeded");
  EXPECT_EQ(e->param, "max_request_bytes");
  EXPECT_EQ(e->message, "key 'alice': max_request_bytes is 500; the request body has 501 bytes");
  EXPECT_TRUE(CheckRequestBytes(key, 501));
  EXPECT_FALSE(CheckRequestBytes(key, 500));

  RequestFacts tokens = ok;
  tokens.max_tokens = 33;
  e = CheckRequestLimits(key, tokens);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "max_tokens");
  EXPECT_EQ(e->message, "key 'alice': max_tokens is 32; the request asks for max_tokens 33");
  tokens.max_tokens_given = false;  // a default above the limit is lowered, not refused
  EXPECT_FALSE(CheckRequestLimits(key, tokens));

  RequestFacts prompt = ok;
  prompt.prompt_tokens = 11;
  e = CheckRequestLimits(key, prompt);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "max_prompt_tokens");
  EXPECT_EQ(e->message, "key 'alice': max_prompt_tokens is 10; the prompt has 11 tokens");
  prompt.prompt_tokens = -1;  // uncounted: the head decides
  EXPECT_FALSE(CheckRequestLimits(key, prompt));

  ApiError busy = ConcurrencyRefused(key, 1, 1);
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.type, "rate_limit_error");
  EXPECT_EQ(busy.code, "limit_exceeded");
  EXPECT_EQ(busy.message, "key 'alice': max_concurrent_jobs is 1; 1 job(s) running, this request would add 1");
}

TEST(KeyUsage, CountsJobsPerKeyWithinItsLimit) {
  KeyUsage usage;
  auto a1 = usage.TryAcquire("alice", 1, 2);
  ASSERT_NE(a1, nullptr);
  auto a2 = usage.TryAcquire("alice", 1, 2);
  ASSERT_NE(a2, nullptr);
  EXPECT_EQ(usage.TryAcquire("alice", 1, 2), nullptr);  // at the limit
  EXPECT_EQ(usage.running("alice"), 2);
  auto b = usage.TryAcquire("bob", 3, 3);  // another key is untouched
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(usage.running("bob"), 3);
  a1.reset();
  EXPECT_EQ(usage.running("alice"), 1);
  EXPECT_EQ(usage.TryAcquire("alice", 2, 2), nullptr);  // 1 + 2 > 2: nothing taken
  EXPECT_EQ(usage.running("alice"), 1);
  auto a3 = usage.TryAcquire("alice", 1, 2);
  EXPECT_NE(a3, nullptr);
  auto unlimited = usage.TryAcquire("carol", 100, 0);
  EXPECT_NE(unlimited, nullptr);
  a2.reset();
  a3.reset();
  b.reset();
  unlimited.reset();
  EXPECT_EQ(usage.running("alice"), 0);
  EXPECT_EQ(usage.running("bob"), 0);
  EXPECT_EQ(usage.running("carol"), 0);
}

}  // namespace
}  // namespace troupe::http
