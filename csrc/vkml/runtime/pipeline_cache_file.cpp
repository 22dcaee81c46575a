#include "vkml/runtime/pipeline_cache_file.h"

#include <unistd.h>
#include <charconv>
#include <cstdio>
#include <filesystem>

namespace vkml::pipeline_cache_file {

namespace {

template <typename T>
void append_number(std::string& out, T v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

// The next space-separated word of `line` (empty at its end).
std::string_view next_word(std::string_view& line) {
  size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  size_t end = std::min(line.find(' '), line.size());
  std::string_view word = line.substr(0, end);
  line.remove_prefix(end);
  return word;
}

template <typename T>
bool parse_number(std::string_view word, T& v) {
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  return ec == std::errc() && end == word.data() + word.size() && !word.empty();
}

bool parse_line(std::string_view line, std::pair<std::string, SpecConstants>& key) {
  std::string_view name = next_word(line);
  SpecConstants& spec = key.second;
  if (name.empty() || !parse_number(next_word(line), spec.count) || spec.count > spec.values.size())
    return false;
  for (uint32_t i = 0; i < spec.count; ++i)
    if (!parse_number(next_word(line), spec.values[i])) return false;
  std::string_view tag = next_word(line);
  if (!tag.empty() && (tag != "sg" || !parse_number(next_word(line), spec.subgroup_size)))
    return false;
  if (!next_word(line).empty()) return false;
  key.first = std::string(name);
  return true;
}

}  // namespace

std::optional<std::string> read(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) data.append(buf, n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  if (!ok) return std::nullopt;
  return data;
}

bool write(const std::string& path, std::string_view data) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = path + ".tmp";
  append_number(tmp, ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = std::fclose(f) == 0 && ok;
  if (ok) std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) {
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

std::string format_keys(const Keys& keys) {
  std::string out;
  for (const auto& [name, spec] : keys) {
    out += name;
    out += ' ';
    append_number(out, spec.count);
    for (uint32_t i = 0; i < spec.count; ++i) {
      out += ' ';
      append_number(out, spec.values[i]);
    }
    if (spec.subgroup_size) {
      out += " sg ";
      append_number(out, spec.subgroup_size);
    }
    out += '\n';
  }
  return out;
}

Keys parse_keys(std::string_view text) {
  Keys keys;
  while (!text.empty()) {
    size_t end = std::min(text.find('\n'), text.size());
    std::pair<std::string, SpecConstants> key;
    if (parse_line(text.substr(0, end), key)) keys.push_back(std::move(key));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return keys;
}

}  // namespace vkml::pipeline_cache_file
