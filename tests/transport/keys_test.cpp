// CURVE key files: generated pairs round-trip through disk, the secret file is
// private, malformed keys and files give errors that name the problem.
#include "transport/keys.h"

#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "tests/transport/child_process.h"

namespace troupe::transport {
namespace {

using testing::TempDir;

void WriteText(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

TEST(Keys, GeneratedPairIsValidAndConsistent) {
  auto pair = GenerateKeyPair();
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_TRUE(ValidateZ85Key(pair->public_key, "public").ok());
  EXPECT_TRUE(ValidateZ85Key(pair->secret_key, "secret").ok());
  auto derived = DerivePublicKey(pair->secret_key);
  ASSERT_TRUE(derived.ok());
  EXPECT_EQ(*derived, pair->public_key);
  auto other = GenerateKeyPair();
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->secret_key, pair->secret_key);
}

TEST(Keys, ValidateZ85RejectsWrongLengthAndAlphabet) {
  Status short_key = ValidateZ85Key("abc", "server key");
  EXPECT_EQ(short_key.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_key.message().find("server key"), std::string::npos);
  EXPECT_NE(short_key.message().find("40"), std::string::npos);
  std::string bad(40, 'a');
  bad[7] = '~';  // not in Z85
  Status bad_char = ValidateZ85Key(bad, "k");
  EXPECT_EQ(bad_char.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_char.message().find("character 8"), std::string::npos);
}

TEST(Keys, Z85BinaryRoundTrip) {
  auto pair = GenerateKeyPair();
  ASSERT_TRUE(pair.ok());
  auto binary = DecodeZ85Key(pair->public_key);
  ASSERT_TRUE(binary.ok());
  EXPECT_EQ(binary->size(), kBinaryKeyLength);
  auto text = EncodeZ85Key(*binary);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, pair->public_key);
  EXPECT_FALSE(EncodeZ85Key("short").ok());
}

TEST(Keys, GenerateKeyFilesWritesPrivateSecretAndPublicFile) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/node-a";
  ASSERT_TRUE(GenerateKeyFiles(dir).ok());
  struct stat st {};
  ASSERT_EQ(stat((dir + "/node.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir + "/node.pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);

  auto pair = ReadSecretKeyFile(dir + "/node.key");
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  auto pub = ReadPublicKeyFile(dir + "/node.pub");
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_EQ(*pub, pair->public_key);

  // A node's identity is never replaced by accident.
  Status again = GenerateKeyFiles(dir);
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("already exists"), std::string::npos);
}

TEST(Keys, GenerateKeyFilesMakesMissingParents) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/a/b";  // no a/ yet
  ASSERT_TRUE(GenerateKeyFiles(dir).ok());
  EXPECT_TRUE(ReadPublicKeyFile(dir + "/node.pub").ok());
}

TEST(Keys, APublicKeyArgumentIsTheKeyOrAFileHoldingIt) {
  TempDir tmp;
  ASSERT_TRUE(GenerateKeyFiles(tmp.path() + "/n").ok());
  auto value = [](Result<std::string> r) { return r.ok() ? *r : "error: " + r.status().message(); };
  const std::string key = value(ReadPublicKeyFile(tmp.path() + "/n/node.pub"));
  EXPECT_EQ(value(PublicKeyFromArgument(key)), key);
  EXPECT_EQ(value(PublicKeyFromArgument(tmp.path() + "/n/node.pub")), key);
  EXPECT_EQ(value(PublicKeyFromArgument(tmp.path() + "/n/node.key")), key);
  const std::string bad = value(PublicKeyFromArgument("not-a-key"));
  EXPECT_NE(bad.find("'not-a-key' is neither"), std::string::npos) << bad;
}

TEST(Keys, SecretFileReadableByOthersIsRefused) {
  TempDir tmp;
  ASSERT_TRUE(GenerateKeyFiles(tmp.path()).ok());
  chmod((tmp.path() + "/node.key").c_str(), 0644);
  auto pair = ReadSecretKeyFile(tmp.path() + "/node.key");
  ASSERT_FALSE(pair.ok());
  EXPECT_NE(pair.status().message().find("chmod 600"), std::string::npos);
}

TEST(Keys, MismatchedPublicKeyInSecretFileIsCorrupt) {
  TempDir tmp;
  auto a = GenerateKeyPair();
  auto b = GenerateKeyPair();
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string path = tmp.path() + "/node.key";
  WriteText(path, "public-key = " + b->public_key + "\nsecret-key = " + a->secret_key + "\n", 0600);
  auto pair = ReadSecretKeyFile(path);
  ASSERT_FALSE(pair.ok());
  EXPECT_EQ(pair.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(pair.status().message().find("does not belong"), std::string::npos);
}

TEST(Keys, MalformedFilesNameFileAndLine) {
  TempDir tmp;
  const std::string path = tmp.path() + "/bad.pub";
  WriteText(path, "# comment\n\npublic-key = tooshort\n");
  auto pub = ReadPublicKeyFile(path);
  ASSERT_FALSE(pub.ok());
  EXPECT_EQ(pub.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(pub.status().message().find("bad.pub:3"), std::string::npos) << pub.status().ToString();

  WriteText(path, "colour = blue\n");
  pub = ReadPublicKeyFile(path);
  ASSERT_FALSE(pub.ok());
  EXPECT_NE(pub.status().message().find("unknown entry 'colour'"), std::string::npos);

  EXPECT_EQ(ReadPublicKeyFile(tmp.path() + "/missing.pub").status().code(), StatusCode::kNotFound);
}

TEST(Keys, AllowlistFromDirectoryAndFile) {
  TempDir tmp;
  ASSERT_TRUE(GenerateKeyFiles(tmp.path() + "/a").ok());
  ASSERT_TRUE(GenerateKeyFiles(tmp.path() + "/b").ok());
  auto a = ReadPublicKeyFile(tmp.path() + "/a/node.pub");
  auto b = ReadPublicKeyFile(tmp.path() + "/b/node.pub");
  ASSERT_TRUE(a.ok() && b.ok());

  const std::string dir = tmp.path() + "/allow";
  mkdir(dir.c_str(), 0700);
  WriteText(dir + "/a.pub", "public-key = " + *a + "\n");
  WriteText(dir + "/b.pub", "public-key = " + *b + "\n");
  WriteText(dir + "/README", "not a key, ignored\n");
  auto from_dir = LoadAllowlist(dir);
  ASSERT_TRUE(from_dir.ok()) << from_dir.status().ToString();
  EXPECT_EQ(from_dir->size(), 2u);
  EXPECT_TRUE(from_dir->Contains(*a));
  EXPECT_TRUE(from_dir->Contains(*b));
  auto binary = DecodeZ85Key(*a);
  ASSERT_TRUE(binary.ok());
  EXPECT_TRUE(from_dir->ContainsBinary(*binary));

  const std::string file = tmp.path() + "/allow.txt";
  WriteText(file, "# peers\npublic-key = " + *a + "\n");
  auto from_file = LoadAllowlist(file);
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->size(), 1u);
  EXPECT_FALSE(from_file->Contains(*b));
}

TEST(Keys, AllowlistRefusesSecretsAndEmptiness) {
  TempDir tmp;
  ASSERT_TRUE(GenerateKeyFiles(tmp.path() + "/a").ok());
  auto secret_in_list = LoadAllowlist(tmp.path() + "/a/node.key");
  ASSERT_FALSE(secret_in_list.ok());
  EXPECT_NE(secret_in_list.status().message().find("public keys only"), std::string::npos);

  const std::string empty = tmp.path() + "/empty";
  mkdir(empty.c_str(), 0700);
  auto none = LoadAllowlist(empty);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadAllowlist(tmp.path() + "/nope").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace troupe::transport
