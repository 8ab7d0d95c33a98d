// The hand-written splitters llama.cpp runs in place of some regexes (its
// unicode_regex_split_custom_*): same pieces as llama.cpp, including where
// they differ from the regex they stand for.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lumen::io::tokenizer {

// A code point's classes as llama.cpp's tables give them (Unicode general
// categories; White_Space for whitespace). `present` is false past a piece's end.
struct CodepointClass {
  bool present = false, letter = false, number = false, mark = false, punctuation = false, symbol = false,
       whitespace = false;
};
CodepointClass classify(uint32_t cp);

// Splits every piece (lengths over `cps`) into smaller pieces.
using Splitter = std::function<std::vector<size_t>(const std::vector<uint32_t>& cps, const std::vector<size_t>& pieces)>;

// The splitter llama.cpp uses for exactly this regex text, or nullptr.
const Splitter* builtin_splitter(const std::string& regex);

}  // namespace lumen::io::tokenizer
