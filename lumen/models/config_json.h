// Reading a model's hyper-parameters from a Hugging Face config.json with
// clear errors: a key of the wrong type is an error naming it (never a silent
// fallback to the default), and the checks every loader shares (sizes,
// epsilons, rotary bases) name the key, the value and what is allowed.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lumen::models {

class ConfigJson {
 public:
  // Parses `text`; `what` names the config in messages ("llama config 'path'").
  ConfigJson(const std::string& text, std::string what);

  const nlohmann::json& json() const { return j_; }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  int64_t integer(const char* key) const;  // required
  int64_t integer(const char* key, int64_t fallback) const;
  double number(const char* key, double fallback) const;
  bool flag(const char* key, bool fallback) const;
  std::string text(const char* key, const std::string& fallback) const;
  // An integer or a list of integers (eos_token_id); empty when absent or null.
  std::vector<int64_t> integers(const char* key) const;
  const std::string& what() const { return what_; }

 private:
  nlohmann::json j_;
  std::string what_;
};

// Checks shared by the model configs; `what` names the config, `key` the
// hyper-parameter as the file spells it.
void require_size(const std::string& what, const std::string& key, int64_t value);         // 1 .. 2^31-1
void require_epsilon(const std::string& what, const std::string& key, double value);       // finite, > 0 and < 1
void require_rope_base(const std::string& what, const std::string& key, double value);     // finite, > 0
void require_divides(const std::string& what, const std::string& key, int64_t value,
                     const std::string& of_key, int64_t of);  // of % value == 0

}  // namespace lumen::models
