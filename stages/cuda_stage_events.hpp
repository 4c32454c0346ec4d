// What the CUDA stages share about their one event, the hand-over to the CPU twin (`backend`,
// state fallback: docs/PROTOCOL.md). Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <nlohmann/json.hpp>
#include <string>

#include "stages/event_record.hpp"
#include "stages/stage.hpp"

namespace vigil {

// The fallback event's record: the failing chunk and the CUDA error.
inline EventRecord cuda_fallback_event(uint16_t stage, const Exec& exec, cudaError_t error) noexcept {
  EventRecord ev;
  ev.kind = EventKind::kBackendFallback;
  ev.stage = stage;
  ev.value = double(int(error));
  ev.frame = exec.chunk.first_frame;
  ev.t_utc_ns = exec.chunk.t_first_utc_ns;
  return ev;
}

// Its fields in the event body.
inline void describe_cuda_fallback(const EventRecord& ev, nlohmann::json& body) {
  if (ev.kind != EventKind::kBackendFallback) return;
  const auto e = cudaError_t(int(ev.value));
  body["state"] = "fallback";
  body["from"] = "cuda";
  body["to"] = "cpu";
  body["error"] = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace vigil
