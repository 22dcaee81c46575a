#pragma once
// The files that persist pipelines between processes: the driver's pipeline-cache data
// and the list of pipeline keys that the next process creates ahead of use.
//
// Plain C stdio and std::to_chars/from_chars: no locale is involved, and the files are
// the same whatever locale the process runs under.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkml/runtime/pipelines.h"

namespace vkml::pipeline_cache_file {

using Keys = std::vector<std::pair<std::string, SpecConstants>>;

// The whole file, or nothing when it cannot be read.
std::optional<std::string> read(const std::string& path);
// Writes to a temporary beside `path` and renames it over `path`, so that a reader never
// sees half a file; false when that fails (the old file, if any, stays).
bool write(const std::string& path, std::string_view data);

// One key per line: shader name, count, the values, then "sg <size>" when the
// pipeline requires a subgroup size.
std::string format_keys(const Keys& keys);
// The well-formed lines of `text`; others are skipped (a file from another version).
Keys parse_keys(std::string_view text);

}  // namespace vkml::pipeline_cache_file
