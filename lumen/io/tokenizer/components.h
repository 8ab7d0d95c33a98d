// Builders for the pipeline stages named in tokenizer.json, one per
// component type ("BertNormalizer", "ByteLevel", "Metaspace", ...). Each
// takes the component's JSON object; unknown types are errors that name them.
#pragma once

#include <nlohmann/json.hpp>

#include "lumen/io/tokenizer/pipeline.h"

namespace lumen::io::tokenizer {

using Json = nlohmann::json;

Normalizer make_normalizer(const Json& j);
PreTokenizer make_pre_tokenizer(const Json& j);
Decoder make_decoder(const Json& j);
PostProcessor make_post_processor(const Json& j, const Model& model);

// A token id from tokenizer.json: an integer in [0, INT32_MAX], else
// lumen::Error naming `what` (never narrowed: 2^32 + 2 is not 2).
int32_t token_id(const Json& j, const std::string& what);

// An integer field of a component: `fallback` when absent, else an integer
// in [lo, hi] (never a float converted out of range), else lumen::Error.
int64_t integer_field(const Json& j, const char* key, int64_t fallback, int64_t lo, int64_t hi);

// Components nest (Sequence of Sequence ...): tokenizer.json is refused past this depth.
constexpr int kMaxJsonDepth = 64;

// The GPT-2 pre-tokenization pattern (contractions, letters, numbers, other, spaces).
extern const char* const kGpt2Pattern;

}  // namespace lumen::io::tokenizer
