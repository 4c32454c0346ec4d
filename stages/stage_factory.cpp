#include "stages/stage_factory.hpp"

#include <algorithm>
#include <stdexcept>

#include "stages/ae_hits_stage.hpp"
#include "stages/ae_locate_stage.hpp"
#include "stages/band_rms_stage.hpp"
#include "stages/channel_split_stage.hpp"
#include "stages/denoise_stage.hpp"
#include "stages/fir_bank_stage.hpp"
#include "stages/vibration_stage.hpp"
#if VIGIL_HAVE_CUDA
#include "stages/ae_hits_cuda_stage.hpp"
#include "stages/denoise_cuda_stage.hpp"
#include "stages/fir_bank_cuda_stage.hpp"
#include "stages/moments_cuda_stage.hpp"
#endif

namespace vigil {

bool stage_runs_on_gpu(const StageSettings& s, const StageBackend& backend) {
#if VIGIL_HAVE_CUDA
  if (!backend.cuda) return false;
  if (s.kind == "fir_bank") return true;
  if (s.kind == "wavelet_denoise") return DenoiseCudaStage::fits(std::get<DenoiseStageSettings>(s.params));
  if (s.kind == "ae_hits") return backend.gpu_resident && AeHitsCudaStage::fits(std::get<AeHitSettings>(s.params));
  if (s.kind == "vibration")
    return backend.gpu_resident && VibrationCudaStage::fits(std::get<VibrationStageSettings>(s.params));
  // band_rms: chosen at prepare() (stage_chooses_backend_at_prepare).
#else
  (void)s;
  (void)backend;  // every stage runs on the CPU in a build without CUDA
#endif
  return false;
}

bool stage_splits_lanes_on_cpu(const StageSettings& s, const StageBackend& backend) {
  return !stage_runs_on_gpu(s, backend) &&
         (s.kind == "fir_bank" || s.kind == "wavelet_denoise" || s.kind == "vibration" || s.kind == "ae_hits");
}

bool stage_chooses_backend_at_prepare(const StageSettings& s, const StageBackend& backend) {
  return VIGIL_HAVE_CUDA && s.kind == "band_rms" && backend.cuda && backend.gpu_resident && !backend.mapped;
}

size_t stage_parts_over_devices(const StageSettings& s, const StageBackend& backend) {
  if (backend.devices.empty()) return 0;
  const bool independent_lanes = s.kind == "fir_bank" || s.kind == "wavelet_denoise" ||
                                 (s.kind == "ae_hits" && std::get<AeHitSettings>(s.params).waveform_s == 0);
  if (!backend.cuda) return independent_lanes && backend.devices.size() >= 2 ? backend.devices.size() : 0;
  if (!stage_runs_on_gpu(s, backend)) return 0;
  if (independent_lanes && backend.devices.size() >= 2) return backend.devices.size();
  return backend.devices[0] > 0 ? 1 : 0;
}

std::unique_ptr<Stage> make_split_stage(const StageSettings& s, uint16_t index, size_t parts,
                                        const StageBackend& backend) {
  const bool on_gpu = backend.cuda && stage_runs_on_gpu(s, backend);
  std::vector<int> devices(backend.devices.begin(), backend.devices.begin() + std::min(parts, backend.devices.size()));
  if (!on_gpu) devices.assign(devices.size(), -1);  // CPU parts: no device to select
  return std::make_unique<ChannelSplitStage>(devices,
                                             [&](int) { return make_stage(s, index, on_gpu, backend); });
}

std::unique_ptr<Stage> make_stage(const StageSettings& s, uint16_t index, bool on_gpu, const StageBackend& backend) {
#if VIGIL_HAVE_CUDA
  if (on_gpu) {
    const CudaStageOptions options{backend.mapped, backend.fail_at_chunk, backend.graphs, backend.detector_graphs};
    if (s.kind == "fir_bank") return std::make_unique<FirBankCudaStage>(std::get<FirBankSettings>(s.params), index, options);
    if (s.kind == "wavelet_denoise")
      return std::make_unique<DenoiseCudaStage>(std::get<DenoiseStageSettings>(s.params), index, options);
    if (s.kind == "ae_hits") return std::make_unique<AeHitsCudaStage>(std::get<AeHitSettings>(s.params), index, options);
    if (s.kind == "vibration")
      return std::make_unique<VibrationCudaStage>(std::get<VibrationStageSettings>(s.params), index, options,
                                                  backend.pool);
    if (s.kind == "band_rms") return std::make_unique<BandRmsCudaStage>(std::get<BandRmsSettings>(s.params), index, options);
  }
#else
  (void)on_gpu;
#endif
  if (s.kind == "fir_bank") return std::make_unique<FirBankStage>(std::get<FirBankSettings>(s.params), backend.pool);
  if (s.kind == "wavelet_denoise")
    return std::make_unique<DenoiseStage>(std::get<DenoiseStageSettings>(s.params), backend.pool);
  if (s.kind == "band_rms") return std::make_unique<BandRmsStage>(std::get<BandRmsSettings>(s.params), index);
  if (s.kind == "ae_hits") return std::make_unique<AeHitsStage>(std::get<AeHitSettings>(s.params), index, backend.pool);
  if (s.kind == "vibration")
    return std::make_unique<VibrationStage>(std::get<VibrationStageSettings>(s.params), index, backend.pool);
  if (s.kind == "ae_locate") return std::make_unique<AeLocateStage>(std::get<AeLocateSettings>(s.params));
  throw std::invalid_argument("stage '" + s.name + "': unknown kind '" + s.kind + "'");
}

}  // namespace vigil
