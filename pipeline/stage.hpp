// Stage: one step of the graph. prepare() off the real-time path; process() on it.
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/block.hpp"

namespace vigil {

enum class StageStatus { kOk, kFailed };

class Stage {
 public:
  virtual ~Stage() = default;
  // Allocates, designs filters; returns the output format (bands 0: events only). May throw.
  virtual StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) = 0;
  // RT-safe: no allocation, locks, logging, exceptions or blocking.
  virtual StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept = 0;
  // Forget history.
  virtual void reset() noexcept = 0;
};

}  // namespace vigil
