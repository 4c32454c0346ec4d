#include "stages/channel_split_stage.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#if VIGIL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "core/numa_placement.hpp"

namespace vigil {

namespace {

// Room for one part's events of one chunk: as many as the pipeline's own queue holds.
constexpr size_t kPartEventCapacity = 16384;

struct SplitUpdate final : StageUpdate {
  std::vector<std::unique_ptr<StageUpdate>> parts;  // null: that part has nothing to change
};

// Folds one part's status value into the stage's. Errors add up (cuda_errors: a device's each);
// what every part counts per chunk (graph_chunks, ...) and times take the largest part's, since
// each part sees every chunk and the chunk waits for the slowest; text where every part says the
// same, else each different value once, ' | ' between; a flag, whether any part has it.
bool listed(const std::string& joined, const std::string& value) {
  for (size_t at = 0;;) {
    const size_t end = joined.find(" | ", at);
    if (joined.compare(at, end == std::string::npos ? std::string::npos : end - at, value) == 0) return true;
    if (end == std::string::npos) return false;
    at = end + 3;
  }
}

void fold(const std::string& key, nlohmann::json& into, const nlohmann::json& v) {
  const bool errors = key.size() >= 6 && key.compare(key.size() - 6, 6, "errors") == 0;
  if (into.is_null()) {
    into = v;
  } else if (errors && into.is_number_unsigned() && v.is_number_unsigned()) {
    into = into.get<uint64_t>() + v.get<uint64_t>();
  } else if (into.is_number() && v.is_number()) {
    if (into < v) into = v;
  } else if (into.is_boolean() && v.is_boolean()) {
    into = into.get<bool>() || v.get<bool>();
  } else if (into.is_string() && v.is_string()) {
    if (!listed(into.get<std::string>(), v.get<std::string>())) into = into.get<std::string>() + " | " + v.get<std::string>();
  } else if (into.is_object() && v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) fold(it.key(), into[it.key()], it.value());
  } else if (into != v) {
    into = v;  // mixed kinds: the last part's (none of the stages' values is one)
  }
}

// The NUMA node nearest a CUDA device (its PCI function's, as the kernel says); -1 where there is
// none to say (one node, an integrated GPU, no CUDA).
int numa_node_of_device(int device) {
#if VIGIL_HAVE_CUDA
  if (device < 0) return -1;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, int(sizeof bus), device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return numa_node_of_pci_device(bus);
#else
  (void)device;
  return -1;
#endif
}

}  // namespace

std::vector<ChannelRange> split_channels(uint32_t channels, size_t parts) {
  std::vector<ChannelRange> ranges;
  if (parts == 0 || channels == 0) return ranges;
  const uint32_t n = uint32_t(std::min<size_t>(parts, channels));
  const uint32_t base = channels / n, longer = channels % n;
  uint32_t first = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t count = base + (i < longer ? 1 : 0);
    ranges.push_back({first, count});
    first += count;
  }
  return ranges;
}

DeviceScope::DeviceScope(int device) noexcept {
#if VIGIL_HAVE_CUDA
  if (device < 0) return;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (current == device) return;
  if (cudaSetDevice(device) == cudaSuccess) previous_ = current;
  else (void)cudaGetLastError();  // the part's own calls then fail, and it hands over to its twin
#else
  (void)device;
#endif
}

DeviceScope::~DeviceScope() {
#if VIGIL_HAVE_CUDA
  if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
#endif
}

ChannelSplitStage::ChannelSplitStage(std::vector<int> devices, const MakePart& make) {
  if (devices.empty()) throw std::invalid_argument("a channel split needs at least one part");
  for (int d : devices) {
    Part p;
    p.device = d;
    p.numa_node = numa_node_of_device(d);
    const DeviceScope on(d);
    const NumaPreferred near(p.numa_node);  // its page-locked staging on the device's node
    p.stage = make(d);
    p.gpu = gpu_part(*p.stage);
    if (p.gpu && !p.gpu->two_phase()) p.gpu = nullptr;
    parts_.push_back(std::move(p));
  }
}

ChannelSplitStage::~ChannelSplitStage() {
  for (Part& p : parts_) {  // each part's device memory freed with its device current
    const DeviceScope on(p.device);
    p.stage.reset();
  }
}

StreamFormat ChannelSplitStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  const std::vector<ChannelRange> ranges = split_channels(in.channels, parts_.size());
  while (parts_.size() > ranges.size()) {  // fewer channels than parts: the last parts go
    const DeviceScope on(parts_.back().device);
    parts_.pop_back();
  }
  in_format_ = in;
  max_frames_ = max_frames;
  for (size_t i = 0; i < parts_.size(); ++i) {
    Part& p = parts_[i];
    p.range = ranges[i];
    StreamFormat f = in;
    f.channels = p.range.count;
    StreamFormat o;
    {
      const DeviceScope on(p.device);
      const NumaPreferred near(p.numa_node);
      if (GpuStage* g = gpu_part(*p.stage)) g->set_layout_channels(in.channels);
      o = p.stage->prepare(f, max_frames);
    }
    if (i == 0) {
      out_format_ = o;
    } else if (o.bands != out_format_.bands || o.rate_hz != out_format_.rate_hz ||
               o.delay_frames != out_format_.delay_frames || o.band_names != out_format_.band_names) {
      // The parts choose their forms for the whole's channels (set_layout_channels); one that
      // still lagged otherwise than the first would put its channels out of line with the rest.
      throw std::runtime_error("the parts of a channel split disagree on their output (bands, rate or delay)");
    }
    if (o.channels != p.range.count) throw std::runtime_error("a part of a channel split changed its channel count");
    const GpuStage* g = gpu_part(*p.stage);
    p.in = g ? g->input_buffer() : nullptr;
    p.out = g ? g->output_buffer() : nullptr;
    if (!p.in) {
      p.own_in.assign(size_t(in.bands) * p.range.count * max_frames, 0.0f);
      p.in = p.own_in.data();
    }
    if (!p.out) {
      p.own_out.assign(size_t(o.bands) * p.range.count * max_frames + 1, 0.0f);  // + 1: never empty
      p.out = p.own_out.data();
    }
    p.events = std::make_unique<SpscQueue<EventRecord>>(kPartEventCapacity);
    p.drained.clear();
    p.drained.reserve(kPartEventCapacity);
  }
  heads_.assign(parts_.size(), 0);
  out_format_.channels = in.channels;
  return out_format_;
}

StageStatus ChannelSplitStage::process(const Block& in, Block& out, const Exec& exec) noexcept {
  StageStatus status = StageStatus::kOk;
  // Each part's lanes of the input, in its own block (band-major, its channels only).
  for (Part& p : parts_) {
    for (uint32_t b = 0; b < in.bands; ++b)
      for (uint32_t c = 0; c < p.range.count; ++c)
        std::copy_n(in.lane(b, p.range.first + c), in.frames,
                    p.in + (size_t(b) * p.range.count + c) * max_frames_);
  }
  // Begun together, waited for one after the other: the devices work side by side.
  auto exec_of = [&](Part& p) {
    Exec e = exec;
    e.events = p.events.get();
    e.raw_input = nullptr;
    return e;
  };
  auto blocks_of = [&](Part& p, Block& pin, Block& pout) {
    pin = Block{p.in, max_frames_, in.frames, p.range.count, in.bands};
    pout = Block{p.out, max_frames_, in.frames, p.range.count, out.bands};
  };
  for (Part& p : parts_) {
    const DeviceScope on(p.device);
    Block pin, pout;
    blocks_of(p, pin, pout);
    const Exec e = exec_of(p);
    p.begun = false;
    if (p.gpu) {
      StageStatus done = StageStatus::kOk;
      p.begun = p.gpu->begin(pin, pout, e, done);
      if (!p.begun && done != StageStatus::kOk) status = done;
    } else if (p.stage->process(pin, pout, e) != StageStatus::kOk) {
      status = StageStatus::kFailed;
    }
  }
  for (Part& p : parts_) {
    if (!p.begun) continue;
    const DeviceScope on(p.device);
    Block pin, pout;
    blocks_of(p, pin, pout);
    if (p.gpu->finish(pin, pout, exec_of(p)) != StageStatus::kOk) status = StageStatus::kFailed;
  }
  out.frames = in.frames;
  for (const Part& p : parts_)
    for (uint32_t b = 0; b < out.bands; ++b)
      for (uint32_t c = 0; c < p.range.count; ++c)
        std::copy_n(p.out + (size_t(b) * p.range.count + c) * max_frames_, in.frames,
                    out.lane(b, p.range.first + c));
  gather_events(exec);
  return status;
}

// The parts' events into the pipeline's queue in the order one stage over all channels gives:
// by lane (band-major, as Block lays them out), each part's own order kept within a lane.
void ChannelSplitStage::gather_events(const Exec& exec) noexcept {
  for (Part& p : parts_) {
    p.drained.clear();
    EventRecord ev;
    while (p.drained.size() < p.drained.capacity() && p.events->pop(ev)) {
      ev.channel += p.range.first;
      p.drained.push_back(ev);
    }
  }
  const uint64_t channels = in_format_.channels;
  auto lane = [&](const EventRecord& ev) { return uint64_t(ev.band) * channels + ev.channel; };
  const size_t n = parts_.size();
  std::fill(heads_.begin(), heads_.end(), size_t(0));
  for (;;) {
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (heads_[i] >= parts_[i].drained.size()) continue;
      if (best == n || lane(parts_[i].drained[heads_[i]]) < lane(parts_[best].drained[heads_[best]])) best = i;
    }
    if (best == n) break;
    emit_event(exec, parts_[best].drained[heads_[best]++]);
  }
}

void ChannelSplitStage::reset() noexcept {
  for (Part& p : parts_) {
    const DeviceScope on(p.device);
    p.stage->reset();
    EventRecord ev;
    while (p.events && p.events->pop(ev)) {
    }
  }
}

StageUpdatePlan ChannelSplitStage::plan_update(const StageSettings& next) const {
  StageUpdatePlan plan;
  auto update = std::make_unique<SplitUpdate>();
  bool any = false;
  for (const Part& p : parts_) {
    const DeviceScope on(p.device);
    StageUpdatePlan part = p.stage->plan_update(next);
    if (part.structural) return part;
    any = any || part.update != nullptr;
    update->parts.push_back(std::move(part.update));
  }
  if (any) plan.update = std::move(update);
  return plan;
}

bool ChannelSplitStage::apply_update(StageUpdate& update) noexcept {
  auto& u = static_cast<SplitUpdate&>(update);
  bool all = true;
  for (size_t i = 0; i < parts_.size() && i < u.parts.size(); ++i) {
    if (!u.parts[i]) continue;
    const DeviceScope on(parts_[i].device);
    all = parts_[i].stage->apply_update(*u.parts[i]) && all;
  }
  return all;
}

void ChannelSplitStage::acknowledge() noexcept {
  for (Part& p : parts_) {
    const DeviceScope on(p.device);
    p.stage->acknowledge();
  }
}

const ChannelSplitStage::Part& ChannelSplitStage::part_of(uint32_t channel) const noexcept {
  for (const Part& p : parts_)
    if (channel < p.range.first + p.range.count) return p;
  return parts_.back();
}

// The event as its part raised it: the channel within the part's range.
EventRecord ChannelSplitStage::local_event(const EventRecord& ev, const Part& p) noexcept {
  EventRecord local = ev;
  local.channel = ev.channel >= p.range.first ? ev.channel - p.range.first : 0;
  return local;
}

void ChannelSplitStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  const Part& p = part_of(ev.channel);
  p.stage->describe_event(local_event(ev, p), body);
  if (ev.kind == EventKind::kBackendFallback) {  // which device's part went to the CPU
    if (p.device >= 0) body["device"] = p.device;
    body["first_channel"] = p.range.first;
    body["channels"] = p.range.count;
  }
}

bool ChannelSplitStage::write_event(const EventRecord& ev, EventText& text) const {
  const Part& p = part_of(ev.channel);
  const EventTextWriter* w = text_writer(*p.stage);
  return w && w->write_event(local_event(ev, p), text);
}

void ChannelSplitStage::add_status(nlohmann::json& status) const {
  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json folded = nlohmann::json::object();
  for (const Part& p : parts_) {
    nlohmann::json own = nlohmann::json::object();
    p.stage->add_status(own);
    for (auto it = own.begin(); it != own.end(); ++it) fold(it.key(), folded[it.key()], it.value());
    if (p.device >= 0) own["device"] = p.device;
    if (p.numa_node >= 0) own["numa_node"] = p.numa_node;
    own["first_channel"] = p.range.first;
    own["channels"] = p.range.count;
    devices.push_back(std::move(own));
  }
  for (auto it = folded.begin(); it != folded.end(); ++it) status[it.key()] = it.value();
  status["devices"] = std::move(devices);
}

}  // namespace vigil
