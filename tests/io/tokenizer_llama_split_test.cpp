// llama.cpp-compatible pre-tokenization of GGUF vocabularies. The expected
// pieces were produced by llama.cpp's own unicode_regex_split on the same
// text (and lumen matched it on a 338-text corpus for every name in the table).
#include <gtest/gtest.h>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/llama_split.h"

namespace lumen::io::tokenizer {
namespace {

using Words = std::vector<std::string>;

const std::string kText = "Hi  there\n\n    x = 12345; caf\xC3\xA9 DON'T \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80!!  ";

Words split(const std::string& pre, const std::string& text = kText) {
  return llama_regex_split(text, gguf_pre_tokenizer(pre).regexes);
}

TEST(LlamaSplit, SmollmIsolatesDigitsAndKeepsWhitespaceRunsWhole) {
  EXPECT_EQ(split("smollm"), (Words{"Hi", " ", " there", "\n\n   ", " x", " =", " ", "1", "2", "3", "4", "5", ";",
                                    " caf\xC3\xA9", " DON", "'", "T", " \xE4\xB8\xAD\xE6\x96\x87",
                                    " \xF0\x9F\x98\x80!!", "  "}));
}

TEST(LlamaSplit, Llama3SplitsNewlinesFromIndentAndGroupsDigitsByThree) {
  EXPECT_EQ(split("llama-bpe"), (Words{"Hi", " ", " there", "\n\n", "   ", " x", " =", " ", "123", "45", ";",
                                       " caf\xC3\xA9", " DON", "'T", " \xE4\xB8\xAD\xE6\x96\x87",
                                       " \xF0\x9F\x98\x80!!", "  "}));
  EXPECT_EQ(split("qwen2", "12345"), (Words{"1", "2", "3", "4", "5"}));
}

TEST(LlamaSplit, Gpt2AndDefaultDiffer) {
  EXPECT_EQ(split("gpt-2", "x = 12345;"), (Words{"x", " =", " 12345", ";"}));
  // llama.cpp's "default" (a file without tokenizer.ggml.pre) isolates punctuation and cuts digits by three.
  EXPECT_EQ(split("", "x = 12345;"), (Words{"x", " ", "=", " ", "123", "45", ";"}));
}

TEST(LlamaSplit, RegexListsWithoutHandWrittenSplitters) {
  EXPECT_EQ(split("deepseek-coder", "x = 12;\n"), (Words{"x", " = ", "1", "2", ";", "\n"}));
  EXPECT_EQ(split("bloom", "DON'T stop, ok!!  "), (Words{"DON'T", " stop", ",", " ok", "!!  "}));
  EXPECT_EQ(split("gpt-4o", "caf\xC3\xA9 DON'T HTTPServer"), (Words{"caf\xC3\xA9", " DON'T", " HTTPServer"}));
  // An empty-matching lookahead splits where it matches (std::regex_iterator's rules).
  EXPECT_EQ(split("superbpe", "ab 12345 c"), (Words{"ab ", "12", "345", " c"}));
}

TEST(LlamaSplit, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(split("gpt-2", std::string("a\xFF\xC3 b")), (Words{"a", "\xEF\xBF\xBD\xEF\xBF\xBD", " b"}));
}

TEST(LlamaSplit, UnknownPreTokenizerIsAnErrorListingTheKnownOnes) {
  try {
    gguf_pre_tokenizer("no-such-pre");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'no-such-pre'"), std::string::npos) << m;
    EXPECT_NE(m.find("smollm"), std::string::npos) << m;
    EXPECT_NE(m.find("llama-bpe"), std::string::npos) << m;
  }
  EXPECT_THROW(gguf_pre_tokenizer("kimi-k2"), Error);  // known to llama.cpp, refused by name
  for (const char* name : {"default", "llama-bpe", "smollm", "qwen2", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon",
                           "mpt", "starcoder", "refact", "command-r", "stablelm2", "olmo", "dbrx", "smaug-bpe",
                           "poro-chat", "jais", "tekken", "chatglm-bpe", "viking", "bloom", "gpt3-finnish", "exaone",
                           "chameleon", "minerva-7b", "gpt-4o", "superbpe", "trillion", "bailingmoe", "seed-coder"}) {
    EXPECT_NO_THROW(split(name)) << name;  // every regex compiles and runs
  }
}

}  // namespace
}  // namespace lumen::io::tokenizer
