// TextStream — the text of a growing token sequence, handed out in pieces as
// tokens arrive, with stop strings cut out.
//
// Each piece is the new part of decode(all tokens so far). Text is held back
// while it ends in an incomplete character (U+FFFDs, one per byte of a
// partial UTF-8 sequence, as the tokenizers decode it) or could still be the start of a stop string; when a stop string
// appears, the text before it is the last piece and the stream is stopped.
// The concatenated pieces equal the final text, so streamed and non-streamed
// answers agree by construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lumen/io/tokenizer/tokenizer.h"

namespace lumen::serve {

class TextStream {
 public:
  // Empty stop strings are ignored.
  TextStream(const io::Tokenizer& tokenizer, std::vector<std::string> stop);

  // Adds a token; returns the text that is now final (may be empty).
  std::string push(int32_t token);
  // The text still held back, at the end of generation (empty once stopped).
  std::string finish();
  bool stopped() const { return stopped_; }
  const std::string& text() const { return emitted_; }  // everything handed out so far

 private:
  // How many bytes at the end of `text` may still begin a stop string.
  size_t stop_prefix_length(const std::string& text) const;

  const io::Tokenizer& tokenizer_;
  std::vector<std::string> stop_;
  size_t longest_stop_ = 0;
  std::vector<int32_t> tokens_;
  std::string decoded_;  // decode(tokens_) at the last push
  std::string emitted_;
  bool stopped_ = false;
};

}  // namespace lumen::serve
