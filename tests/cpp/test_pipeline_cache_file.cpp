// The persisted pipeline files: the key list's text format and the file round trip.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <string>

#include "vkml/runtime/pipeline_cache_file.h"

namespace vkml::test {
namespace {

namespace pcf = pipeline_cache_file;

TEST(PipelineCacheFile, KeysRoundTrip) {
  pcf::Keys keys;
  keys.emplace_back("gemm_f32", SpecConstants{64, 64, 16, 256});
  keys.emplace_back("gemm_coopmat_f16", SpecConstants({128, 128, 32, 128, 16, 16, 16, 32}, 32));
  keys.emplace_back("elementwise_i32", SpecConstants{-2147483647 - 1, 0, 2147483647});
  keys.emplace_back("no_constants", SpecConstants{});
  std::string text = pcf::format_keys(keys);
  EXPECT_EQ(text.substr(0, text.find('\n')), "gemm_f32 4 64 64 16 256");
  EXPECT_NE(text.find("gemm_coopmat_f16 8 128 128 32 128 16 16 16 32 sg 32\n"), std::string::npos);
  pcf::Keys back = pcf::parse_keys(text);
  ASSERT_EQ(back.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(back[i].first, keys[i].first);
    EXPECT_EQ(back[i].second, keys[i].second) << keys[i].first;
  }
}

TEST(PipelineCacheFile, MalformedLinesAreSkipped) {
  pcf::Keys keys = pcf::parse_keys(
      "ok 1 5\n"
      "too_many 13 1 2 3 4 5 6 7 8 9 10 11 12 13\n"  // more constants than a key holds
      "short 3 1 2\n"
      "not_a_number 1 x\n"
      "bad_tag 1 5 zz 32\n"
      "trailing 1 5 sg 32 7\n"
      "\n"
      "with_sg 2 1 2 sg 64");  // no final newline
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].first, "ok");
  EXPECT_EQ(keys[0].second, SpecConstants{5});
  EXPECT_EQ(keys[1].first, "with_sg");
  EXPECT_EQ(keys[1].second, SpecConstants({1, 2}, 64));
}

TEST(PipelineCacheFile, WriteThenReadBinary) {
  auto dir = std::filesystem::temp_directory_path() / ("vkml_pcf_" + std::to_string(::getpid())) /
             "nested";
  std::string path = (dir / "cache.bin").string();
  std::string data("\0\x01\xff binary\n", 11);
  ASSERT_TRUE(pcf::write(path, data));  // creates the folders
  EXPECT_EQ(pcf::read(path).value_or("missing"), data);
  ASSERT_TRUE(pcf::write(path, "shorter"));  // replaces the whole file
  EXPECT_EQ(pcf::read(path).value_or("missing"), "shorter");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporaries
  std::filesystem::remove_all(dir.parent_path());
  EXPECT_FALSE(pcf::read(path).has_value());
  EXPECT_FALSE(pcf::write("/proc/vkml_cannot_write_here/cache.bin", data));
}

}  // namespace
}  // namespace vkml::test
