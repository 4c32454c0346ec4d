// Issue 8's streaming row: int16 chunks from page-locked host memory through the whole GPU chain —
// conversion to planar float, a 4-band crossover FIR (255 taps, OverlapSaveCuda), db8 wavelet
// denoising of every band lane (WaveletDenoiserCuda) — and the bands back to page-locked host
// memory, with two chunks in flight: chunk k+1's copy in and chunk k-1's copy out overlap chunk k's
// compute (three streams ordered by events). Reports the sustained input rate and, measured in
// the same run, the PCIe bandwidth each way (large pinned copies) and the HBM bandwidth (a large
// device-to-device copy), with the chain's share of each. Checks the first chunk's output against
// the CPU (direct FIR in double, then dsp/WaveletDenoiser) before timing anything.
// Usage: streaming_cuda_bench [CHUNKS]   (default 40; 16 channels x 2^20 frames per chunk)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/overlap_save_cuda.hpp"
#include "cuda/pinned_buffer.hpp"
#include "cuda/sample_convert.cuh"
#include "cuda/wavelet_denoiser_cuda.hpp"
#include "dsp/fir_design.hpp"
#include "dsp/wavelet_denoiser.hpp"

namespace {

using vigil::cuda::PinnedBuffer;

constexpr uint32_t kChannels = 16, kFrames = 1u << 20, kBands = 4, kTaps = 255;
constexpr double kRate = 10e6;

// Bytes per second of `reps` copies of `bytes` (after one warm-up), timed with events.
double copy_rate(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s, int reps) {
  cudaEvent_t a, b;
  VIGIL_CUDA_CHECK(cudaEventCreate(&a));
  VIGIL_CUDA_CHECK(cudaEventCreate(&b));
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
  VIGIL_CUDA_CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < reps; ++i) VIGIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
  VIGIL_CUDA_CHECK(cudaEventRecord(b, s));
  VIGIL_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  VIGIL_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return double(bytes) * reps / (double(ms) / 1e3);
}

// Each lane's denoise is ~20 small launches in sequence (levels, selection passes): one lane alone
// leaves most of the GPU idle, so the lanes are spread over kDenoiseStreams streams, each with its
// own denoiser (scratch), forked from and joined back to the compute stream by events.
constexpr int kDenoiseStreams = 8;

struct Chain {
  cudaStream_t compute;
  vigil::cuda::OverlapSaveCuda fir;
  float* d_planar;
  unsigned long long* d_counts;
  cudaStream_t lane_streams[kDenoiseStreams] = {};
  std::vector<std::unique_ptr<vigil::cuda::WaveletDenoiserCuda>> denoisers;
  cudaEvent_t fork = nullptr, joins[kDenoiseStreams] = {};

  void make_denoisers(const vigil::DenoiseSpec& spec) {
    VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    for (int i = 0; i < kDenoiseStreams; ++i) {
      VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&lane_streams[i], cudaStreamNonBlocking));
      VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(&joins[i], cudaEventDisableTiming));
      denoisers.push_back(std::make_unique<vigil::cuda::WaveletDenoiserCuda>(spec, kFrames, lane_streams[i]));
    }
  }

  // Enqueues chunk d_raw (interleaved int16) -> d_bands (band-major lanes of kFrames) on `compute`.
  void enqueue(const void* d_raw, float* d_bands) {
    vigil::cuda::ConvertParams p;
    p.d_in = d_raw;
    p.format = vigil::SampleFormat::kInt16;
    p.frames = kFrames;
    p.channels = kChannels;
    p.scale = 1.0f / 32768.0f;
    p.d_out = d_planar;
    p.out_stride_frames = kFrames;
    p.d_counts = d_counts;
    VIGIL_CUDA_CHECK(vigil::cuda::launch_convert_to_planar(p, compute));
    VIGIL_CUDA_CHECK(fir.process(d_planar, kFrames, kFrames, d_bands, kFrames));
    VIGIL_CUDA_CHECK(cudaEventRecord(fork, compute));
    for (int i = 0; i < kDenoiseStreams; ++i) {
      VIGIL_CUDA_CHECK(cudaStreamWaitEvent(lane_streams[i], fork, 0));
      for (uint32_t lane = uint32_t(i); lane < kBands * kChannels; lane += kDenoiseStreams) {
        float* x = d_bands + size_t(lane) * kFrames;
        VIGIL_CUDA_CHECK(denoisers[size_t(i)]->process(x, x));
      }
      VIGIL_CUDA_CHECK(cudaEventRecord(joins[i], lane_streams[i]));
      VIGIL_CUDA_CHECK(cudaStreamWaitEvent(compute, joins[i], 0));
    }
  }
};

std::vector<std::vector<float>> crossover_taps() {
  const auto d = vigil::design_crossover({250e3, 1e6, 3e6}, kTaps, kRate, {});
  std::vector<std::vector<float>> f;
  for (const auto& h : d) f.emplace_back(h.begin(), h.end());
  return f;
}

// The first chunk's lanes, (band, channel) pairs checked, against the CPU.
double check_first_chunk(const std::vector<int16_t>& raw, const std::vector<float>& got,
                         const std::vector<float>& fir_only, uint32_t latency,
                         const std::vector<std::vector<float>>& taps, const vigil::DenoiseSpec& spec) {
  double worst = 0;
  vigil::WaveletDenoiser cpu(spec, kFrames);
  for (const auto& [b, c] : {std::pair<uint32_t, uint32_t>{0, 0}, {2, 7}, {3, 15}}) {
    // The stream is the filtered input delayed by `latency` frames; the state starts at zero.
    std::vector<float> y(kFrames, 0.0f);
    for (uint32_t n = latency; n < kFrames; ++n) {
      const uint32_t m = n - latency;
      double acc = 0;
      for (uint32_t k = 0; k < kTaps && k <= m; ++k) acc += double(taps[b][k]) * (raw[size_t(m - k) * kChannels + c] / 32768.0);
      y[n] = float(acc);
    }
    double fir_energy = 0;
    {
      const float* f = fir_only.data() + size_t(b * kChannels + c) * kFrames;
      double num = 0, den = 0;
      for (uint32_t n = 0; n < kFrames; ++n) {
        num += (double(f[n]) - y[n]) * (double(f[n]) - y[n]);
        den += double(y[n]) * y[n];
      }
      std::printf("check: band %u channel %u: the FIR alone: relative L2 %.2e\n", b, c, std::sqrt(num / den));
      worst = std::max(worst, std::sqrt(num / den));
      fir_energy = den;
    }
    cpu.process(y.data(), y.data());
    const float* g = got.data() + size_t(b * kChannels + c) * kFrames;
    double num = 0, den = 0;
    for (uint32_t n = 0; n < kFrames; ++n) {
      num += (double(g[n]) - y[n]) * (double(g[n]) - y[n]);
      den += double(y[n]) * y[n];
    }
    // Relative to what entered the denoiser: a lane of noise only (band 3 of channel 15, whose
    // sine is in band 2) is thresholded to almost nothing, where a ratio to the output means little.
    std::printf("check: band %u channel %u: denoised: L2 error / L2 of the denoiser's input %.2e (output RMS %.3g, its input RMS %.3g)\n",
                b, c, std::sqrt(num / fir_energy), std::sqrt(den / kFrames), std::sqrt(fir_energy / kFrames));
    worst = std::max(worst, std::sqrt(num / fir_energy));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  const int chunks = argc > 1 ? std::max(4, std::atoi(argv[1])) : 40;
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    std::printf("streaming_cuda_bench: skipped: no CUDA device (%s)\n", why.c_str());
    return 0;
  }
  cudaDeviceProp prop{};
  VIGIL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const size_t in_bytes = size_t(kFrames) * kChannels * sizeof(int16_t);
  const size_t out_bytes = size_t(kBands) * kChannels * kFrames * sizeof(float);

  cudaStream_t h2d, compute, d2h;
  for (cudaStream_t* s : {&h2d, &compute, &d2h}) VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  const std::vector<std::vector<float>> taps = crossover_taps();
  vigil::DenoiseSpec spec;  // db8, deepest level, soft, finest-level sigma
  float* d_planar = nullptr;
  unsigned long long* d_counts = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_planar), size_t(kChannels) * kFrames * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_counts), 2 * kChannels * sizeof(unsigned long long)));
  VIGIL_CUDA_CHECK(cudaMemset(d_counts, 0, 2 * kChannels * sizeof(unsigned long long)));
  Chain chain{compute, vigil::cuda::OverlapSaveCuda(taps, kChannels, 8192, kFrames, compute), d_planar, d_counts, {}, {}, nullptr, {}};
  chain.make_denoisers(spec);

  // Two slots: host and device buffers for chunks in flight.
  PinnedBuffer h_in[2] = {PinnedBuffer(in_bytes, false), PinnedBuffer(in_bytes, false)};
  PinnedBuffer h_out[2] = {PinnedBuffer(out_bytes, false), PinnedBuffer(out_bytes, false)};
  void* d_raw[2];
  float* d_bands[2];
  for (int s = 0; s < 2; ++s) {
    VIGIL_CUDA_CHECK(cudaMalloc(&d_raw[s], in_bytes));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_bands[s]), out_bytes));
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.f, 3000.f);
  std::vector<int16_t> first(size_t(kFrames) * kChannels);
  for (int s = 0; s < 2; ++s) {
    auto* x = h_in[s].host<int16_t>();
    for (size_t i = 0; i < size_t(kFrames) * kChannels; ++i) {
      const double t = double(i / kChannels) / kRate;
      const float v = 8000.f * float(std::sin(2 * M_PI * (0.5e6 + 1e5 * double(i % kChannels)) * t)) + noise(rng);
      x[i] = int16_t(std::clamp(v, -32768.f, 32767.f));
    }
  }
  std::copy_n(h_in[0].host<int16_t>(), first.size(), first.begin());

  // Correctness first: chunk 0 alone, against the CPU.
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(d_raw[0], h_in[0].host(), in_bytes, cudaMemcpyHostToDevice, compute));
  chain.enqueue(d_raw[0], d_bands[0]);
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(h_out[0].host(), d_bands[0], out_bytes, cudaMemcpyDeviceToHost, compute));
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(compute));
  std::vector<float> got(h_out[0].host<float>(), h_out[0].host<float>() + out_bytes / sizeof(float));
  std::vector<float> fir_only(got.size());
  {  // the FIR alone on the same input (d_planar still holds chunk 0), by a fresh filter
    vigil::cuda::OverlapSaveCuda fresh(taps, kChannels, 8192, kFrames, compute);
    VIGIL_CUDA_CHECK(fresh.process(d_planar, kFrames, kFrames, d_bands[1], kFrames));
    VIGIL_CUDA_CHECK(cudaMemcpyAsync(fir_only.data(), d_bands[1], out_bytes, cudaMemcpyDeviceToHost, compute));
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(compute));
  }
  const double err = check_first_chunk(first, got, fir_only, chain.fir.latency_frames(), taps, spec);
  std::printf("check: the first chunk's lanes (band 0 ch 0, band 2 ch 7, band 3 ch 15) against the CPU: relative L2 %.2e (%s)\n",
              err, err <= 1e-4 ? "ok" : "FAILED");
  if (!(err <= 1e-4)) return 1;

  // Compute alone, per chunk (events on the compute stream, median of 5).
  cudaEvent_t a, b;
  VIGIL_CUDA_CHECK(cudaEventCreate(&a));
  VIGIL_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> compute_ms;
  for (int i = 0; i < 5; ++i) {
    VIGIL_CUDA_CHECK(cudaEventRecord(a, compute));
    chain.enqueue(d_raw[0], d_bands[0]);
    VIGIL_CUDA_CHECK(cudaEventRecord(b, compute));
    VIGIL_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    VIGIL_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    compute_ms.push_back(ms);
  }
  std::sort(compute_ms.begin(), compute_ms.end());

  // Streaming: chunk k's copy in on h2d, compute on `compute`, copy out on d2h; slots alternate.
  cudaEvent_t in_done[2], comp_done[2], out_done[2];
  for (int s = 0; s < 2; ++s)
    for (cudaEvent_t* e : {&in_done[s], &comp_done[s], &out_done[s]})
      VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  bool used[2] = {false, false};
  auto submit = [&](int k) {
    const int s = k % 2;
    if (used[s]) VIGIL_CUDA_CHECK(cudaStreamWaitEvent(h2d, comp_done[s], 0));  // d_raw[s] consumed
    VIGIL_CUDA_CHECK(cudaMemcpyAsync(d_raw[s], h_in[s].host(), in_bytes, cudaMemcpyHostToDevice, h2d));
    VIGIL_CUDA_CHECK(cudaEventRecord(in_done[s], h2d));
    VIGIL_CUDA_CHECK(cudaStreamWaitEvent(compute, in_done[s], 0));
    if (used[s]) VIGIL_CUDA_CHECK(cudaStreamWaitEvent(compute, out_done[s], 0));  // d_bands[s] copied out
    chain.enqueue(d_raw[s], d_bands[s]);
    VIGIL_CUDA_CHECK(cudaEventRecord(comp_done[s], compute));
    VIGIL_CUDA_CHECK(cudaStreamWaitEvent(d2h, comp_done[s], 0));
    VIGIL_CUDA_CHECK(cudaMemcpyAsync(h_out[s].host(), d_bands[s], out_bytes, cudaMemcpyDeviceToHost, d2h));
    VIGIL_CUDA_CHECK(cudaEventRecord(out_done[s], d2h));
    used[s] = true;
  };
  for (int k = 0; k < 4; ++k) submit(k);  // warm-up
  VIGIL_CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < chunks; ++k) submit(k);
  VIGIL_CUDA_CHECK(cudaDeviceSynchronize());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double samples_per_s = double(chunks) * kFrames * kChannels / seconds;

  // The machine's own limits, same run: large pinned copies each way, a large device copy.
  const double pcie_h2d = copy_rate(d_bands[0], h_out[1].host(), out_bytes, cudaMemcpyHostToDevice, h2d, 10);
  const double pcie_d2h = copy_rate(h_out[1].host(), d_bands[0], out_bytes, cudaMemcpyDeviceToHost, d2h, 10);
  // A device-to-device copy reads and writes every byte: count both.
  const double hbm = 2 * copy_rate(d_bands[1], d_bands[0], out_bytes, cudaMemcpyDeviceToDevice, compute, 20);

  const double in_rate = samples_per_s * sizeof(int16_t), out_rate = samples_per_s * kBands * sizeof(float);
  // The least device traffic the chain could have: int16 read once, the bands written once.
  const double hbm_floor = in_rate + out_rate;
  std::printf("device: %s; %u channels x 2^20 int16 frames per chunk (%.0f MB in, %.0f MB out), %d chunks, 2 in flight\n",
              prop.name, kChannels, in_bytes / 1e6, out_bytes / 1e6, chunks);
  std::printf("chain: int16 -> planar float -> 4-band crossover FIR (%u taps, overlap-save FFT 8192) -> db8 denoise (%u levels) of each of %u lanes (over %d streams) -> host\n",
              kTaps, chain.denoisers[0]->levels(), kBands * kChannels, kDenoiseStreams);
  std::printf("| what | rate | share |\n|---|---|---|\n");
  std::printf("| sustained input | %.2f G samples/s (%.1f ms per chunk; compute alone %.1f ms) | |\n", samples_per_s / 1e9,
              seconds / chunks * 1e3, compute_ms[2]);
  std::printf("| PCIe host -> device: int16 in | %.2f GB/s of %.1f GB/s measured | %.1f %% |\n", in_rate / 1e9, pcie_h2d / 1e9,
              100 * in_rate / pcie_h2d);
  std::printf("| PCIe device -> host: 4 bands out | %.2f GB/s of %.1f GB/s measured | %.1f %% |\n", out_rate / 1e9,
              pcie_d2h / 1e9, 100 * out_rate / pcie_d2h);
  std::printf("| HBM: the chain's least traffic (int16 read + bands written once) | %.2f GB/s of %.0f GB/s measured (device copy, read + write) | %.2f %% |\n",
              hbm_floor / 1e9, hbm / 1e9, 100 * hbm_floor / hbm);
  return 0;
}
