// ChunkPool: every chunk the service will ever use, allocated once at start.
// Thread: built and destroyed on the main thread; chunks then travel through ChunkQueues.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "acquisition/chunk.hpp"

namespace vigil {

// Where chunk memory comes from: plain aligned host memory by default, page-locked
// (cudaHostAlloc) when the CUDA backend runs.
struct HostAllocator {
  std::function<void*(size_t bytes)> allocate;  // returns null on failure
  std::function<void(void*)> release;
  std::string name;
};

HostAllocator aligned_host_allocator();

class ChunkPool {
 public:
  // count: 2..65536 chunks; bytes_per_chunk: 1..2^30. Throws std::invalid_argument for bad
  // sizes and std::bad_alloc (with the size in what()) when memory cannot be had.
  ChunkPool(uint32_t count, size_t bytes_per_chunk, HostAllocator allocator = aligned_host_allocator());
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  uint32_t count() const noexcept { return uint32_t(chunks_.size()); }
  size_t bytes_per_chunk() const noexcept { return bytes_per_chunk_; }
  Chunk& chunk(uint32_t i) noexcept { return chunks_[i]; }
  const std::string& allocator_name() const noexcept { return allocator_.name; }

 private:
  HostAllocator allocator_;
  size_t bytes_per_chunk_;
  void* memory_ = nullptr;
  std::vector<Chunk> chunks_;
};

}  // namespace vigil
