#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/files.h"
#include "base/hash.h"
#include "base/status.h"

namespace tilesmith {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Status::invalid("not positive: " + std::to_string(v));
  return v;
}

Status chain(int v, int* out) {
  TS_ASSIGN_OR_RETURN(*out, parse_positive(v));
  return {};
}

TEST(Status, CarriesCodeMessageAndContext) {
  Status s = Status::invalid("bad flag");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.with_context("--m").to_string(), "invalid_argument: --m: bad flag");
  EXPECT_EQ(Status().to_string(), "ok");
}

TEST(Result, PropagatesThroughMacros) {
  int out = 0;
  EXPECT_TRUE(chain(3, &out).ok());
  EXPECT_EQ(out, 3);
  Status s = chain(-1, &out);
  EXPECT_EQ(s.message(), "not positive: -1");
}

TEST(Hash, IsStableAndFieldAware) {
  // The value is part of history.csv and cache keys: it must never change.
  EXPECT_EQ(hash_hex(""), "6c62272e07bb014262b821756295c58d");
  EXPECT_NE(Hasher().add_field("ab").add_field("c").hex(), Hasher().add_field("a").add_field("bc").hex());
  EXPECT_EQ(short_hash("x").size(), 16u);
}

TEST(Files, AtomicWriteReplacesWholeFile) {
  auto dir = std::filesystem::temp_directory_path() / ("ts_files_" + std::to_string(::getpid()));
  ASSERT_TRUE(ensure_directory(dir).ok());
  auto path = dir / "state.json";
  ASSERT_TRUE(write_file_atomic(path, "first").ok());
  ASSERT_TRUE(write_file_atomic(path, "second").ok());
  EXPECT_EQ(*read_file(path), "second");
  int leftovers = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) leftovers += e.path().filename() != "state.json";
  EXPECT_EQ(leftovers, 0) << "temp files left behind";
  ASSERT_TRUE(append_line_durable(dir / "log.csv", "a,b\n").ok());
  ASSERT_TRUE(append_line_durable(dir / "log.csv", "c,d\n").ok());
  EXPECT_EQ(*read_file(dir / "log.csv"), "a,b\nc,d\n");
  EXPECT_FALSE(read_file(dir / "missing").ok());
  std::filesystem::remove_all(dir);
}

// Whether a folder can be written is answered without creating anything.
TEST(Files, WritableDirectoryIsCheckedWithoutCreatingIt) {
  auto dir = std::filesystem::temp_directory_path() / ("ts_writable_" + std::to_string(::getpid()));
  ASSERT_TRUE(ensure_directory(dir).ok());
  EXPECT_TRUE(check_writable_directory(dir, "--results").ok());
  EXPECT_TRUE(check_writable_directory(dir / "new" / "deeper", "--results").ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "new"));
  ASSERT_TRUE(write_file_atomic(dir / "afile", "x").ok());
  Status file = check_writable_directory(dir / "afile", "--results");
  EXPECT_EQ(file.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(file.message().find("is a file, not a folder"), std::string::npos) << file.message();
  Status below = check_writable_directory(dir / "afile" / "sub", "--results");
  EXPECT_EQ(below.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(below.message().find("no folder can be created below it"), std::string::npos) << below.message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilesmith
