// The byte-level alphabet of GPT-2 style BPE: every byte maps to a printable
// character (printable Latin-1 bytes to themselves, the rest to U+0100...),
// so any byte string is a string of vocabulary characters.
#include <array>

#include "lumen/io/tokenizer/pipeline.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

namespace {

struct Alphabet {
  std::array<std::string, 256> to_char;
  std::unordered_map<char32_t, unsigned char> to_byte;
  Alphabet() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      to_char[static_cast<size_t>(b)] = unicode::encode(c);
      to_byte[c] = static_cast<unsigned char>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

const std::string& byte_to_char(unsigned char b) { return alphabet().to_char[b]; }

std::optional<unsigned char> char_to_byte(char32_t c) {
  auto it = alphabet().to_byte.find(c);
  if (it == alphabet().to_byte.end()) return std::nullopt;
  return it->second;
}

}  // namespace lumen::io::tokenizer
