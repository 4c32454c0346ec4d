// Sending one chunk's data datagrams on loopback: S2's 256 lanes of 2 076-byte VITA 49 packets
// (512 decimated samples each), built into DatagramBatches and handed to UdpSender::send_batch
// (sendmmsg with UDP GSO), by 1, 2, 4 or 8 threads each with its own socket and its share of
// the lanes, to one receiver thread draining with recvmmsg. Wall time per chunk: what the output
// thread's `sending` part of the latency would be with that many senders.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/worker_pool.hpp"
#include "wire/udp_sender.hpp"
#include "loopback_receiver.hpp"

namespace {

constexpr size_t kDatagram = 2076;

void BM_SendChunk(benchmark::State& state) {
  const auto senders = uint32_t(state.range(0));
  const auto lanes = uint32_t(state.range(1));
  // Packets a datagram carries: 1, or a VRL frame (VITA 49.1) of that many plus its 12 bytes.
  const auto per_frame = uint32_t(state.range(2));
  const size_t datagram = per_frame == 1 ? kDatagram : per_frame * kDatagram + 12;
  // 1: the receiver takes each GSO send whole (UDP_GRO, vigil-listen's --gro).
  const bool gro = state.range(3) != 0;
  vigil::bench::LoopbackReceiver rx(gro);
  boost::asio::io_context io;
  std::vector<std::unique_ptr<vigil::UdpSender>> out;
  std::vector<std::unique_ptr<vigil::DatagramBatch>> batches;
  for (uint32_t i = 0; i < senders; ++i) {
    out.push_back(std::make_unique<vigil::UdpSender>(io, vigil::Endpoint{"127.0.0.1", rx.port}));
    batches.push_back(std::make_unique<vigil::DatagramBatch>(vigil::UdpSender::kMaxBatch, std::max<size_t>(datagram, 9000)));
  }
  vigil::WorkerPool pool(senders);
  std::atomic<uint64_t> sent{0};
  auto part = [&](uint32_t p) {
    const auto r = vigil::WorkerPool::range(lanes, senders, p);
    vigil::DatagramBatch& b = *batches[p];
    for (uint32_t lane = r.first; lane < r.end; lane += per_frame) {
      const uint32_t k = std::min(per_frame, r.end - lane);
      const size_t bytes = per_frame == 1 ? kDatagram : k * kDatagram + 12;
      std::memset(b.next(), int(lane), bytes);
      b.commit(bytes);
      if (b.full()) {
        sent.fetch_add(out[p]->send_batch(b).sent, std::memory_order_relaxed);
        b.clear();
      }
    }
    if (b.size()) sent.fetch_add(out[p]->send_batch(b).sent, std::memory_order_relaxed);
    b.clear();
  };
  for (auto _ : state) {
    pool.run(senders, part);
    // Let the receiver drain, as the chunk period would: outside the timing.
    state.PauseTiming();
    for (int i = 0; i < 200 && rx.got.load() < sent.load(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(50));
    state.ResumeTiming();
  }
  state.counters["datagrams_per_chunk"] = double((lanes + per_frame - 1) / per_frame);
  state.SetItemsProcessed(int64_t(state.iterations()) * lanes);  // VITA 49 packets
  // Not received within 10 ms of the last chunk (the receiver's buffer overflowed): the receiver
  // shares the machine's cores, as vigil-listen does in the scenarios.
  state.counters["not_received"] = double(sent.load() - std::min(sent.load(), rx.got.load()));
}
BENCHMARK(BM_SendChunk)
    ->ArgNames({"senders", "lanes", "per_frame", "gro"})
    ->Args({1, 256, 1, 0})->Args({2, 256, 1, 0})->Args({4, 256, 1, 0})->Args({8, 256, 1, 0})
    ->Args({1, 4096, 1, 0})->Args({4, 4096, 1, 0})->Args({8, 4096, 1, 0})
    ->Args({1, 256, 4, 0})->Args({1, 256, 31, 0})->Args({4, 256, 31, 0})->Args({8, 256, 31, 0})
    ->Args({1, 4096, 31, 0})->Args({4, 4096, 31, 0})->Args({8, 4096, 31, 0})
    ->Args({1, 256, 1, 1})->Args({2, 256, 1, 1})->Args({4, 256, 1, 1})->Args({8, 256, 1, 1})
    ->Args({1, 4096, 1, 1})->Args({4, 4096, 1, 1})->Args({8, 4096, 1, 1})
    ->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
