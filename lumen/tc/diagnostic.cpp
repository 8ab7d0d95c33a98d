#include "lumen/tc/diagnostic.h"

#include <algorithm>
#include <sstream>

namespace lumen::tc {

namespace {

// The text of 1-based line `line` (without its newline); empty if absent.
std::string_view source_line(std::string_view source, int line) {
  size_t begin = 0;
  for (int l = 1; l < line; ++l) {
    size_t nl = source.find('\n', begin);
    if (nl == std::string_view::npos) return {};
    begin = nl + 1;
  }
  size_t end = source.find('\n', begin);
  return source.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
}

}  // namespace

std::string describe_at(std::string_view source, const Pos& pos, const std::string& message) {
  std::ostringstream out;
  out << "tc: line " << pos.line << ", column " << pos.column << ": " << message;
  std::string_view text = source_line(source, pos.line);
  if (text.empty()) return out.str();
  std::string shown(text.substr(0, 200));
  std::replace(shown.begin(), shown.end(), '\t', ' ');
  out << "\n  " << shown << "\n  ";
  int column = std::clamp(pos.column, 1, static_cast<int>(shown.size()) + 1);
  out << std::string(static_cast<size_t>(column - 1), ' ') << '^';
  int width = std::min(pos.length, static_cast<int>(shown.size()) - column + 1);
  if (width > 1) out << std::string(static_cast<size_t>(width - 1), '~');
  return out.str();
}

std::string source_text(std::string_view source, const Pos& pos) {
  std::string_view text = source_line(source, pos.line);
  size_t begin = static_cast<size_t>(std::max(pos.column, 1) - 1);
  if (begin >= text.size()) return {};
  return std::string(text.substr(begin, static_cast<size_t>(std::max(pos.length, 1))));
}

void fail_message_at(std::string_view source, const Pos& pos, const std::string& message) {
  throw Error(describe_at(source, pos, message));
}

}  // namespace lumen::tc
