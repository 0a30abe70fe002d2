#pragma once
// "Where is it stuck?" for a running job: `tlaunch stacks`/`tlaunch status` through the control
// socket, Ctrl-\ (SIGQUIT) and --hang-timeout. Asks every daemon, waits for their reports (or
// their absence), and answers with the merged stacks (stack_merge.h) or a status table. Lives on
// the session's io thread; the session only feeds it messages and ticks.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <asio.hpp>

#include "bootstrap/message.h"
#include "launcher/control_socket.h"

namespace tlaunch {

class JobInspector {
 public:
  struct NodeView {
    std::string name;
    bool connected = false;
    double heartbeat_age_s = 0;  // since the daemon was last heard from
    bool heard = true;           // false: not heard from yet (still starting)
  };
  struct Hooks {
    std::function<void(const Json&)> broadcast;     // to every connected daemon
    std::function<std::vector<NodeView>()> nodes;   // by node index
    std::function<void(const std::string&)> print;  // a note on tlaunch's stderr
    std::function<std::string(int)> spawned_label;  // "spawn1:0" for a PMIx_Spawn process, "" for a rank
  };
  JobInspector(asio::io_context& io, std::string job_id, Hooks hooks, int hang_timeout_s);
  ~JobInspector();
  void openControlSocket();  // a failure is a note, not the job's end
  void close();              // the job is ending: no more requests
  void stacks(ControlSocket::Reply reply);
  void status(ControlSocket::Reply reply);
  void onReport(int node, Json&& msg);  // "stacks_report" or "status_report"
  void noteOutput() { last_output_ = std::chrono::steady_clock::now(); }
  // From the session's tick: deadlines of requests, and the hang timeout while ranks run.
  void tick(bool ranks_running, bool output_held_back);

 private:
  struct Request {
    std::string kind;  // "stacks" or "status"
    std::map<int, Json> reports;  // by node index
    std::set<int> waiting;
    std::set<int> asked;  // the nodes connected when it was asked (the others could not answer)
    std::chrono::steady_clock::time_point deadline;
    ControlSocket::Reply reply;
  };
  void ask(const std::string& kind, ControlSocket::Reply reply);
  void complete(uint64_t id);
  std::string stacksText(const Request& r) const;
  std::string statusText(const Request& r) const;

  asio::io_context& io_;
  std::string job_id_;
  Hooks hooks_;
  std::chrono::seconds hang_timeout_;
  ControlSocket socket_;
  std::map<uint64_t, Request> requests_;
  uint64_t next_id_ = 1;
  bool closed_ = false;
  bool hang_reported_ = false;
  bool running_seen_ = false;
  std::chrono::steady_clock::time_point last_output_;
  static constexpr auto kStacksDeadline = std::chrono::seconds(45);  // gdb's own limit is 30 s
  static constexpr auto kStatusDeadline = std::chrono::seconds(5);
};

}  // namespace tlaunch
