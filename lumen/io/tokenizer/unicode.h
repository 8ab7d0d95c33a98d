// Unicode helpers for tokenizers: UTF-8 <-> code points, character classes
// as Hugging Face tokenizers defines them (Rust's char properties), case and
// normalization forms (via utf8proc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lumen::io::unicode {

// Decodes UTF-8; invalid bytes become U+FFFD (as Rust's from_utf8_lossy).
std::vector<char32_t> decode(const std::string& text);
std::string encode(char32_t c);
std::string encode(const std::vector<char32_t>& cps);
// `text` for an error message: valid UTF-8 kept, other bytes written as \xNN
// (messages reach Python, which needs UTF-8).
std::string printable(const std::string& text);

bool is_whitespace(char32_t c);   // Unicode White_Space (Rust char::is_whitespace)
bool is_control(char32_t c);      // categories Cc Cf Cs Co Cn, except \t \n \r (BERT's definition)
bool is_punctuation(char32_t c);  // ASCII punctuation or a P* category
bool is_letter(char32_t c);       // L*
bool is_number(char32_t c);       // N*
bool is_mark_nonspacing(char32_t c);  // Mn
bool is_chinese(char32_t c);      // CJK ideographs (BERT's ranges)

std::string lowercase(const std::string& text);     // full lowercase mapping
std::string nfd(const std::string& text);
std::string nfc(const std::string& text);
std::string nfkc(const std::string& text);
std::string nfkd(const std::string& text);

}  // namespace lumen::io::unicode
