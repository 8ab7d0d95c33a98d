// tokenizer.ggml.pre -> the split regexes llama.cpp uses for it (its
// llama_vocab::impl::load name table and llm_tokenizer_bpe's regex lists).
// One name a line. Regex texts are spelled exactly as llama.cpp spells them:
// llama.cpp picks its hand-written splitters by comparing these texts.
#include <algorithm>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/llama_split.h"
#include "lumen/io/tokenizer/unicode.h"

namespace lumen::io::tokenizer {

namespace {

// ---- the regexes ----
const char* const kGpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kJais2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|"
    "\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}";
const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen35 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}"
    "\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kDeepseekLetters =  // spelled with escapes: some of these code points have canonical equivalents
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF"
    "\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5"
    "\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-"
    "\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D"
    "\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-"
    "\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113"
    "\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149"
    "\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B"
    "\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-"
    "\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0"
    "-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+";
const char* const kDeepseek3Words =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|"
    "\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
const char* const kSpark25Words =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|"
    "\\s+(?!\\S)|\\s+";
const char* const kCasedWords =  // tiny_aya, youtu: upper-then-lower letter runs with contractions
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV]"
    "[eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|";
const char* const kBloom = " ?[^(\\s|.,!?…。，、।۔،)]+";
const char* const kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=["
    "\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|"
    "'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|"
    "'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kGraniteMulti =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|"
    "'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|"
    "'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|"
    "\\s+";
const char* const kBailing =
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
const char* const kSeedCoder =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}"
    "\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kUfakzeka =
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kAfmoeWords =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kExaoneMoe =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
const char* const kMinicpm5 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::string kCasedTail = "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

using R = std::vector<std::string>;
const R kDefault = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
const R kStarcoder = {"\\p{N}", kGpt2};
const R kDeepseekLlm = {"[\r\n]", kDeepseekLetters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"};
const R kDeepseekCoder = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"};
const R kDeepseek3 = {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", kDeepseek3Words};
const R kSpark25 = {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", kSpark25Words, "\\p{N}"};
const R kYoutu = {"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
                  std::string(kCasedWords) + "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
const R kTinyAya = {"\\d{1,3}(?=(?:\\d{3})*\\b)", std::string(kCasedWords) + kCasedTail};
const R kFalcon = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"};
const R kChameleon = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
                      "[\\p{P}!-/:-@\\[-`{-~]", kGpt2};
const R kAfmoe = {"\\p{AFMoE_digits}", "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+", kAfmoeWords};

// name, regexes, ignore_merges, add_bos, no_bos — as llama.cpp's vocabulary loader sets them.
const std::vector<GgufPreTokenizer>& table() {
  static const std::vector<GgufPreTokenizer> t = {
      {"default", kDefault},
      {"llama3", {kLlama3}, true, true},
      {"llama-v3", {kLlama3}, true, true},
      {"llama-bpe", {kLlama3}, true, true},
      {"falcon3", {kLlama3}, true, true},
      {"falcon-h1", {kLlama3}, true, true},
      {"pixtral", {kLlama3}, true, true},
      {"midm-2.0", {kLlama3}, true, true},
      {"lfm2", {kLlama3}, true, true},
      {"jina-v5-nano", {kLlama3}, true, true},
      {"dbrx", {kLlama3}},
      {"smaug-bpe", {kLlama3}},
      {"jais-2", {kJais2}},
      {"chatglm-bpe", {kLlama3}, false, false, true},
      {"glm4", {kLlama3}, true, false, true},
      {"glm5", {kLlama3}, true, false, true},
      {"minicpm5", {"\\p{N}{1,3}", kMinicpm5}, true},
      {"deepseek-llm", kDeepseekLlm},
      {"deepseek-coder", kDeepseekCoder},
      {"deepseek-v3", kDeepseek3},
      {"hunyuan-dense", kDeepseek3},
      {"hy_v4", kDeepseek3},
      {"joyai-llm", kDeepseek3},
      {"spark2_5", kSpark25},
      {"youtu", kYoutu, true},
      {"falcon", kFalcon},
      {"mpt", {kGpt2}},
      {"gpt-2", {kGpt2}},
      {"phi-2", {kGpt2}},
      {"jina-es", {kGpt2}},
      {"jina-de", {kGpt2}},
      {"gigachat", {kGpt2}},
      {"jina-v2-es", {kGpt2}},
      {"jina-v2-de", {kGpt2}},
      {"a.x-4.0", {kGpt2}},
      {"mellum", {kGpt2}},
      {"modern-bert", {kGpt2}},
      {"exaone4", {kGpt2}},
      {"olmo", {kGpt2}},
      {"jais", {kGpt2}},
      {"trillion", {kGpt2}},
      {"granite-docling", {kGpt2}},
      {"starcoder", kStarcoder},
      {"refact", kStarcoder},
      {"command-r", kStarcoder},
      {"smollm", kStarcoder},
      {"codeshell", kStarcoder},
      {"exaone", kStarcoder},
      {"minerva-7b", kStarcoder},
      {"mellum2", kStarcoder},
      {"qwen2", {kQwen2}},
      {"deepseek-r1-qwen", {kQwen2}},
      {"kormo", {kQwen2}},
      {"f2llmv2", {kQwen2}},
      {"megrez", {kQwen2}},
      {"stablelm2", {kQwen2}},
      {"hunyuan", {kQwen2}},
      {"solar-open", {kQwen2}},
      {"grok-2", {kQwen2}},
      {"qwen35", {kQwen35}},
      {"poro-chat", {kBloom}},
      {"bloom", {kBloom}},
      {"gpt3-finnish", {kBloom}},
      {"viking", {kBloom, "\\p{N}"}},
      {"tekken", {kTekken}, true, true},
      {"chameleon", kChameleon, false, true},
      {"gpt-4o", {kGpt4o}},
      {"llama4", {kGpt4o}},
      {"kanana2", {kGpt4o}},
      {"talkie", {kGpt4o}},
      {"minimax-m2", {kGpt4o}},
      {"granite-embed-multi-97m", {kGraniteMulti}, true},
      {"tiny_aya", kTinyAya},
      {"cohere2moe", kTinyAya},
      {"superbpe", {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"}},
      {"bailingmoe", {kBailing}},
      {"bailingmoe2", {kBailing}},
      {"llada-moe", {kBailing}},
      {"seed-coder", {kSeedCoder}},
      {"ufakzeka", {kUfakzeka}},
      {"afmoe", kAfmoe},
      {"laguna", {"[^\\n]+|[\\n]+", kQwen2}},
      {"exaone-moe", {kExaoneMoe}},
  };
  return t;
}

// Known to llama.cpp but tokenized without GPT-2 byte mapping, or by a
// splitter lumen does not have: refused by name rather than approximated.
const std::vector<std::string> kUnsupported = {"kimi-k2", "gemma4", "granite-embed-multi-311m", "sarvam-moe", "whitespace",
                                               "jina-v1-en", "jina-v2-code", "roberta-bpe"};

}  // namespace

std::vector<std::string> gguf_pre_tokenizer_names() {
  std::vector<std::string> names;
  for (const GgufPreTokenizer& p : table()) names.push_back(p.name);
  return names;
}

const GgufPreTokenizer& gguf_pre_tokenizer(const std::string& pre) {
  const std::string name = pre.empty() ? "default" : pre;
  for (const GgufPreTokenizer& p : table()) {
    if (p.name == name) return p;
  }
  std::string known;
  for (const std::string& n : gguf_pre_tokenizer_names()) known += (known.empty() ? "" : ", ") + n;
  if (std::find(kUnsupported.begin(), kUnsupported.end(), name) != kUnsupported.end()) {
    fail("tokenizer: GGUF pre-tokenizer '", unicode::printable(name), "' (tokenizer.ggml.pre) is known to llama.cpp but not supported by lumen "
         "(it needs a tokenizer other than byte-level BPE); lumen supports: ", known);
  }
  fail("tokenizer: GGUF pre-tokenizer '", unicode::printable(name), "' (tokenizer.ggml.pre) is unknown; the known values are: ", known);
}

}  // namespace lumen::io::tokenizer
