// InputHistory: the newest frames of every lane, appended on the host or, piece by piece, by a
// device copy into the caller's storage (pieces() then advance()); newest() gives them back oldest
// first. Checked against the input itself over random chunk lengths, including chunks longer than
// the history and appends that wrap the ring.
#include "stages/input_history.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "../support/signals.hpp"

namespace vigil {
namespace {

constexpr uint32_t kLanes = 3, kFrames = 100, kStride = 300;

// Appends x (kLanes lanes of `total` frames) in random chunks; by_pieces: through pieces() and a
// copy as a device would make it, then advance().
void check(bool by_pieces, float* storage) {
  const uint32_t total = 5000;
  const std::vector<float> x = test::randn(size_t(kLanes) * total, 5);
  InputHistory h;
  h.assign(kLanes, kFrames, storage);
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> len(1, 250);
  std::vector<float> chunk(size_t(kLanes) * kStride), got(size_t(kLanes) * kFrames);
  for (uint32_t at = 0; at < total;) {
    const uint32_t n = std::min(len(rng), total - at);
    for (uint32_t l = 0; l < kLanes; ++l) std::copy_n(&x[size_t(l) * total + at], n, &chunk[size_t(l) * kStride]);
    if (by_pieces) {
      InputHistory::Piece p[2];
      const unsigned count = h.pieces(n, p);
      ASSERT_GE(count, 1u);
      ASSERT_LE(p[0].count + (count > 1 ? p[1].count : 0), kFrames);
      for (uint32_t l = 0; l < kLanes; ++l)
        for (unsigned i = 0; i < count; ++i)
          std::copy_n(&chunk[size_t(l) * kStride + p[i].src], p[i].count, h.data() + size_t(l) * kFrames + p[i].dst);
      h.advance(n);
    } else {
      h.remember(chunk.data(), kStride, n);
    }
    at += n;
    const uint32_t k = std::min(at, kFrames);
    h.newest(k, got.data(), kFrames);
    for (uint32_t l = 0; l < kLanes; ++l)
      for (uint32_t i = 0; i < k; ++i)
        ASSERT_EQ(got[size_t(l) * kFrames + i], x[size_t(l) * total + at - k + i]) << "lane " << l << " frame " << i;
  }
}

TEST(InputHistory, KeepsTheNewestFramesAppendedOnTheHost) { check(false, nullptr); }

TEST(InputHistory, KeepsTheNewestFramesCopiedInByPiecesIntoTheCallersStorage) {
  std::vector<float> storage(size_t(kLanes) * kFrames, 1.0f);  // not zero: assign() clears it
  check(true, storage.data());
  InputHistory h;
  h.assign(kLanes, kFrames, storage.data());
  std::vector<float> got(size_t(kLanes) * kFrames, 1.0f);
  h.newest(kFrames, got.data(), kFrames);
  for (float v : got) ASSERT_EQ(v, 0.0f) << "the history before the stream starts is silence";
}

}  // namespace
}  // namespace vigil
