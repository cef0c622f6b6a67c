#include "common/enum_names.h"
#include "common/holder_class.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace dcu::common {
namespace {

using namespace dcufleet::v1;

// Every value of each enum has one name, and every name parses back to it,
// so a value shown by one part of dcufleet is read the same by another.
TEST(EnumNamesTest, EveryValueRoundTrips) {
  for (int v = RuntimeKind_MIN + 1; v <= RuntimeKind_MAX; ++v) {
    auto k = static_cast<RuntimeKind>(v);
    EXPECT_EQ(ParseRuntimeKind(RuntimeKindName(k)), k) << v;
  }
  for (int v = VerdictState_MIN + 1; v <= VerdictState_MAX; ++v) {
    auto s = static_cast<VerdictState>(v);
    EXPECT_EQ(ParseVerdictState(VerdictStateName(s)), s) << v;
  }
  for (int v = FindingSeverity_MIN + 1; v <= FindingSeverity_MAX; ++v) {
    auto s = static_cast<FindingSeverity>(v);
    EXPECT_EQ(ParseFindingSeverity(FindingSeverityName(s)), s) << v;
  }
}

// The words dcuctl, the catalog rows and old documents use.
TEST(EnumNamesTest, TheWordsAreTheOldOnes) {
  EXPECT_EQ(RuntimeKindName(RUNTIME_BARE), "bare");
  EXPECT_EQ(RuntimeKindName(RUNTIME_CONTAINER), "container");
  EXPECT_EQ(VerdictStateName(VERDICT_WORKS), "works");
  EXPECT_EQ(VerdictStateName(VERDICT_BROKEN), "broken");
  EXPECT_EQ(VerdictStateName(VERDICT_UNTESTED), "untested");
  EXPECT_EQ(FindingSeverityName(FINDING_INFO), "info");
  EXPECT_EQ(FindingSeverityName(FINDING_WARNING), "warning");
  EXPECT_EQ(FindingSeverityName(FINDING_ERROR), "error");
  EXPECT_EQ(RuntimeKindNames(), (std::vector<std::string>{"bare", "container"}));
  EXPECT_EQ(RuntimeKindChoices(), "'bare' or 'container'");
}

// Unspecified and unknown values are named as such, never as another value,
// and no such name parses into a value.
TEST(EnumNamesTest, UnspecifiedAndUnknownAreNeverAnotherValue) {
  EXPECT_EQ(RuntimeKindName(RUNTIME_KIND_UNSPECIFIED), "unspecified");
  EXPECT_EQ(RuntimeKindName(static_cast<RuntimeKind>(42)), "unknown");
  EXPECT_EQ(VerdictStateName(VERDICT_STATE_UNSPECIFIED), "unspecified");
  EXPECT_EQ(VerdictStateName(static_cast<VerdictState>(42)), "unknown");
  EXPECT_EQ(FindingSeverityName(FINDING_SEVERITY_UNSPECIFIED), "unspecified");
  EXPECT_EQ(FindingSeverityName(static_cast<FindingSeverity>(42)), "unknown");
  for (const char* s : {"", "unspecified", "unknown", "Bare", "fake", "RUNTIME_BARE"}) {
    EXPECT_FALSE(ParseRuntimeKind(s)) << s;
  }
  EXPECT_FALSE(ParseVerdictState("unspecified"));
  EXPECT_FALSE(ParseFindingSeverity("warn"));
}

// Every holder class has a word of its own (the metrics' class label, the
// inventory table and describe node use it): a class the proto adds is
// never "unknown" nor another's word.
// Only a running process's memory is live: a zombie's and an exited
// record's is stranded (what the scanner leaves out of its sum and the
// merger reports as unreclaimed).
TEST(HolderClassTest, OnlyARunningProcessIsLive) {
  for (int c = dcufleet::v1::HolderClass_MIN; c <= dcufleet::v1::HolderClass_MAX; ++c) {
    if (!dcufleet::v1::HolderClass_IsValid(c)) continue;
    const auto holder_class = static_cast<dcufleet::v1::HolderClass>(c);
    const bool stranded = holder_class == dcufleet::v1::HOLDER_ZOMBIE || holder_class == dcufleet::v1::HOLDER_EXITED;
    EXPECT_EQ(common::HolderIsLive(holder_class), !stranded) << dcufleet::v1::HolderClass_Name(holder_class);
  }
}

// Counted by the enum's value, every class; a value beyond the enum (a
// newer agent's) as unspecified, and an unknown VRAM (-1) adds nothing.
TEST(HolderClassTest, TallyCountsEveryClassAndItsMemory) {
  Device d;
  auto add = [&](int holder_class, int64_t vram) {
    auto* h = d.add_holders();
    h->set_holder_class(static_cast<HolderClass>(holder_class));
    h->set_vram_bytes(vram);
  };
  add(HOLDER_EXITED, 59);
  add(HOLDER_ZOMBIE, 7);
  add(HOLDER_ZOMBIE, -1);
  add(HolderClass_MAX + 3, 100);
  const HolderTally t = TallyHolders(d);
  EXPECT_EQ(t.count[HOLDER_EXITED], 1);
  EXPECT_EQ(t.vram_bytes[HOLDER_EXITED], 59);
  EXPECT_EQ(t.count[HOLDER_ZOMBIE], 2);
  EXPECT_EQ(t.vram_bytes[HOLDER_ZOMBIE], 7);
  EXPECT_EQ(t.count[HOLDER_CLASS_UNSPECIFIED], 1);
  EXPECT_TRUE(HolderToReap(HOLDER_ZOMBIE) && HolderToReap(HOLDER_LEFTOVER));
  EXPECT_FALSE(HolderToReap(HOLDER_EXITED) || HolderToReap(HOLDER_MANAGED) || HolderToReap(HOLDER_UNMANAGED));
}

TEST(EnumNamesTest, EveryHolderClassHasItsOwnWord) {
  std::set<std::string> words;
  for (int v = HolderClass_MIN + 1; v <= HolderClass_MAX; ++v) {
    const std::string word(HolderClassName(static_cast<HolderClass>(v)));
    EXPECT_NE(word, "unknown") << v;
    EXPECT_TRUE(words.insert(word).second) << word;
  }
  EXPECT_EQ(HolderClassName(HOLDER_EXITED), "exited");
  EXPECT_EQ(HolderClassName(HOLDER_CLASS_UNSPECIFIED), "unknown");
}

}  // namespace
}  // namespace dcu::common
