#pragma once
// Whether an exception's text is what a collective library raises when a peer went away (its
// socket closed, the communicator aborted): the error of a rank that was broken by another, not
// the cause. Used to prefer the rank whose own exception torch's @record wrote
// (daemon/rank_error_file.h) when the rank blamed first only lost its peer. Pure.
#include <string_view>

namespace tlaunch {

bool looksLikePeerLoss(std::string_view message);

}  // namespace tlaunch
