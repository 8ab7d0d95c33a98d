// Error messages are valid UTF-8; escape_bytes makes file bytes printable.
#include <gtest/gtest.h>

#include "lumen/core/error.h"

namespace lumen {
namespace {

TEST(Error, MessagesAreValidUtf8) {
  EXPECT_EQ(valid_utf8("plain é 日本 🙂\n"), "plain é 日本 🙂\n");
  EXPECT_EQ(valid_utf8("a\xff" "b"), "a\\xffb");
  EXPECT_EQ(valid_utf8("\xc3"), "\\xc3");                  // cut sequence
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\\xc0\\xaf");         // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  try {
    fail("tensor '", std::string("x\xfe"), "'");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "tensor 'x\\xfe'");
  }
}

TEST(Error, EscapeBytesForFileContent) {
  EXPECT_EQ(escape_bytes(std::string("a\0b\n\x1b\\c\xff", 8)), "a\\x00b\\x0a\\x1b\\\\c\\xff");
  EXPECT_EQ(escape_bytes("é"), "é");
  EXPECT_EQ(escape_bytes(std::string(300, 'x'), 4), "xxxx... (300 bytes)");
}

}  // namespace
}  // namespace lumen
