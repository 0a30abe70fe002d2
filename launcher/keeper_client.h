#pragma once
// The frontend's side of a warm node's keeper (bootstrap/keeper_protocol.h): connect, prove the
// user's secret and check the keeper's proof, send one request, read the reply, then whatever
// the keeper says after it (a started daemon's stderr and exit). Non-blocking: many calls are
// driven at once with poll(2), so 1,000 warm nodes cost one round trip, not 1,000.
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/frame_cipher.h"
#include "bootstrap/frame_codec.h"
#include "bootstrap/message.h"

namespace tlaunch {

class KeeperCall {
 public:
  KeeperCall(const std::string& host, int port, std::string secret, Json request);
  ~KeeperCall();
  KeeperCall(const KeeperCall&) = delete;
  KeeperCall& operator=(const KeeperCall&) = delete;

  // Drives the calls until each has its reply or has failed; at `deadline` the rest fail.
  static void runAll(const std::vector<KeeperCall*>& calls, std::chrono::steady_clock::time_point deadline);

  bool replied() const { return replied_; }
  const Json& reply() const { return reply_; }
  bool failed() const { return state_ == State::failed; }
  const std::string& error() const { return error_; }  // why it failed, for the user
  // The connection was refused: nothing listens at that port any more, so no keeper is there.
  // (A timeout or a lost connection says nothing either way.)
  bool nobodyListens() const { return nobody_listens_; }
  // The peer refused this user's secret, or could not prove it: not (or no longer) our keeper.
  bool wrongSecret() const { return wrong_secret_; }
  // The keeper this call was meant for is known to be gone, or not ours: nothing listens, it
  // refused our secret, or it refused saying it is another keeper or is ending. A call that
  // timed out or lost its connection says nothing either way.
  bool keeperGone() const { return nobody_listens_ || wrong_secret_ || (replied_ && getBool(reply_, "gone")); }
  // After the reply, without blocking: what the keeper sent since. closed() once it hung up.
  std::vector<Json> receive();
  bool closed() const { return state_ == State::done || state_ == State::failed; }

 private:
  enum class State { connecting, challenge, welcome, reply, streaming, done, failed };
  short pollEvents() const;
  void onEvents(short revents);
  void readAvailable();
  void handleFrame(std::string_view payload);
  void queue(const Json& msg, bool sealed);
  void flush();
  void failWith(const std::string& why);

  int fd_ = -1;
  State state_ = State::connecting;
  std::string secret_;
  Json request_;
  std::string out_;
  FrameDecoder decoder_;
  std::unique_ptr<FrameCipher> sealer_, opener_;
  std::string server_nonce_, client_nonce_;
  bool replied_ = false;
  bool nobody_listens_ = false;
  bool wrong_secret_ = false;
  Json reply_;
  std::string error_;
  std::deque<Json> inbox_;
};

}  // namespace tlaunch
