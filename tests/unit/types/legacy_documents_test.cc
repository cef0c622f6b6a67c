// Documents written before runtime kinds, plan verdicts and finding
// severities were enums (strings under field numbers now reserved) still
// load, through the store, with their values.

#include <string>

#include "common/legacy_fields.h"
#include "controller/store/sqlite_deployment_store.h"
#include "controller/store/sqlite_store.h"
#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

using dcufleet::v1::Deployment;
using dcufleet::v1::Finding;
using dcufleet::v1::InstanceSpec;
using dcufleet::v1::Plan;

void Varint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
// One length-delimited field (a string or a message) as the old binary
// wrote it: varint tag, varint length, bytes.
std::string Str(int number, const std::string& value) {
  std::string out;
  Varint((static_cast<uint64_t>(number) << 3) | 2, &out);
  Varint(value.size(), &out);
  return out + value;
}
std::string Msg(int number, const std::string& body) { return Str(number, body); }

// Old Finding: severity = 1 (string), code = 2, message = 4.
std::string OldFinding(const std::string& severity, const std::string& code) {
  return Str(1, severity) + Str(2, code) + Str(4, "m");
}
// Old Plan: stack_id = 2, runtime_kind = 3, verdict = 4, arch = 6.
std::string OldPlan(const std::string& kind, const std::string& verdict) {
  return Str(2, "vllm-0.9.2-image") + Str(3, kind) + Str(4, verdict) + Str(6, "gfx928");
}
// Old InstanceSpec: instance_id = 1, runtime_kind = 6, runtime_location = 7.
std::string OldInstance(const std::string& kind) {
  return Str(1, "qwen-1-abc") + Str(6, kind) + Str(7, "/opt/conda/envs/vllm");
}
// Old Attempt: instance_id = 2, stack_id = 3, runtime_kind = 4, instance = 17.
std::string OldAttempt(const std::string& kind) {
  return Str(2, "qwen-1-abc") + Str(3, "vllm-0.9.2-bare") + Str(4, kind) +
         Msg(17, OldInstance(kind));
}
// Old Deployment: spec = 1 {name = 1, model = 2}, status = 2 {plans = 3,
// excluded_plans = 4, attempts = 6, findings = 8}.
std::string OldDeployment() {
  std::string spec = Str(1, "qwen") + Str(2, "qwen3-32b");
  std::string status = Msg(3, OldPlan("container", "works")) + Msg(3, OldPlan("bare", "untested")) +
                       Msg(4, OldPlan("bare", "broken")) + Msg(6, OldAttempt("bare")) +
                       Msg(8, OldFinding("warning", "dtype_mismatch"));
  return Msg(1, spec) + Msg(2, status);
}

TEST(LegacyFieldsTest, OldFindingBytesGetTheirSeverity) {
  for (auto [word, want] : std::vector<std::pair<std::string, dcufleet::v1::FindingSeverity>>{
           {"info", dcufleet::v1::FINDING_INFO},
           {"warning", dcufleet::v1::FINDING_WARNING},
           {"error", dcufleet::v1::FINDING_ERROR}}) {
    Finding f;
    ASSERT_TRUE(f.ParseFromString(OldFinding(word, "c")));
    EXPECT_EQ(f.severity(), dcufleet::v1::FINDING_SEVERITY_UNSPECIFIED);  // before the upgrade
    EXPECT_EQ(common::UpgradeLegacyFields(&f), 1);
    EXPECT_EQ(f.severity(), want) << word;
    EXPECT_EQ(f.code(), "c");
    EXPECT_TRUE(f.GetReflection()->GetUnknownFields(f).empty());
  }
}

TEST(LegacyFieldsTest, UnknownOldWordsStayUnspecifiedAndNewDocumentsAreUntouched) {
  InstanceSpec s;
  ASSERT_TRUE(s.ParseFromString(OldInstance("k8s")));
  EXPECT_EQ(common::UpgradeLegacyFields(&s), 1);
  EXPECT_EQ(s.runtime_kind(), dcufleet::v1::RUNTIME_KIND_UNSPECIFIED);  // refused later, not bare
  EXPECT_TRUE(s.GetReflection()->GetUnknownFields(s).empty());

  InstanceSpec fresh;
  fresh.set_runtime_kind(dcufleet::v1::RUNTIME_CONTAINER);
  InstanceSpec copy = fresh;
  EXPECT_EQ(common::UpgradeLegacyFields(&copy), 0);
  EXPECT_EQ(copy.SerializeAsString(), fresh.SerializeAsString());
}

TEST(LegacyFieldsTest, OldDeploymentDocumentLoadsThroughTheStore) {
  auto store = std::move(*SqliteStore::Open(":memory:"));
  SqliteDeploymentStore deployments(store->database());
  // The row holds, byte for byte, the document as the previous version wrote it.
  ASSERT_TRUE(store->database()
                  ->WithConnection([](SqliteDatabase& db) -> absl::Status {
                    auto st = db.Prepare(
                        "INSERT INTO deployments(name, model, phase, revision, doc, created_at_ms, "
                        "updated_at_ms) VALUES ('qwen', 'qwen3-32b', 'DEPLOYMENT_READY', 1, ?, 0, 0)");
                    if (!st.ok()) return st.status();
                    (*st)->BindBlob(1, OldDeployment());
                    return (*st)->Run();
                  })
                  .ok());

  auto loaded = deployments.ListDeployments();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 1u);
  const Deployment& d = (*loaded)[0];
  EXPECT_EQ(d.spec().name(), "qwen");
  const auto& st = d.status();
  ASSERT_EQ(st.plans_size(), 2);
  EXPECT_EQ(st.plans(0).stack_id(), "vllm-0.9.2-image");
  EXPECT_EQ(st.plans(0).runtime_kind(), dcufleet::v1::RUNTIME_CONTAINER);
  EXPECT_EQ(st.plans(0).verdict(), dcufleet::v1::VERDICT_WORKS);
  EXPECT_EQ(st.plans(1).runtime_kind(), dcufleet::v1::RUNTIME_BARE);
  EXPECT_EQ(st.plans(1).verdict(), dcufleet::v1::VERDICT_UNTESTED);
  ASSERT_EQ(st.excluded_plans_size(), 1);
  EXPECT_EQ(st.excluded_plans(0).verdict(), dcufleet::v1::VERDICT_BROKEN);
  ASSERT_EQ(st.attempts_size(), 1);
  EXPECT_EQ(st.attempts(0).runtime_kind(), dcufleet::v1::RUNTIME_BARE);
  EXPECT_EQ(st.attempts(0).instance().instance_id(), "qwen-1-abc");
  EXPECT_EQ(st.attempts(0).instance().runtime_kind(), dcufleet::v1::RUNTIME_BARE);
  EXPECT_EQ(st.attempts(0).instance().runtime_location(), "/opt/conda/envs/vllm");
  ASSERT_EQ(st.findings_size(), 1);
  EXPECT_EQ(st.findings(0).severity(), dcufleet::v1::FINDING_WARNING);
  EXPECT_EQ(st.findings(0).code(), "dtype_mismatch");
  // Nothing of the old encoding is left to be written back.
  Deployment upgraded = d;
  EXPECT_EQ(common::UpgradeLegacyFields(&upgraded), 0);
}

TEST(LegacyFieldsTest, OldInventoryFindingsLoadThroughTheStore) {
  auto store = std::move(*SqliteStore::Open(":memory:"));
  NodeRecord r;
  r.name = "node-a";
  r.state = "Ready";
  ASSERT_TRUE(r.inventory.add_findings()->ParseFromString(OldFinding("error", "arch_unknown")));
  auto* dev = r.inventory.add_devices();
  dev->set_index(0);
  ASSERT_TRUE(dev->add_findings()->ParseFromString(OldFinding("info", "probe_timeout")));
  ASSERT_TRUE(store->RegisterNode(r).ok());

  auto nodes = store->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 1u);
  const auto& inv = (*nodes)[0].inventory;
  ASSERT_EQ(inv.findings_size(), 1);
  EXPECT_EQ(inv.findings(0).severity(), dcufleet::v1::FINDING_ERROR);
  ASSERT_EQ(inv.devices(0).findings_size(), 1);
  EXPECT_EQ(inv.devices(0).findings(0).severity(), dcufleet::v1::FINDING_INFO);
}

}  // namespace
}  // namespace dcu::controller
