// The one place that chooses a stage's implementation: the CPU adapter or its CUDA twin, by kind
// and by what the backend allows. Adding a stage kind: its settings (config/), its adapter
// (stages/<kind>_stage.*, a CUDA twin beside it), and one entry in stage_factory.cpp.
// Thread: main (building the graph).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "config/settings.hpp"
#include "stages/stage.hpp"

namespace vigil {

class WorkerPool;

// What of the backend decides which stage is made.
struct StageBackend {
  bool cuda = false;            // the CUDA backend runs (a device answered)
  bool gpu_resident = false;    // pipeline.gpu_resident: detectors on the GPU too
  bool mapped = false;          // zero-copy staging
  uint64_t fail_at_chunk = 0;   // test-only fault (pipeline.test_cuda_fail_at_chunk)
  bool graphs = true;           // the FIR stages replay a chunk as a CUDA graph
  bool detector_graphs = false; // the detector stages too
  WorkerPool* pool = nullptr;   // the CPU stages split their lanes over it (null: one thread)
  // pipeline.gpus resolved: two or more entries split a stage's channels into as many parts
  // (stages/channel_split_stage.hpp), each a CUDA stage on its device; on the CPU backend, CPU
  // stages run one after the other.
  std::vector<int> devices;
};

// Whether a stage of these settings runs as its CUDA twin on this backend.
bool stage_runs_on_gpu(const StageSettings& s, const StageBackend& backend);
// Whether it runs on the CPU splitting its lanes over the worker pool.
bool stage_splits_lanes_on_cpu(const StageSettings& s, const StageBackend& backend);
// Whether the backend is chosen only at prepare(), once the graph knows where the stage's input
// lives (band_rms: on the GPU only where its input stays there); make_stage(on_gpu) then makes
// either.
bool stage_chooses_backend_at_prepare(const StageSettings& s, const StageBackend& backend);
// Into how many parts a stage of these settings is split over backend.devices (0: it is not
// wrapped at all). A stage whose lanes are independent (fir_bank, wavelet_denoise, ae_hits without
// waveform capture) runs one part on each listed device where it runs on the GPU, or as many CPU
// parts on the CPU backend. A CUDA stage whose lanes share state (vibration: its analyses are
// spread over chunks across lanes; ae_hits capturing waveforms) runs whole on the first listed
// device: one part, where that device is not the default one.
size_t stage_parts_over_devices(const StageSettings& s, const StageBackend& backend);
// The stage, `index` its place in the graph (events name it): the CUDA twin where on_gpu. Throws
// std::invalid_argument for an unknown kind.
std::unique_ptr<Stage> make_stage(const StageSettings& s, uint16_t index, bool on_gpu, const StageBackend& backend);
// The stage split over the first `parts` of backend.devices (a ChannelSplitStage, a part a device).
std::unique_ptr<Stage> make_split_stage(const StageSettings& s, uint16_t index, size_t parts,
                                        const StageBackend& backend);

}  // namespace vigil
