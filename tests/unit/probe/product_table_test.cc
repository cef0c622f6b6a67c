#include "agent/probe/product_table.h"

#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

TEST(ProductTableTest, BuiltinTableParsesAndKnowsTheDcus) {
  // The embedded data must parse: Builtin() falls back to empty on error.
  ASSERT_GE(ProductTable::Builtin().entries().size(), 9u);
  const auto& b = ProductTable::Builtin();
  auto z = b.ByPciId(0x1d94, 0x54b7);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->name, "Z100");
  EXPECT_EQ(z->arch, "gfx906");
  EXPECT_EQ(z->source, "table:pci 0x1d94:0x54b7");
  EXPECT_EQ(b.ByPciId(0x1d94, 0x6210)->name, "K100_AI");
  EXPECT_EQ(b.ByPciId(0x1d94, 0x55b7)->name, "Z100L");
  EXPECT_EQ(b.ByPciId(0x1002, 0x74a1)->name, "MI300X");
  EXPECT_EQ(b.ByPciId(0x1002, 0x740f)->arch, "gfx90a");
  EXPECT_FALSE(b.ByPciId(0x1d94, 0x6310));  // BW1000's id is unverified
  auto bw = b.ByVendorArch(0x1d94, "gfx936");
  ASSERT_TRUE(bw);
  EXPECT_EQ(bw->name, "BW1000");
  EXPECT_FALSE(b.ByVendorArch(0x1002, "gfx936"));
}

TEST(ProductTableTest, ParseErrorsNameTheLine) {
  auto t = ProductTable::Parse("# c\n0x1d94 0x54b7 gfx906 Z100 src\n0x1d94 zz gfx906 X\n", "table.txt");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(t.status()));
  EXPECT_NE(t.status().message().find("table.txt:3"), std::string::npos) << t.status();
  EXPECT_FALSE(ProductTable::Parse("0x1d94 * - X\n", "t").ok());  // '*' needs an arch
  EXPECT_FALSE(ProductTable::Parse("0x1d94 0x1\n", "t").ok());
}

TEST(ProductTableTest, VendorNames) {
  EXPECT_EQ(VendorName(0x1d94), "hygon");
  EXPECT_EQ(VendorName(0x1002), "amd");
  EXPECT_EQ(VendorName(0x10de), "nvidia");
  EXPECT_EQ(VendorName(0x8086), "");
}

}  // namespace
}  // namespace dcu::agent
