// classifyMessage: what one NCCL message says, for the messages the transport report needs.
// Forms seen in NCCL 2.4.8 – 2.27.5 logs (tests/fixtures/nccl-logs) are accepted side by side:
// "Bootstrap : Using [0]ib0:…" (2.4) and "Bootstrap: Using eth0:…" (2.27), "Ring 00 : 1 -> 0"
// (2.4) and "Channel 00/0 : 1[3000] -> 0[3000]" (2.7+).
#include <cstddef>
#include <optional>

#include "launcher/nccl/nccl_log.h"
#include "launcher/nccl/nccl_text.h"

namespace tlaunch::nccl {
namespace {

// "[0]mlx5_0:1/RoCE", "[1]mlx4_0:2/IB", "[0]eth0:10.0.0.1<0>" (the index is optional).
std::optional<NetDevice> parseDevice(std::string_view token) {
  NetDevice d;
  if (token.starts_with("[")) {
    auto close = token.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    d.index = toInt(token.substr(1, close - 1));
    if (d.index < 0) return std::nullopt;  // "[RO]" and other flags
    token = token.substr(close + 1);
  }
  auto colon = token.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  d.name = std::string(token.substr(0, colon));
  auto rest = token.substr(colon + 1);
  auto slash = rest.find('/');
  if (slash != std::string_view::npos && allDigits(rest.substr(0, slash))) {  // HCA port and link
    d.port = toInt(rest.substr(0, slash));
    auto link = rest.substr(slash + 1);
    d.link = std::string(link.substr(0, link.find('/')));
    return d;
  }
  d.address = std::string(rest.substr(0, rest.find('<')));
  return d;
}

// "ib0:192.168.33.11<0>" or "[0]ib0:192.168.33.11<0>": interface and address.
bool parseInterface(std::string_view text, std::string& name, std::string& address) {
  auto d = parseDevice(text.substr(0, text.find(' ')));
  if (!d || !d->link.empty()) return false;
  name = d->name;
  address = d->address;
  return true;
}

void parseNetDevices(std::string_view text, Event& e) {
  e.kind = EventKind::netDevices;
  e.net = std::string(trim(text.substr(4, text.find_first_of(" :", 4) - 4)));
  auto list = text.substr(text.find("Using ") + 6);
  auto semi = list.find(';');
  if (semi != std::string_view::npos) {
    auto oob = trimLeft(list.substr(semi + 1));
    if (oob.starts_with("OOB ")) parseInterface(oob.substr(4), e.oob_if, e.oob_address);
    list = list.substr(0, semi);
  }
  while (!list.empty()) {
    list = trimLeft(list);
    auto token = list.substr(0, list.find(' '));
    list.remove_prefix(token.size());
    if (auto d = parseDevice(token)) e.devices.push_back(std::move(*d));
  }
}

// "… : 9[1] -> 0[0] [send] via NET/IB/0(8)/GDRDMA"
bool parseChannel(std::string_view text, ChannelHop& hop) {
  auto arrow = text.find(" -> ");
  auto via = text.find(" via ");
  if (arrow == std::string_view::npos || via == std::string_view::npos || via < arrow) return false;
  std::size_t srcEnd = arrow;
  if (srcEnd > 0 && text[srcEnd - 1] == ']') {  // busId in brackets
    auto open = text.rfind('[', srcEnd - 1);
    if (open == std::string_view::npos) return false;
    srcEnd = open;
  }
  std::size_t srcBegin = srcEnd;
  while (srcBegin > 0 && isDigit(text[srcBegin - 1])) --srcBegin;
  hop.src = toInt(text.substr(srcBegin, srcEnd - srcBegin));
  hop.dst = toInt(text.substr(arrow + 4));
  if (hop.src < 0 || hop.dst < 0) return false;
  auto between = text.substr(arrow, via - arrow);
  hop.direction = between.find("[send]") != std::string_view::npos      ? Direction::send
                  : between.find("[receive]") != std::string_view::npos ? Direction::receive
                                                                        : Direction::none;
  hop.path = std::string(trim(text.substr(via + 5)));
  std::string_view path = hop.path;
  if (path.starts_with("NET/")) {
    // The network name may contain spaces ("AWS Libfabric"); the device index follows it.
    std::size_t at = 4;
    std::size_t slash;
    while ((slash = path.find('/', at)) != std::string_view::npos) {
      if (slash + 1 < path.size() && isDigit(path[slash + 1])) break;
      at = slash + 1;
    }
    if (slash == std::string_view::npos) return false;  // cut off before the device: not usable
    hop.net = std::string(path.substr(4, slash - 4));
    auto dev = path.substr(slash + 1);
    hop.net_dev = toInt(dev);
    auto paren = dev.find('(');
    if (paren != std::string_view::npos && paren < dev.find('/')) hop.proxy_rank = toInt(dev.substr(paren + 1));
    hop.gdr = path.find("/GDRDMA") != std::string_view::npos;
  }
  return true;
}

// "comm 0x7f… rank 0 nranks 2 …" and "comm 0x… rank 8 nRanks 16 nNodes 2 …"
bool parseComm(std::string_view text, Event& e) {
  auto at = text.find("comm 0x");
  if (at == std::string_view::npos) return false;
  e.comm = std::string(wordAfter(text.substr(at), "comm "));
  auto rest = text.substr(at);
  e.rank = toInt(wordAfter(rest, " rank "));
  auto nranks = wordAfter(rest, " nranks ");
  if (nranks.empty()) nranks = wordAfter(rest, " nRanks ");
  e.nranks = toInt(nranks);
  auto nnodes = wordAfter(rest, " nNodes ");
  e.nnodes = nnodes.empty() ? -1 : toInt(nnodes);
  return e.rank >= 0 && e.nranks > 0;
}

// "bootstrap.cc:100 -> 2", "misc/group.cc:69 -> 2 [Async thread]"
bool parseErrorTrace(std::string_view text, Event& e) {
  auto arrow = text.find(" -> ");
  if (arrow > 200) return false;  // npos too
  auto location = text.substr(0, arrow);
  auto colon = location.rfind(':');
  if (colon == std::string_view::npos || !allDigits(location.substr(colon + 1)) ||
      location.find(' ') != std::string_view::npos)
    return false;
  e.number = toLong(text.substr(arrow + 4));
  if (e.number < 0) return false;
  e.name = std::string(location);
  return true;
}

}  // namespace

Event classifyMessage(std::string_view text, bool warn) {
  Event e;
  e.warning_level = warn;
  e.text = std::string(text);
  if (warn) {
    e.kind = EventKind::warn;
    return e;
  }
  if (text.starts_with("NCCL version ")) {
    e.kind = EventKind::version;
    e.name = std::string(wordAfter(text, "NCCL version "));
  } else if (text.starts_with("Bootstrap") && text.find("Using ") != std::string_view::npos) {
    if (parseInterface(text.substr(text.find("Using ") + 6), e.name, e.address)) e.kind = EventKind::bootstrap;
  } else if (text.starts_with("NET/") && text.find("Using [") != std::string_view::npos) {
    parseNetDevices(text, e);
  } else if (text.starts_with("NET/") && text.find("No device found") != std::string_view::npos) {
    e.kind = EventKind::netNoDevice;
    e.net = std::string(trim(text.substr(4, text.find_first_of(" :", 4) - 4)));
  } else if (text.starts_with("Using network ")) {
    e.kind = EventKind::usingNetwork;
    e.name = std::string(trim(text.substr(14)));
  } else if (text.starts_with("Assigned NET plugin ") && text.ends_with(" to comm")) {
    e.kind = EventKind::usingNetwork;
    e.name = std::string(text.substr(20, text.size() - 20 - 8));
  } else if (text.starts_with("NET/Plugin") && text.find("Loaded net plugin ") != std::string_view::npos) {
    e.kind = EventKind::pluginLoaded;
    auto name = text.substr(text.find("Loaded net plugin ") + 18);
    e.name = std::string(trim(name.substr(0, name.find(" (v"))));
  } else if (text.starts_with("NET/Plugin") && (text.find("No plugin found") != std::string_view::npos ||
                                                text.find("sing internal") != std::string_view::npos)) {
    e.kind = EventKind::pluginNone;
  } else if (text.starts_with("NET/OFI ") && text.find("aws-ofi-nccl ") != std::string_view::npos &&
             (text.find(" Using ") != std::string_view::npos || text.find(" Initializing ") != std::string_view::npos)) {
    e.kind = EventKind::ofiVersion;
    e.name = "aws-ofi-nccl " + std::string(wordAfter(text, "aws-ofi-nccl "));
  } else if (text.starts_with("NET/OFI Selected") && text.find("rovider is ") != std::string_view::npos) {
    e.kind = EventKind::ofiProvider;
    auto provider = wordAfter(text, "rovider is ");
    e.name = std::string(provider.substr(0, provider.find(',')));
    e.number = toLong(wordAfter(text, "(found "));
  } else if (text.find(" via ") != std::string_view::npos && text.find(" -> ") != std::string_view::npos) {
    if (parseChannel(text, e.hop)) e.kind = EventKind::channel;
  } else if (text.find("comm 0x") != std::string_view::npos && parseComm(text, e)) {
    e.kind = text.find("Init COMPLETE") != std::string_view::npos ? EventKind::initComplete : EventKind::commInfo;
  } else if (text.starts_with("NCCL_") && text.find(" set ") != std::string_view::npos) {
    auto name = text.substr(0, text.find(' '));
    auto to = text.find(" to ");
    if (to != std::string_view::npos) {
      e.kind = EventKind::envSetting;
      e.name = std::string(name);
      e.value = std::string(trim(text.substr(to + 4)));
    }
  } else if (parseErrorTrace(text, e)) {
    e.kind = EventKind::errorTrace;
  }
  return e;
}

}  // namespace tlaunch::nccl
