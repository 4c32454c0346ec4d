// Reads n frames of every channel of a float32 source through read(), de-interleaved into one
// vector per channel (the synthetic source's tests).
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "acquisition/chunk_pool.hpp"
#include "acquisition/source.hpp"

namespace vigil::test {

inline std::vector<std::vector<float>> read_frames(Source& src, size_t n) {
  const SourceFormat f = src.format();
  ChunkPool pool(2, size_t(f.chunk_frames) * f.channels * 4);
  Chunk& c = pool.chunk(0);
  std::vector<std::vector<float>> out(f.channels);
  while (out[0].size() < n) {
    EXPECT_EQ(src.read(c), ReadStatus::kOk);
    const auto* d = reinterpret_cast<const float*>(c.data);
    for (uint32_t i = 0; i < c.header.frames; ++i)
      for (uint32_t ch = 0; ch < f.channels; ++ch) out[ch].push_back(d[size_t(i) * f.channels + ch]);
  }
  for (auto& v : out) v.resize(n);
  return out;
}

}  // namespace vigil::test
