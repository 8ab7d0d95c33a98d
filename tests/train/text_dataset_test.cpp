// TextDataset: the vocabulary is the distinct bytes, targets are the inputs
// shifted by one, each split's windows come from its own part of the text,
// and a text too short for the context is an error naming it.
#include <gtest/gtest.h>

#include "lumen/core/error.h"
#include "lumen/train/text_dataset.h"

namespace lumen::train {
namespace {

TEST(TextDataset, VocabularyIsTheSortedDistinctBytes) {
  TextDataset d("banana bread, banana bread, banana bread, banana bread", 3, "t");
  EXPECT_EQ(d.vocabulary(), " ,abdenr");
  EXPECT_EQ(d.decode(d.encode("bread")), "bread");
  EXPECT_THROW(d.encode("bananaz"), Error);
}

TEST(TextDataset, TargetsAreTheNextCharacterAndSplitsStayApart) {
  // 90 characters cycling "abc" for training, 10 of "xyz" for validation.
  std::string text;
  for (int i = 0; i < 90; ++i) text += "abc"[i % 3];
  for (int i = 0; i < 10; ++i) text += "xyz"[i % 3];
  TextDataset d(text, 5, "t");
  std::mt19937_64 rng(7);
  for (Split split : {Split::Train, Split::Validation}) {
    auto [x, y] = d.batch(split, 6, rng);
    ASSERT_EQ(x.shape(), (std::vector<int64_t>{6, 5}));
    for (int64_t b = 0; b < 6; ++b) {
      std::vector<int32_t> in, out;
      for (int64_t t = 0; t < 5; ++t) {
        in.push_back(static_cast<int32_t>(x.get(b * 5 + t)));
        out.push_back(static_cast<int32_t>(y.get(b * 5 + t)));
      }
      std::string a = d.decode(in), next = d.decode(out);
      EXPECT_EQ(a.substr(1), next.substr(0, 4));
      const std::string& allowed = split == Split::Train ? "abc" : "xyz";
      for (char ch : a + next) EXPECT_NE(allowed.find(ch), std::string::npos) << a << " / " << next;
    }
  }
}

TEST(TextDataset, TextTooShortForTheContextIsAnError) {
  try {
    TextDataset d("short text", 8, "notes.txt");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("notes.txt: 10 characters are too few for a context of 8"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lumen::train
