#pragma once
// A table of handlers by message type ("t"), as the control protocol's one dispatch point on
// each side: the frontend routes its daemons' messages, a daemon its frontend's (and, in a
// tree, its children's). Each type has exactly one handler; a type may also be claimed by
// prefix ("rdma_"). Registering a type twice is a programming error and throws at start-up.
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bootstrap/message.h"

namespace tlaunch {

template <typename... Context>
class MessageRouter {
 public:
  // The handler gets the message's type (one handler may serve several), the message, and the
  // context the caller routes with (e.g. the link it came from).
  using Handler = std::function<void(const std::string& type, Json&& msg, Context...)>;

  MessageRouter& on(const std::string& type, Handler handler) {
    if (!exact_.emplace(type, std::move(handler)).second) throw std::logic_error("two handlers for message " + type);
    return *this;
  }
  MessageRouter& on(std::initializer_list<const char*> types, const Handler& handler) {
    for (const char* t : types) on(t, handler);
    return *this;
  }
  MessageRouter& onPrefix(std::string prefix, Handler handler) {
    for (const auto& [p, h] : prefixes_)
      if (p == prefix) throw std::logic_error("two handlers for messages " + prefix + "*");
    prefixes_.emplace_back(std::move(prefix), std::move(handler));
    return *this;
  }

  // Calls the handler of msg["t"]; false when no handler claims it (the caller decides what an
  // unknown type means on its side). A message without a string "t" is never routed.
  bool route(Json&& msg, Context... context) const {
    const auto t = msg.find("t");
    if (t == msg.end() || !t->is_string()) return false;
    const std::string type = t->template get<std::string>();
    const Handler* h = find(type);
    if (h == nullptr) return false;
    (*h)(type, std::move(msg), context...);
    return true;
  }

  bool handles(std::string_view type) const { return find(type) != nullptr; }

  // Every exact type, sorted, then every prefix followed by '*': what this side understands.
  std::vector<std::string> types() const {
    std::vector<std::string> out;
    for (const auto& [t, h] : exact_) out.push_back(t);
    for (const auto& [p, h] : prefixes_) out.push_back(p + "*");
    return out;
  }

 private:
  const Handler* find(std::string_view type) const {
    if (auto it = exact_.find(type); it != exact_.end()) return &it->second;
    for (const auto& [p, h] : prefixes_)
      if (type.substr(0, p.size()) == p) return &h;
    return nullptr;
  }

  std::map<std::string, Handler, std::less<>> exact_;
  std::vector<std::pair<std::string, Handler>> prefixes_;
};

}  // namespace tlaunch
