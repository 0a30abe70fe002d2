#include "daemon/tree_children.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "bootstrap/auth.h"
#include "bootstrap/frame_cipher.h"
#include "bootstrap/output_record.h"
#include "bootstrap/stranger_eviction.h"
#include "tlaunch/version.h"

namespace tlaunch {

bool travelsBehindOutput(const std::string& type) {
  return type == "exit" || type == "all_exited" || type == "drained" || type == "child_lost";
}

bool travelsAsBulkDown(const std::string& type) { return type == "stdin" || type == "stdin_eof"; }

struct TreeChildren::Child {
  std::shared_ptr<Connection> conn;
  std::string nonce;  // ours, in the challenge
  std::string client_nonce;
  std::string name;
  int index = -1;
  bool proved = false;   // the hello proved the job secret
  bool child = false;    // ... and the node is one of ours: messages flow
  uint64_t id = 0;       // never reused: a drop posted for a closed child cannot hit a newer one
  std::chrono::steady_clock::time_point since, last_heard;
};

TreeChildren::TreeChildren(asio::io_context& io, std::string secret, Hooks hooks)
    : io_(io), secret_(std::move(secret)), hooks_(std::move(hooks)) {}

TreeChildren::~TreeChildren() { closeAll(); }

void TreeChildren::adopt(asio::ip::tcp::socket socket) {
  const auto unplaced = std::count_if(children_.begin(), children_.end(), [](const auto& c) { return !c->child; });
  if (static_cast<size_t>(unplaced) >= kMaxUnplaced) {  // a flood: a stranger goes (bootstrap/stranger_eviction.h)
    // One that has not proved the secret if there is any: a proved node waiting for its place
    // is a daemon of this job, whatever host it shares with a flood.
    const bool any_stranger = std::any_of(children_.begin(), children_.end(), [](const auto& c) { return !c->proved; });
    const auto victim = strangerToDrop(
        children_.begin(), children_.end(), [&](const auto& c) { return !c->child && (!c->proved || !any_stranger); },
        [](const auto& c) { return std::string_view(c->conn->peer()); }, [](const auto& c) { return c->since; },
        std::chrono::steady_clock::now());
    if (victim != children_.end()) drop((*victim)->id);
  }
  auto c = std::make_unique<Child>();
  c->conn = Connection::create(std::move(socket));  // 4 KiB frames until the proof
  c->nonce = randomBytes(kNonceBytes);
  c->since = c->last_heard = std::chrono::steady_clock::now();
  c->id = next_id_++;
  Child* raw = c.get();
  children_.push_back(std::move(c));
  raw->conn->start([this, raw](Json&& m) { raw->proved ? onChildMessage(*raw, std::move(m)) : onHello(*raw, std::move(m)); },
                   [this, raw](const std::string& reason) {
                     if (raw->child && !ending_ && hooks_.lost) hooks_.lost(raw->index, reason);
                     asio::post(io_, [this, id = raw->id] { drop(id); });
                   });
  raw->conn->send({{"t", "challenge"}, {"proto", kProtocolVersion}, {"nonce", binary(raw->nonce)}});
}

void TreeChildren::onHello(Child& c, Json&& msg) {
  const std::string node = getString(msg, "node");
  if (getString(msg, "t") != "hello" ||
      !constantTimeEquals(bytesOf(msg["mac"]), helloProof(secret_, c.nonce, bytesOf(msg["nonce"]), node))) {
    spdlog::warn("rejected a connection from {} on the tree listener: it did not prove the job secret", c.conn->peer());
    c.conn->close();
    asio::post(io_, [this, id = c.id] { drop(id); });
    return;
  }
  c.proved = true;
  c.name = node;
  c.index = static_cast<int>(getInt(msg, "index", -1));
  c.client_nonce = bytesOf(msg["nonce"]);
  // Everything after the hello is sealed, as between a daemon and the frontend.
  c.conn->openFromNow(
      std::make_unique<FrameCipher>(secret_, c.nonce, c.client_nonce, FrameCipher::Direction::to_frontend));
  if (placed_) accepted(c);  // else held until place()
}

void TreeChildren::accepted(Child& c) {
  auto it = expected_.find(c.index);
  if (it == expected_.end() || it->second != c.name || childAt(c.index)) {
    spdlog::warn("node {} (index {}) asked to be a tree child of this node, which does not expect it", c.name, c.index);
    c.conn->close();
    asio::post(io_, [this, id = c.id] { drop(id); });
    return;
  }
  c.child = true;
  c.last_heard = std::chrono::steady_clock::now();
  c.conn->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
  c.conn->setDeadPeerTimeout(dead_peer_);
  c.conn->setOutputHandler([this, p = &c](const OutputRecord& r, OwnedBytes&&) {
    p->last_heard = std::chrono::steady_clock::now();
    hooks_.up_output(std::make_shared<const std::string>(encodeOutputFrame(r.rank, r.stream, r.bytes, r.kind)));
  });
  c.conn->send({{"t", "welcome"}, {"mac", binary(welcomeProof(secret_, c.nonce, c.client_nonce))}});
  c.conn->sealFromNow(
      std::make_unique<FrameCipher>(secret_, c.nonce, c.client_nonce, FrameCipher::Direction::to_daemon));
  if (hooks_.joined) hooks_.joined(c.index, c.conn->peer().substr(0, c.conn->peer().rfind(':')));
}

void TreeChildren::place(int self, TreeShape shape, std::map<int, std::string> children) {
  placed_ = true;
  self_ = self;
  shape_ = shape;
  expected_ = std::move(children);
  std::vector<Child*> held;
  for (auto& c : children_)
    if (c->proved && !c->child) held.push_back(c.get());
  for (Child* c : held) accepted(*c);
}

void TreeChildren::onChildMessage(Child& c, Json&& msg) {
  c.last_heard = std::chrono::steady_clock::now();
  if (!c.child) return;  // proved, but not yet placed: nothing of it may travel
  const std::string type = getString(msg, "t");
  if (type == "ping") return;  // liveness of this link only: not carried up
  if (auto it = msg.find(kSourceTag); it != msg.end()) {
    // A grandchild's message, tagged by its parent: it must come from the subtree it claims.
    const int source = it->is_number_integer() ? it->get<int>() : -1;
    if (!shape_.isInSubtree(source, c.index)) {
      spdlog::warn("node {} relayed a message from node {}, which is not below it; dropped", c.name, source);
      return;
    }
    // A child combines its subtree's fence shares into its own (daemon/subtree_fence.h): one
    // relayed as a grandchild's would count as another contributor here and complete the
    // fence early, without a sibling's share.
    if (type == "fence") {
      spdlog::warn("node {} relayed a fence share of node {} on its own; dropped", c.name, source);
      return;
    }
  } else {
    msg[kSourceTag] = c.index;
  }
  if (type == "fence" && !partsFromSubtree(msg, c.index)) {
    spdlog::warn("node {} sent fence data for a node that is not below it; dropped", c.name);
    return;
  }
  // A failure its node sent ahead of output waiting for credit stays ahead all the way up.
  const bool behind = travelsBehindOutput(type) && !getBool(msg, "ahead");
  hooks_.up(std::move(msg), behind);
}

bool TreeChildren::partsFromSubtree(const Json& fence, int child) const {
  auto it = fence.find("parts");
  if (it == fence.end()) return true;  // the child's own share
  if (!it->is_array()) return false;
  for (const auto& p : *it)
    if (!p.is_array() || p.empty() || !p[0].is_number_integer() || !shape_.isInSubtree(p[0].get<int>(), child))
      return false;
  return true;
}

TreeChildren::Child* TreeChildren::childAt(int index) {
  for (auto& c : children_)
    if (c->child && c->index == index) return c.get();
  return nullptr;
}

bool TreeChildren::sendToward(int node, const Connection::Frame& frame, bool bulk) {
  Child* c = childAt(shape_.childToward(self_, node));
  if (!c || !c->conn->isOpen()) return false;
  bulk ? c->conn->sendBulk(frame) : c->conn->sendEncoded(frame);
  return true;
}

void TreeChildren::sendAll(const Connection::Frame& frame, bool bulk) {
  for (auto& c : children_)
    if (c->child && c->conn->isOpen()) bulk ? c->conn->sendBulk(frame) : c->conn->sendEncoded(frame);
}

void TreeChildren::sendAll(const Connection::BroadcastFrame& broadcast, bool bulk) {
  for (auto& c : children_)
    if (c->child && c->conn->isOpen()) c->conn->sendBroadcast(broadcast, bulk);
}

void TreeChildren::pingAll() {
  static const Json kPing = {{"t", "ping"}};
  if (openChildren() > 0) sendAll(Connection::frameOf(kPing), false);
}

void TreeChildren::checkLiveness(std::chrono::milliseconds timeout) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<Child*> gone;
  for (auto& c : children_) {
    if (c->child ? now - c->last_heard > timeout : now - c->since > kAuthTimeout) gone.push_back(c.get());
  }
  for (Child* c : gone) {
    c->conn->close();
    if (c->child && !ending_ && hooks_.lost)
      hooks_.lost(c->index, "no heartbeat for " + std::to_string(timeout.count() / 1000) + " s");
    drop(c->id);
  }
}

size_t TreeChildren::openChildren() const {
  return static_cast<size_t>(
      std::count_if(children_.begin(), children_.end(), [](const auto& c) { return c->child && c->conn->isOpen(); }));
}

size_t TreeChildren::heldForPlace() const {
  return static_cast<size_t>(std::count_if(children_.begin(), children_.end(), [](const auto& c) {
    return c->proved && !c->child && c->conn->isOpen();
  }));
}

void TreeChildren::closeAll() {
  for (auto& c : children_) c->conn->close();
  children_.clear();
}

void TreeChildren::drop(uint64_t id) {
  for (auto& p : children_)
    if (p->id == id) p->conn->close();
  std::erase_if(children_, [id](const auto& p) { return p->id == id; });
}

}  // namespace tlaunch
