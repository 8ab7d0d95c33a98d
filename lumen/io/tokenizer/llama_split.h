// Pre-tokenization of GGUF byte-level BPE vocabularies, as llama.cpp does it
// (its unicode_regex_split), so that lumen's token ids equal llama.cpp's.
//
// llama.cpp applies a list of regexes in turn; each splits every piece left
// by the previous one into its matches and the text between them. A few
// regexes are run by hand-written splitters in llama.cpp and here (GPT-2,
// Llama 3, Qwen 2 / 3.5, newline runs, digit groups); the others run with
// ECMAScript semantics over a "collapsed" text in which every non-ASCII code
// point stands for its Unicode category (so \p{Lu} and \p{Ll} both mean any
// letter, as in llama.cpp), or, for regexes without \p{..}, over the code
// points with non-ASCII whitespace replaced by \v. This file reproduces those
// rules, quirks included; the regexes themselves are in gguf_pre_tokenizers.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lumen::io::tokenizer {

// One tokenizer.ggml.pre value as llama.cpp handles it.
struct GgufPreTokenizer {
  std::string name;
  std::vector<std::string> regexes;  // applied in turn
  bool ignore_merges = false;        // a word that is a whole token is that token (llama 3 style)
  bool add_bos = false;              // default of tokenizer.ggml.add_bos_token
  bool no_bos = false;               // the BOS id is unset unless the file names one (chatglm)
};

// The rules for `pre` ("" means llama.cpp's "default"). Throws lumen::Error
// naming an unknown value and listing the known ones.
const GgufPreTokenizer& gguf_pre_tokenizer(const std::string& pre);
std::vector<std::string> gguf_pre_tokenizer_names();

// Code points of `text` decoded as llama.cpp does: an invalid sequence gives
// U+FFFD and skips one byte; overlong forms and surrogates are taken as they are.
std::vector<uint32_t> llama_codepoints(const std::string& text);
std::string llama_utf8(uint32_t cp);  // code points past U+10FFFF become U+FFFD

// Splits `text` with `regexes` as llama.cpp's unicode_regex_split does
// (before its byte-level mapping). Empty pieces are dropped.
std::vector<std::string> llama_regex_split(const std::string& text, const std::vector<std::string>& regexes);

}  // namespace lumen::io::tokenizer
