// Which alarm an `alarm` event speaks of, and whether it leaves that alarm raised: what a receiver
// needs to count the alarms active (vigil-listen --nats's fleet table). An alarm is its stage,
// rule, band and channel, and for a cluster alarm (rule `cluster`) its cell; a `cleared` event to
// a level above normal (danger down to alert) leaves it raised (docs/PROTOCOL.md, `alarm`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vigil {

// "" for an event that is not an alarm with a string state.
std::string alarm_key(const nlohmann::json& ev);
// After this event the alarm is raised: `raised`, or `cleared` to a `level` other than normal.
bool alarm_left_raised(const nlohmann::json& ev);

}  // namespace vigil
