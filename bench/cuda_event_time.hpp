// The GPU benchmarks' timing: `warmups` calls, then every iteration's GPU time from CUDA events
// around one call on `stream` (google-benchmark's manual time; report its median).
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"

namespace vigil::bench {

template <class Call>
void time_on_stream(benchmark::State& state, cudaStream_t stream, Call&& call, int warmups = 5) {
  cudaEvent_t start, stop;
  VIGIL_CUDA_CHECK(cudaEventCreate(&start));
  VIGIL_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmups; ++i) VIGIL_CUDA_CHECK(call());
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto _ : state) {
    VIGIL_CUDA_CHECK(cudaEventRecord(start, stream));
    VIGIL_CUDA_CHECK(call());
    VIGIL_CUDA_CHECK(cudaEventRecord(stop, stream));
    VIGIL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    VIGIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(double(ms) / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace vigil::bench
