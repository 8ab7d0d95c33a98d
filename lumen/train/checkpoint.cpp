#include "lumen/train/checkpoint.h"

#include <set>

#include "lumen/core/error.h"
#include "lumen/io/safetensors.h"

namespace lumen::train {

namespace {

constexpr const char* kFormat = "lumen.train.v1";

int64_t parse_counter(const std::string& path, const std::string& name, const std::string& text) {
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  fail("checkpoint '", path, "': counter '", name, "' is '", text, "', not an integer");
}

}  // namespace

void save_checkpoint(const std::string& path, const std::vector<std::pair<std::string, Array>>& tensors,
                     const std::map<std::string, int64_t>& counters, const std::string& optimizer) {
  std::map<std::string, std::string> metadata = {{"format", kFormat}, {"optimizer", optimizer}};
  for (const auto& [name, value] : counters) metadata["counter." + name] = std::to_string(value);
  io::save_safetensors(path, tensors, metadata);
}

Checkpoint load_checkpoint(const std::string& path, const std::vector<std::pair<std::string, Array>>& expected,
                           const std::string& optimizer, const std::vector<std::string>& expected_counters) {
  io::SafetensorsFile file = io::SafetensorsFile::open(path);  // validates header, offsets and size (truncation)
  const auto& meta = file.metadata();
  auto format = meta.find("format");
  if (format == meta.end() || format->second != kFormat) {
    fail("checkpoint '", path, "': not a lumen training checkpoint (metadata format is missing or not '", kFormat, "')");
  }
  auto opt = meta.find("optimizer");
  if (opt == meta.end() || opt->second != optimizer) {
    fail("checkpoint '", path, "': written by optimizer '", opt == meta.end() ? "?" : opt->second, "' but this trainer uses '",
         optimizer, "'");
  }
  Checkpoint out;
  std::set<std::string> wanted;
  for (const auto& [name, like] : expected) {
    wanted.insert(name);
    if (!file.contains(name)) fail("checkpoint '", path, "': has no tensor '", name, "' (the model or optimizer differs)");
    Array a = file.get(name);
    if (a.dtype() != like.dtype() || a.shape() != like.shape()) {
      fail("checkpoint '", path, "': tensor '", name, "' is ", dtype_name(a.dtype()), " ", shape_string(a.shape()),
           " but the trainer holds ", dtype_name(like.dtype()), " ", shape_string(like.shape()));
    }
    out.tensors.emplace_back(name, a.clone());
  }
  for (const io::SafetensorsEntry& e : file.entries()) {
    if (!wanted.count(e.name)) fail("checkpoint '", path, "': has a tensor '", e.name, "' this trainer does not hold");
  }
  for (const std::string& name : expected_counters) {
    auto it = meta.find("counter." + name);
    if (it == meta.end()) fail("checkpoint '", path, "': the counter '", name, "' is missing");
    out.counters[name] = parse_counter(path, name, it->second);
  }
  return out;
}

}  // namespace lumen::train
