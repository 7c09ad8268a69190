// Fuzzes the part.json files `slimpack merge` reads from the machines of a
// split conversion (shard_writer::MergeParts, formats/shard/writer/
// merge_parts.h): the input is up to three part files separated by
// "\0PART\0", written as part.json of directories p1..p3 in the scratch
// directory, then merged into an output there. The shard files they name
// do not exist, so a merge that accepts the parts fails when it copies the
// first one; everything before (the parts' JSON, their agreement, shard
// ownership) is what runs on the fuzzed bytes.
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <system_error>
#include <string>
#include <vector>

#include "formats/shard/writer/merge_parts.h"
#include "fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  static const std::string kSeparator("\0PART\0", 6);
  std::vector<std::string> texts;
  size_t at = 0;
  while (texts.size() < 2) {
    const size_t next = input.find(kSeparator, at);
    if (next == std::string::npos) break;
    texts.push_back(input.substr(at, next - at));
    at = next + kSeparator.size();
  }
  texts.push_back(input.substr(at));
  // The scratch directory: where WriteScratchFile puts a file.
  const std::string probe = slimpack::fuzz::WriteScratchFile("probe", data, 0);
  const std::string dir = probe.substr(0, probe.rfind('/'));
  std::vector<std::string> parts;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string name = "p" + std::to_string(i + 1);
    ::mkdir((dir + "/" + name).c_str(), 0700);
    const std::string file = slimpack::fuzz::WriteScratchFile(
        name + "/part.json", reinterpret_cast<const uint8_t*>(texts[i].data()), texts[i].size());
    parts.push_back(file.substr(0, file.rfind('/')));
  }
  // Parts that list no file at all merge into a (tiny) artifact: removed
  // so the next input starts from an absent output.
  (void)slimpack::shard_writer::MergeParts(parts, dir + "/merged", /*force=*/false);
  std::error_code ec;
  std::filesystem::remove_all(dir + "/merged", ec);
  return 0;
}
