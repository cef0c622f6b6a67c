#pragma once

// A real Slurm 22.05 cluster (Debian's slurmctld + slurmd + slurm-client) on
// loopback, everything under a temporary directory (issue 20): one
// slurmctld and N slurmd on this host (`NodeName=nX NodeAddr=127.0.0.1
// Port=…`, `slurmd -N nX`), AuthType=auth/none, CredType=cred/none,
// ProctrackType=proctrack/pgid, no accounting. Every daemon is a
// ChildProcess the cluster started; the destructor cancels the jobs, waits
// for them to leave the queue (a slurmstepd whose controller is gone retries
// its completion RPC forever) and stops the daemons by pid.
//
// Each node has `gres_count` devices of GRES `gres_name`, listed in gres.conf
// with File= entries that are symlinks to /dev/null under the temp dir:
// Slurm wants a character or block device there and only sets the job's
// device variables for GRES it can index (docs/slurm.md, "What Slurm sets").

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/testing/fleet_harness.h"
#include "tests/testing/test_env.h"

namespace dcu::testing {

struct SlurmClusterOptions {
  int nodes = 2;
  int cpus_per_node = 4;
  // GRES per node; every name in gres_names gets gres_count devices.
  std::vector<std::string> gres_names = {"dcu"};
  int gres_count = 8;
  std::string partition = "dcu";
  absl::Duration start_timeout = absl::Seconds(30);
};

class SlurmCluster {
 public:
  // Empty when slurmctld, slurmd and the client commands are installed;
  // otherwise the reason, for GTEST_SKIP.
  static std::string MissingBinaries();

  // Writes slurm.conf and gres.conf, starts the daemons and waits until
  // every node is idle with its GRES. An error names the step and carries
  // the daemons' log tails.
  static absl::StatusOr<std::unique_ptr<SlurmCluster>> Start(SlurmClusterOptions options = {});
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& dir() const { return dir_.path(); }
  std::string Join(const std::string& name) const { return dir_.Join(name); }
  std::string conf_path() const { return dir_.Join("etc/slurm.conf"); }
  std::vector<std::string> node_names() const;
  const SlurmClusterOptions& options() const { return options_; }

  // The environment every Slurm client needs (SLURM_CONF).
  std::map<std::string, std::string> ClientEnv() const;
  // Runs a client command (sbatch, squeue, scontrol, …; argv[0] a name on
  // PATH is resolved) against this cluster.
  CmdResult Client(std::vector<std::string> argv, double timeout_s = 30) const;
  // sbatch --parsable ARGS; the job id or the error with sbatch's words.
  // sbatch exports its own environment to the job (--export=ALL), so
  // `job_env` reaches the job too.
  absl::StatusOr<std::string> Submit(std::vector<std::string> sbatch_args,
                                     std::map<std::string, std::string> job_env = {}) const;
  // squeue's state for the job (PENDING, RUNNING, COMPLETED for a while
  // after it ended: MinJobAge=2), "" once it left the queue (or on error).
  std::string JobState(const std::string& job_id) const;
  bool WaitJobState(const std::string& job_id, const std::string& state,
                    absl::Duration timeout) const;
  // Until the job is in a final state or gone.
  bool WaitJobEnded(const std::string& job_id, absl::Duration timeout) const;

  // Tails of slurmctld's and every slurmd's log, for failure messages.
  std::string Logs() const;

 private:
  explicit SlurmCluster(SlurmClusterOptions options) : options_(std::move(options)) {}
  absl::Status WriteConfig();
  absl::Status StartDaemons();
  absl::Status WaitReady();

  SlurmClusterOptions options_;
  TempDir dir_;
  int ctld_port_ = 0;
  std::vector<int> node_ports_;
  std::unique_ptr<ChildProcess> ctld_;
  std::vector<std::unique_ptr<ChildProcess>> slurmds_;
};

}  // namespace dcu::testing
