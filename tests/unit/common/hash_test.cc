// common/hash: the one SHA-256 (auth token hashes, model config fingerprints).
#include "common/hash.h"

#include <string>

#include "gtest/gtest.h"

namespace dcu::common {
namespace {

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, BinaryInputWithNulBytes) {
  // FIPS 180-2 test vector 2 (two blocks), and input holding NUL bytes is hashed whole.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_NE(Sha256Hex(std::string("a\0b", 3)), Sha256Hex("a"));
  EXPECT_EQ(Sha256Hex(std::string("a\0b", 3)).size(), 64u);
}

}  // namespace
}  // namespace dcu::common
