#include "lumen/serve/text_stream.h"

#include <algorithm>

namespace lumen::serve {

namespace {

constexpr const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD: decode()'s stand-in for an incomplete character

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

TextStream::TextStream(const io::Tokenizer& tokenizer, std::vector<std::string> stop) : tokenizer_(tokenizer) {
  for (std::string& s : stop) {
    if (s.empty()) continue;
    longest_stop_ = std::max(longest_stop_, s.size());
    stop_.push_back(std::move(s));
  }
}

size_t TextStream::stop_prefix_length(const std::string& text) const {
  size_t longest = 0;
  for (const std::string& s : stop_) {
    for (size_t n = std::min(s.size() - 1, text.size()); n > longest; --n) {
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

std::string TextStream::push(int32_t token) {
  if (stopped_) return "";
  tokens_.push_back(token);
  decoded_ = tokenizer_.decode(tokens_, true);
  // Earlier text may still change (a tokenizer that strips a leading space);
  // pieces never retract, so wait until the decoded text extends them again.
  if (!starts_with(decoded_, emitted_)) return "";
  // A stop string can only start in the last (longest_stop_ - 1) emitted bytes or later.
  size_t from = emitted_.size() > longest_stop_ ? emitted_.size() - longest_stop_ : 0;
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, decoded_.find(s, from));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string piece = cut > emitted_.size() ? decoded_.substr(emitted_.size(), cut - emitted_.size()) : "";
    emitted_ += piece;
    return piece;
  }
  size_t end = decoded_.size() - stop_prefix_length(decoded_);
  // Tokenizers decode each byte of an unfinished character to its own U+FFFD: hold back all of them.
  size_t complete = decoded_.size();
  while (complete >= 3 && decoded_.compare(complete - 3, 3, kReplacement) == 0) complete -= 3;
  end = std::min(end, complete);
  if (end <= emitted_.size()) return "";
  std::string piece = decoded_.substr(emitted_.size(), end - emitted_.size());
  emitted_ += piece;
  return piece;
}

std::string TextStream::finish() {
  if (stopped_ || !starts_with(decoded_, emitted_)) return "";
  std::string piece = decoded_.substr(emitted_.size());
  emitted_ += piece;
  return piece;
}

}  // namespace lumen::serve
