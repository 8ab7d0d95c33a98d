#include "lumen/serve/text_stream.h"

#include <gtest/gtest.h>

#include "lumen/core/error.h"

namespace lumen::serve {
namespace {

// Each id is a fixed string; decode joins them, and (as lumen's tokenizers
// do) each byte of an unfinished UTF-8 sequence at the end decodes to U+FFFD.
class PieceTokenizer : public io::Tokenizer {
 public:
  explicit PieceTokenizer(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  std::vector<int32_t> encode(const std::string&, bool, bool) const override { return {}; }
  std::string decode(const std::vector<int32_t>& ids, bool) const override {
    std::string s;
    for (int32_t id : ids) s += pieces_.at(static_cast<size_t>(id));
    size_t lead = s.size();
    while (lead > 0 && (static_cast<unsigned char>(s[lead - 1]) & 0xC0) == 0x80) --lead;  // back over continuation bytes
    if (lead == 0 || static_cast<unsigned char>(s[lead - 1]) < 0xC0) return s;  // ends in ASCII (or nothing pending)
    unsigned char first = static_cast<unsigned char>(s[lead - 1]);
    size_t need = first >= 0xF0 ? 4 : first >= 0xE0 ? 3 : 2;
    size_t have = s.size() - (lead - 1);
    if (have >= need) return s;
    std::string out = s.substr(0, lead - 1);
    for (size_t k = 0; k < have; ++k) out += "\xEF\xBF\xBD";
    return out;
  }
  std::string decode_strict(const std::vector<int32_t>& ids, bool skip) const override { return decode(ids, skip); }
  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
  std::optional<int32_t> token_to_id(const std::string&) const override { return std::nullopt; }
  std::string id_to_token(int32_t id) const override { return pieces_.at(static_cast<size_t>(id)); }
  void set_max_length(std::optional<int64_t>) override {}

 private:
  std::vector<std::string> pieces_;
};

// Pushes ids, returning the pieces handed out (finish() last).
std::vector<std::string> run(TextStream& s, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(s.push(id));
  out.push_back(s.finish());
  return out;
}

const PieceTokenizer kTokens({"Hel", "lo W", "orld", "ab", "x", "q", "xy", "\xC3", "\xA9", "!", "\xE2", "\x82", "\xAC"});

TEST(TextStream, PiecesAreTheNewTextWithoutStops) {
  TextStream s(kTokens, {});
  EXPECT_EQ(run(s, {0, 1, 2}), (std::vector<std::string>{"Hel", "lo W", "orld", ""}));
  EXPECT_EQ(s.text(), "Hello World");
}

TEST(TextStream, StopStringAcrossTokensIsCutOut) {
  TextStream s(kTokens, {"o Wo"});
  std::vector<std::string> pieces = run(s, {0, 1, 2, 9});
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.text(), "Hell");
  EXPECT_EQ(pieces, (std::vector<std::string>{"Hel", "l", "", "", ""}));  // "o W" held back, then cut; nothing after the stop
}

TEST(TextStream, HeldBackPrefixIsReleasedWhenItIsNoStop) {
  TextStream s(kTokens, {"xyz"});
  EXPECT_EQ(run(s, {3, 4, 5}), (std::vector<std::string>{"ab", "", "xq", ""}));
  EXPECT_FALSE(s.stopped());
  TextStream t(kTokens, {"xyz", ""});  // an empty stop string is ignored
  EXPECT_EQ(run(t, {3, 6}), (std::vector<std::string>{"ab", "", "xy"}));  // held back to the end, then finished
}

TEST(TextStream, EarliestOfSeveralStopsWins) {
  TextStream s(kTokens, {"World", "lo"});
  run(s, {0, 1, 2});
  EXPECT_EQ(s.text(), "Hel");
}

TEST(TextStream, IncompleteCharacterIsHeldBack) {
  TextStream s(kTokens, {});
  EXPECT_EQ(run(s, {3, 7, 8, 9}), (std::vector<std::string>{"ab", "", "\xC3\xA9", "!", ""}));
  TextStream euro(kTokens, {});  // three bytes: two U+FFFDs are held back before the character completes
  EXPECT_EQ(run(euro, {3, 10, 11, 12}), (std::vector<std::string>{"ab", "", "", "\xE2\x82\xAC", ""}));
}

}  // namespace
}  // namespace lumen::serve
