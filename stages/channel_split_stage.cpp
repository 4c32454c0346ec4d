#include "stages/channel_split_stage.hpp"

#include <algorithm>
#include <cstddef>
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

// The current device's free and total memory in bytes; false where CUDA cannot say.
bool device_memory(int device, int64_t& free_bytes, int64_t& total_bytes) noexcept {
#if VIGIL_HAVE_CUDA
  size_t f = 0, t = 0;
  if (device < 0 || cudaMemGetInfo(&f, &t) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  free_bytes = int64_t(f);
  total_bytes = int64_t(t);
  return true;
#else
  (void)device;
  (void)free_bytes;
  (void)total_bytes;
  return false;
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

std::vector<int> ChannelSplitStage::gpu_devices() const {
  std::vector<int> devices;
  for (const Part& p : parts_)
    if (p.cuda && p.device >= 0 && std::find(devices.begin(), devices.end(), p.device) == devices.end())
      devices.push_back(p.device);
  return devices;
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
    p.cuda = gpu_part(*p.stage);
    p.gpu = p.cuda && p.cuda->two_phase() ? p.cuda : nullptr;
    two_phase_ = two_phase_ || p.gpu;  // known before prepare(): the graph asks when it is made
    parts_.push_back(std::move(p));
  }
}

ChannelSplitStage::~ChannelSplitStage() {
  for (Part& p : parts_) {  // each part's device memory freed with its device current
    const DeviceScope on(p.device);
    p.stage.reset();
  }
}

bool ChannelSplitStage::chain_after(ChannelSplitStage& producer) noexcept {
  producer_ = nullptr;
  if (producer.parts_.size() != parts_.size()) return false;
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Part &a = producer.parts_[i], &b = parts_[i];
    if (a.device < 0 || a.device != b.device || !a.cuda || !b.cuda) return false;
  }
  producer_ = &producer;
  return true;
}

StreamFormat ChannelSplitStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  const std::vector<ChannelRange> ranges = split_channels(in.channels, parts_.size());
  while (parts_.size() > ranges.size()) {  // fewer channels than parts: the last parts go
    const DeviceScope on(parts_.back().device);
    parts_.pop_back();
  }
  if (producer_ && producer_->parts_.size() != parts_.size())
    throw std::logic_error("a chained channel split has another number of parts than its producer");
  in_format_ = in;
  max_frames_ = max_frames;
  bool staged = !producer_;  // every part offers its staged input (and the slots it has)
  unsigned slots = 2;
  for (size_t i = 0; i < parts_.size(); ++i) {
    Part& p = parts_[i];
    p.range = ranges[i];
    StreamFormat f = in;
    f.channels = p.range.count;
    StreamFormat o;
    GpuStage* g = p.cuda;
    {
      const DeviceScope on(p.device);
      const NumaPreferred near(p.numa_node);
      if (g) g->set_layout_channels(in.channels);
      if (producer_) {  // part i reads part i's output in place (on the device, where resident)
        const Part& from = producer_->parts_[i];
        if (from.range.first != p.range.first || from.range.count != p.range.count || !from.out || !g)
          throw std::logic_error("a chained channel split's part does not match its producer's");
        g->bind_input(from.out);
        if (resident_) g->bind_producer(from.cuda);
      }
      if (g) g->keep_output_on_device(keep_);
      int64_t free_before = 0, free_after = 0, total = 0;
      const bool known = device_memory(p.device, free_before, total);
      o = p.stage->prepare(f, max_frames);
      p.device_memory = p.device_memory_total = -1;
      if (known && device_memory(p.device, free_after, total)) {
        p.device_memory = std::max<int64_t>(0, free_before - free_after);
        p.device_memory_total = total;
      }
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

    p.in[0] = p.in[1] = nullptr;
    if (producer_) {
      p.in[0] = producer_->parts_[i].out;
    } else if (g) {
      p.in[0] = g->input_slot(0);
      p.in[1] = g->input_slot(1);
    }
    staged = staged && p.in[0];
    if (!p.in[1]) slots = 1;
    if (!p.in[0]) {
      p.own_in.assign(size_t(in.bands) * p.range.count * max_frames, 0.0f);
      p.in[0] = p.own_in.data();
    }
    p.out = g ? g->output_buffer() : nullptr;
    if (!p.out) {
      p.own_out.assign(size_t(o.bands) * p.range.count * max_frames + 1, 0.0f);  // + 1: never empty
      p.out = p.own_out.data();
    }
    p.events = std::make_unique<SpscQueue<EventRecord>>(kPartEventCapacity);
    p.drained.clear();
    p.drained.reserve(kPartEventCapacity);
  }
  // The whole input's slots, for the graph to convert the chunk into: uninitialised (with raw
  // input nothing writes them, and their pages are never touched).
  slots_ = staged ? slots : 0;
  for (unsigned k = 0; k < 2; ++k) {
    slot_[k].reset(k < slots_ ? new float[size_t(in.bands) * in.channels * max_frames] : nullptr);
    lanes_in_[k] = false;
  }
  heads_.assign(parts_.size(), 0);
  out_format_.channels = in.channels;
  last_out_ = Block{};
  return out_format_;
}

Exec ChannelSplitStage::exec_of(const Part& p, const Exec& exec) const noexcept {
  Exec e = exec;
  e.events = p.events.get();
  // Raw input: the part's window of each frame starts at its first channel.
  e.raw_input = raw_ && exec.raw_input
                    ? static_cast<const std::byte*>(exec.raw_input) + size_t(p.range.first) * raw_sample_bytes_
                    : nullptr;
  return e;
}

StageStatus ChannelSplitStage::process(const Block& in, Block& out, const Exec& exec) noexcept {
  return finish_now(in, out, exec);
}

bool ChannelSplitStage::begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept {
  done = StageStatus::kOk;
  out.frames = in.frames;
  last_out_ = out;
  int at = -1;
  for (unsigned k = 0; k < slots_; ++k)
    if (in.data == slot_[k].get()) at = int(k);
  const unsigned slot = at < 0 ? 0 : unsigned(at);
  const bool raw = raw_ && exec.raw_input;
  const bool lanes_in = at >= 0 && lanes_in_[slot];
  if (at >= 0) lanes_in_[slot] = false;
  bool any = false;
  for (Part& p : parts_) {
    float* pin = producer_ ? p.in[0] : p.in[slot] ? p.in[slot] : p.in[0];
    // Each part's lanes of the input, in its own block (band-major, its channels only), unless
    // they are there already: chained, raw (the part takes its window of the chunk as captured),
    // or copied by the look-ahead's upload.
    if (!producer_ && !raw && !lanes_in) lanes_of(in, p, pin);
    p.in_block = Block{pin, max_frames_, in.frames, p.range.count, in.bands};
    p.out_block = Block{p.out, max_frames_, in.frames, p.range.count, out.bands};
    // Begun together, waited for one after the other: the devices work side by side.
    const DeviceScope on(p.device);
    const Exec e = exec_of(p, exec);
    p.begun = false;
    if (p.gpu) {
      StageStatus part_done = StageStatus::kOk;
      p.begun = p.gpu->begin(p.in_block, p.out_block, e, part_done);
      if (!p.begun && part_done != StageStatus::kOk) done = part_done;
    } else if (p.stage->process(p.in_block, p.out_block, e) != StageStatus::kOk) {
      done = StageStatus::kFailed;
    }
    any = any || p.begun;
  }
  if (any) return true;
  complete(out, exec);
  return false;
}

bool ChannelSplitStage::busy() noexcept {
  for (Part& p : parts_) {
    if (!p.begun) continue;
    const DeviceScope on(p.device);
    if (p.gpu->busy()) return true;
  }
  return false;
}

StageStatus ChannelSplitStage::finish(const Block& /*in*/, Block& out, const Exec& exec) noexcept {
  StageStatus status = StageStatus::kOk;
  for (Part& p : parts_) {
    if (!p.begun) continue;
    p.begun = false;
    const DeviceScope on(p.device);
    if (p.gpu->finish(p.in_block, p.out_block, exec_of(p, exec)) != StageStatus::kOk) status = StageStatus::kFailed;
  }
  complete(out, exec);
  return status;
}

void ChannelSplitStage::lanes_of(const Block& whole, const Part& p, float* to) const noexcept {
  for (uint32_t b = 0; b < whole.bands; ++b)
    for (uint32_t c = 0; c < p.range.count; ++c)
      std::copy_n(whole.lane(b, p.range.first + c), whole.frames, to + (size_t(b) * p.range.count + c) * max_frames_);
}

void ChannelSplitStage::gather(const Part& p, Block& out) const noexcept {
  for (uint32_t b = 0; b < out.bands; ++b)
    for (uint32_t c = 0; c < p.range.count; ++c)
      std::copy_n(p.out + (size_t(b) * p.range.count + c) * max_frames_, out.frames, out.lane(b, p.range.first + c));
}

void ChannelSplitStage::complete(Block& out, const Exec& exec) noexcept {
  for (const Part& p : parts_) {
    // Kept on its device for chained readers: gathered only when asked. (A part on its CPU twin
    // this chunk has its output on the host only.)
    if (keep_ && p.cuda && p.cuda->device_output()) continue;
    if (out.bands > 0) gather(p, out);
  }
  gather_events(exec);
}

bool ChannelSplitStage::make_output_host_valid(uint32_t frames) noexcept {
  if (!keep_ || !last_out_.data) return true;  // gathered with the chunk
  bool ok = true;
  for (Part& p : parts_) {
    if (!p.cuda || !p.cuda->device_output()) continue;  // gathered with the chunk
    const DeviceScope on(p.device);
    if (!p.cuda->make_output_host_valid(frames)) {
      ok = false;
      continue;
    }
    gather(p, last_out_);
  }
  return ok;
}

void ChannelSplitStage::keep_output_on_device(bool keep) noexcept { keep_ = keep; }

bool ChannelSplitStage::upload_input(unsigned slot, uint32_t frames, const void* raw, uint32_t frames_up) noexcept {
  if (slot >= slots_ || (raw && !raw_)) return false;
  bool all = true;
  for (Part& p : parts_) {
    if (!raw)  // the slot's lanes into the part's staging now, not when the chunk runs
      lanes_of(Block{slot_[slot].get(), max_frames_, frames, in_format_.channels, in_format_.bands}, p, p.in[slot]);
    const DeviceScope on(p.device);
    const void* window = raw ? static_cast<const std::byte*>(raw) + size_t(p.range.first) * raw_sample_bytes_ : nullptr;
    all = p.cuda->upload_input(slot, frames, window, frames_up) && all;  // false: that part copies its own
  }
  if (!raw) lanes_in_[slot] = true;
  return all;
}

bool ChannelSplitStage::upload_input_part(unsigned slot, const void* raw, uint32_t first, uint32_t frames) noexcept {
  if (slot >= slots_ || !raw_ || !raw) return false;
  bool all = true;
  for (Part& p : parts_) {
    const DeviceScope on(p.device);
    const void* window = static_cast<const std::byte*>(raw) + size_t(p.range.first) * raw_sample_bytes_;
    all = p.cuda->upload_input_part(slot, window, first, frames) && all;
  }
  return all;
}

bool ChannelSplitStage::accept_raw_input(SampleFormat format, float scale, uint32_t frame_channels) {
  // Every part takes its window, or none is given one (a part that said yes and is never given a
  // raw chunk runs as before).
  if (frame_channels != 0 || slots_ < 2) return false;
  for (Part& p : parts_) {
    const DeviceScope on(p.device);
    if (!p.cuda->accept_raw_input(format, scale, in_format_.channels)) return false;
  }
  raw_sample_bytes_ = bytes_per_sample(format);
  raw_ = true;
  return true;
}

void ChannelSplitStage::input_counts(uint64_t& clipped, uint64_t& non_finite) const noexcept {
  clipped = non_finite = 0;
  for (const Part& p : parts_) {
    uint64_t c = 0, n = 0;
    if (p.cuda) p.cuda->input_counts(c, n);
    clipped += c;
    non_finite += n;
  }
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
    if (p.device_memory >= 0) {
      own["device_memory_bytes"] = p.device_memory;
      own["device_memory_total_bytes"] = p.device_memory_total;
    }
    own["first_channel"] = p.range.first;
    own["channels"] = p.range.count;
    devices.push_back(std::move(own));
  }
  for (auto it = folded.begin(); it != folded.end(); ++it) status[it.key()] = it.value();
  status["devices"] = std::move(devices);
}

}  // namespace vigil
