#pragma once
// Where the frontend remembers its warm daemons (tlaunch --keep-daemons): one small JSON file
// per keeper under ~/.cache/tlaunch/daemons (a node may have two: two tlaunch started at once,
// or a keeper that did not answer in time while a new one was started; each is written down
// until it is known to be gone, so that `tlaunch stop-daemons` can still end it), and the
// user's secret that the keepers accept, in a 0600 file beside them. The directory is checked
// like the ssh control directory (ours, not a symlink, no group/other access); the secret file
// must be a regular file of ours that nobody else can read, or tlaunch refuses to use it rather
// than hand a job to whoever could.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/keeper_protocol.h"  // epochSeconds
#include "tlaunch/result.h"

namespace tlaunch {

struct WarmEntry {
  std::string node;       // as the user named it
  std::string destination;  // what ssh connected to (user@host forms), to notice a name that moved
  std::string host;       // the keeper's address: the one its node reached the frontend from
  int port = 0;
  long long pid = 0;      // on that node
  long long since = 0;    // epoch seconds when the keeper started
  long long expires = 0;  // epoch seconds: it has exited by then
  int keep_s = 0;         // how long it stays after each job
  std::string slurm_job;  // the Slurm allocation whose keeper step it is in; empty: started over ssh
  std::string file;       // where it was read from (not saved; empty for a new entry)
  long long unanswered = 0;  // epoch seconds when a launch last got no answer from it; 0: never
  // That step's srun settings (keeperStepSettings: --slurm-args, GPUs per node): the job daemons
  // a keeper starts run in its step, so a job asking srun for others (another container image,
  // more GPUs) is not one for it. Empty: srun's defaults, or over ssh.
  std::string slurm_step = {};

  // Whether a launch in the Slurm allocation `slurm_job` ("" over ssh) may ask it for a daemon:
  // one of another allocation (or over ssh for a job under Slurm, or the reverse) is not this
  // job's to use, and one that did not answer before is not tried again (each try would cost
  // the keeper timeout); both stay written down for stop-daemons.
  bool mayServe(const std::string& job_slurm, const std::string& job_step) const {
    return slurm_job == job_slurm && slurm_step == job_step && unanswered == 0;
  }
};

class WarmRegistry {
 public:
  // $HOME/.cache/tlaunch/daemons (HOME from `env`, else the password database). The secret is
  // created on first use when `create_secret`; without it a missing secret is an empty one.
  static Result<WarmRegistry> open(const std::map<std::string, std::string>& env, bool create_secret);
  // For tests: any directory, checked the same way. `base`: a directory above it that must
  // exist already (ensurePrivateDir).
  static Result<WarmRegistry> openAt(const std::string& dir, bool create_secret, const std::string& base = "");

  const std::string& dir() const { return dir_; }
  const std::string& secret() const { return secret_; }
  // What the keeper of `entry` accepts: the user's secret over ssh; inside a Slurm allocation a
  // secret derived from it for that allocation alone, since it reaches the keepers through
  // srun's stdin, which Slurm may carry over the network in clear.
  std::string secretFor(const WarmEntry& entry) const { return keeperSecret(entry.slurm_job); }
  std::string keeperSecret(const std::string& slurm_job) const;
  // Every keeper written down that has not expired by `now` (epoch seconds; expired entries are
  // removed), in no particular order.
  std::vector<WarmEntry> all(long long now) const;
  // The node's newest keeper for which `usable` says yes, if any.
  static std::optional<WarmEntry> newest(const std::vector<WarmEntry>& entries, const std::string& node,
                                         const std::function<bool(const WarmEntry&)>& usable);
  // Written down under the node, the keeper's pid and its start: another keeper of the same node
  // is another entry. An entry read from another file (an older tlaunch named them by node
  // alone) moves to the new name.
  Result<void> save(const WarmEntry& entry) const;
  // Forgets this keeper (it is gone, or not ours), not the node's others.
  void remove(const WarmEntry& entry) const;
  // Whether this keeper is still written down (`tlaunch stop-daemons` forgets one it stopped).
  bool listed(const WarmEntry& entry) const;

 private:
  std::string pathOf(const WarmEntry& entry) const;
  std::string dir_;
  std::string secret_;
};

}  // namespace tlaunch
