#include "lumen/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "lumen/core/error.h"

namespace lumen::io {

namespace {

using Json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the reference implementation's limit
constexpr int kMaxJsonDepth = 64;  // a valid header nests 3 deep; the reference reader stops at 128

struct FileDType {
  const char* name;
  size_t size;
  DType dtype;  // what it is read as (every file dtype has a lumen dtype of the same layout)
};

constexpr FileDType kFileDTypes[] = {
    {"F32", 4, DType::F32}, {"F16", 2, DType::F16}, {"BF16", 2, DType::BF16}, {"I32", 4, DType::I32}, {"I8", 1, DType::I8},
    {"U8", 1, DType::U8},   {"BOOL", 1, DType::Bool}, {"F64", 8, DType::F64},  {"I64", 8, DType::I64},
};

const FileDType* find_dtype(const std::string& name) {
  for (const FileDType& d : kFileDTypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Parses the JSON header, refusing nesting deeper than kMaxJsonDepth (deep
// values would make later recursion, e.g. dump(), overflow the stack) and a
// key repeated within one object (the JSON library would keep the last one).
Json parse_header(const unsigned char* begin, const unsigned char* end, const std::string& path) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) fail("safetensors '", path, "': the header nests deeper than ", kMaxJsonDepth, " levels");
        if (event == Json::parse_event_t::object_start) keys.emplace_back();
        break;
      case Json::parse_event_t::object_end: keys.pop_back(); break;
      case Json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second) {
          fail("safetensors '", path, "': the header repeats the key '", escape_bytes(parsed.get<std::string>()), "'");
        }
        break;
      default: break;
    }
    return true;
  };
  try {
    return Json::parse(begin, end, check);
  } catch (const Json::exception& e) {
    fail("safetensors '", path, "': the header is not valid JSON (", escape_bytes(e.what()), ")");
  }
}

// The reference reader's rule: sorted by offsets, the tensors tile the data
// section exactly — no gaps, no overlaps, nothing after the last one.
void check_tiling(std::vector<const SafetensorsEntry*> entries, size_t data_size, const std::string& path) {
  std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
    return std::make_pair(a->begin, a->end) < std::make_pair(b->begin, b->end);
  });
  size_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry* e : entries) {
    if (e->begin != covered) {
      fail("safetensors '", path, "': tensor '", escape_bytes(e->name), "' starts at byte ", e->begin, " of the data section but ",
           previous ? "'" + escape_bytes(previous->name) + "' ends" : std::string("the section starts"), " at ", covered, " (",
           e->begin < covered ? "overlapping tensors" : "a gap", ")");
    }
    covered = e->end;
    previous = e;
  }
  if (covered != data_size) {
    fail("safetensors '", path, "': the tensors cover ", covered, " bytes but the data section has ", data_size,
         " (trailing bytes after the last tensor)");
  }
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::open(path);
  const size_t size = f.file_->size();
  auto bad = [&](auto&&... parts) { fail("safetensors '", path, "': ", parts...); };
  if (size < 8) bad("the file has ", size, " bytes; a safetensors file starts with an 8-byte header length");
  uint64_t header = read_u64_le(f.file_->data());
  if (header > kMaxHeaderBytes) bad("the header length is ", header, " bytes (limit ", kMaxHeaderBytes, "): not a safetensors file?");
  if (header > size - 8) bad("the header length is ", header, " bytes but the file has only ", size - 8, " after it (truncated?)");
  f.data_start_ = 8 + static_cast<size_t>(header);
  const size_t data_size = size - f.data_start_;

  Json j = parse_header(f.file_->data() + 8, f.file_->data() + f.data_start_, path);
  if (!j.is_object()) bad("the header must be a JSON object of tensors");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const Json& t = it.value();
    if (name == "__metadata__") {
      if (!t.is_object()) bad("__metadata__ must be an object of strings");
      for (auto m = t.begin(); m != t.end(); ++m) {
        if (!m.value().is_string()) bad("__metadata__['", escape_bytes(m.key()), "'] is not a string");
        f.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto where = [&](auto&&... parts) { bad("tensor '", escape_bytes(name), "': ", parts...); };
    if (name.empty() || name.find('\0') != std::string::npos) where("a tensor name must be non-empty and hold no NUL byte");
    if (!t.is_object()) where("expected an object with dtype, shape and data_offsets");
    if (!t.contains("dtype") || !t["dtype"].is_string()) where("missing a string 'dtype'");
    if (!t.contains("shape") || !t["shape"].is_array()) where("missing a 'shape' list");
    if (!t.contains("data_offsets") || !t["data_offsets"].is_array() || t["data_offsets"].size() != 2) {
      where("missing 'data_offsets' [begin, end]");
    }
    SafetensorsEntry e;
    e.name = name;
    e.file_dtype = t["dtype"].get<std::string>();
    const FileDType* fd = find_dtype(e.file_dtype);
    if (!fd) where("dtype '", escape_bytes(e.file_dtype), "' is not supported (F32, F16, BF16, F64, I64, I32, I8, U8, BOOL)");
    e.dtype = fd->dtype;
    if (t["shape"].size() > 16) where("rank ", t["shape"].size(), " is too large");
    uint64_t numel = 1;
    for (const Json& d : t["shape"]) {
      if (!d.is_number_unsigned()) where("shape entries must be non-negative integers, got ", escape_bytes(d.dump()));
      uint64_t v = d.get<uint64_t>();
      if (v > (1ull << 40) || __builtin_mul_overflow(numel, v, &numel)) where("shape ", escape_bytes(t["shape"].dump()), " is absurdly large");
      e.shape.push_back(static_cast<int64_t>(v));
    }
    const Json& off = t["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) where("data_offsets must be non-negative integers");
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(fd->size), &bytes)) where("shape is absurdly large");
    if (begin > end || end > data_size) {
      where("data_offsets [", begin, ", ", end, "] lie outside the ", data_size, "-byte data section (truncated file?)");
    }
    if (end - begin != bytes) {
      where("data_offsets span ", end - begin, " bytes but ", e.file_dtype, " ", shape_string(e.shape), " needs ", bytes);
    }
    e.begin = static_cast<size_t>(begin);
    e.end = static_cast<size_t>(end);
    f.index_[name] = f.entries_.size();
    f.entries_.push_back(std::move(e));
  }
  std::vector<const SafetensorsEntry*> entries;
  for (const SafetensorsEntry& e : f.entries_) entries.push_back(&e);
  check_tiling(entries, data_size, path);
  return f;
}

bool SafetensorsFile::contains(const std::string& name) const { return index_.count(name) > 0; }

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = index_.find(name);
  if (it != index_.end()) return entries_[it->second];
  // Name a few candidates that share the last path component.
  std::string leaf = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1), similar;
  int shown = 0;
  for (const SafetensorsEntry& e : entries_) {
    if (shown < 3 && e.name.size() >= leaf.size() && e.name.compare(e.name.size() - leaf.size(), leaf.size(), leaf) == 0) {
      similar += (shown++ ? ", '" : " (similar: '") + e.name + "'";
    }
  }
  if (shown) similar += ")";
  fail("safetensors '", path(), "': no tensor named '", escape_bytes(name), "' among ", entries_.size(), escape_bytes(similar, 600));
}

Array SafetensorsFile::get(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  const unsigned char* src = file_->data() + data_start_ + e.begin;
  const FileDType* fd = find_dtype(e.file_dtype);
  bool aligned = reinterpret_cast<uintptr_t>(src) % fd->size == 0;
  if (aligned) {
    std::shared_ptr<void> keep(std::const_pointer_cast<MappedFile>(file_));
    return Array::borrow(const_cast<unsigned char*>(src), e.dtype, e.shape, keep);
  }
  Array out(e.dtype, e.shape);
  std::memcpy(out.data(), src, e.end - e.begin);
  return out;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Array>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& [name, a] : tensors) {
    if (name == "__metadata__" || name.empty() || name.find('\0') != std::string::npos) {
      fail("save_safetensors: invalid tensor name '", escape_bytes(name), "' (empty, NUL bytes or __metadata__)");
    }
    const char* dt = nullptr;
    for (const FileDType& d : kFileDTypes) {
      if (d.dtype == a.dtype()) dt = d.name;
    }
    header[name] = {{"dtype", dt}, {"shape", a.shape()}, {"data_offsets", {offset, offset + a.nbytes()}}};
    offset += a.nbytes();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';  // keeps tensor data 8-byte aligned
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("save_safetensors: cannot write '", tmp, "'");
    uint64_t n = text.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& [name, a] : tensors) out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(a.nbytes()));
    if (!out.flush()) fail("save_safetensors: writing '", tmp, "' failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("save_safetensors: cannot move '", tmp, "' to '", path, "'");
}

}  // namespace lumen::io
