// One allocation for all chunks, each chunk 64-byte aligned so no two share a cache line.
#include "acquisition/chunk_pool.hpp"

#include "core/out_of_memory.hpp"

#include <cstdlib>
#include <new>
#include <stdexcept>

namespace vigil {

HostAllocator aligned_host_allocator() {
  return {[](size_t bytes) -> void* { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); },
          [](void* p) { std::free(p); }, "host"};
}

ChunkPool::ChunkPool(uint32_t count, size_t bytes_per_chunk, HostAllocator allocator)
    : allocator_(std::move(allocator)), bytes_per_chunk_(bytes_per_chunk) {
  if (count < 2 || count > 65536)
    throw std::invalid_argument("ChunkPool: count must be 2..65536, got " + std::to_string(count));
  if (bytes_per_chunk < 1 || bytes_per_chunk > (size_t(1) << 30))
    throw std::invalid_argument("ChunkPool: bytes_per_chunk must be 1..1073741824, got " +
                                std::to_string(bytes_per_chunk));
  const size_t stride = (bytes_per_chunk + 63) / 64 * 64;
  memory_ = allocator_.allocate(stride * count);
  if (!memory_)
    throw OutOfMemory("ChunkPool: cannot allocate " + std::to_string(stride * count) +
                             " bytes of " + allocator_.name + " memory for " + std::to_string(count) +
                             " chunks");
  chunks_.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    chunks_[i].data = static_cast<std::byte*>(memory_) + size_t(i) * stride;
    chunks_[i].capacity_bytes = bytes_per_chunk;
  }
}

ChunkPool::~ChunkPool() {
  if (memory_) allocator_.release(memory_);
}

}  // namespace vigil
