#include "lumen/models/config_json.h"

#include <cmath>

#include "lumen/core/error.h"

namespace lumen::models {

ConfigJson::ConfigJson(const std::string& text, std::string what) : what_(std::move(what)) {
  try {
    j_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(what_, ": not valid JSON (", e.what(), ")");
  }
  if (!j_.is_object()) fail(what_, ": expected a JSON object");
}

int64_t ConfigJson::integer(const char* key) const {
  if (!has(key)) fail(what_, ": needs an integer '", key, "'");
  return integer(key, 0);
}

int64_t ConfigJson::integer(const char* key, int64_t fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = j_[key];
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    fail(what_, ": '", key, "' is ", v.dump(), ", too large for an integer");
  }
  if (!v.is_number_integer()) fail(what_, ": '", key, "' must be an integer, got ", v.dump());
  return v.get<int64_t>();
}

double ConfigJson::number(const char* key, double fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = j_[key];
  if (!v.is_number()) fail(what_, ": '", key, "' must be a number, got ", v.dump());
  return v.get<double>();
}

bool ConfigJson::flag(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = j_[key];
  if (!v.is_boolean()) fail(what_, ": '", key, "' must be true or false, got ", v.dump());
  return v.get<bool>();
}

std::string ConfigJson::text(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = j_[key];
  if (!v.is_string()) fail(what_, ": '", key, "' must be a string, got ", v.dump());
  return v.get<std::string>();
}

std::vector<int64_t> ConfigJson::integers(const char* key) const {
  if (!has(key)) return {};
  const nlohmann::json& v = j_[key];
  if (v.is_number_integer()) return {v.get<int64_t>()};
  std::vector<int64_t> out;
  if (v.is_array()) {
    for (const nlohmann::json& e : v) {
      if (!e.is_number_integer()) fail(what_, ": '", key, "' must be an integer or a list of integers, got ", v.dump());
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  fail(what_, ": '", key, "' must be an integer or a list of integers, got ", v.dump());
}

void require_size(const std::string& what, const std::string& key, int64_t value) {
  if (value < 1 || value > INT32_MAX) fail(what, ": ", key, " is ", value, "; it must be an integer from 1 to ", INT32_MAX);
}

void require_epsilon(const std::string& what, const std::string& key, double value) {
  if (!std::isfinite(value) || value <= 0 || value >= 1) {
    fail(what, ": ", key, " is ", value, "; it must be a finite number greater than 0 and less than 1 (typically 1e-5 or 1e-6)");
  }
}

void require_rope_base(const std::string& what, const std::string& key, double value) {
  if (!std::isfinite(value) || value <= 0) {
    fail(what, ": ", key, " is ", value, "; it must be a finite number greater than 0 (typically 10000 to 1e6)");
  }
}

void require_divides(const std::string& what, const std::string& key, int64_t value, const std::string& of_key, int64_t of) {
  if (value <= 0 || of % value != 0) fail(what, ": ", of_key, " (", of, ") is not divisible by ", key, " (", value, ")");
}

}  // namespace lumen::models
