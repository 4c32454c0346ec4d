// RT: pipeline thread.
#include "pipeline/pipeline_worker.hpp"

#include "core/cpu_relax.hpp"

#include <algorithm>
#include <thread>

#include "core/clock.hpp"

namespace vigil {

PipelineWorker::PipelineWorker(Graph& graph, const SourceFormat& format, const CaptureLoop& capture,
                               SpscQueue<Chunk*>& full_chunks, SpscQueue<Chunk*>& free_chunks,
                               SpscQueue<OutputSlot*>& free_slots, SpscQueue<OutputSlot*>& full_slots,
                               SpscQueue<EventRecord>& events, std::vector<int> stream_of_output,
                               std::vector<uint32_t> decimation_of_output)
    : graph_(graph), format_(format), capture_(capture), full_chunks_(full_chunks), free_chunks_(free_chunks),
      free_slots_(free_slots), full_slots_(full_slots), events_(events),
      stream_of_output_(std::move(stream_of_output)), decimation_of_output_(std::move(decimation_of_output)),
      convert_counts_(size_t(format.channels) * WorkerPool::parts_for(graph.pool(), ~0u)),
      // Every slot is free now (the service fills the queue before any thread starts): at most
      // half of them, and 8, handed over without a wake.
      handoff_(std::min<uint32_t>(8, uint32_t(free_slots.read_available() / 2))) {
  decimation_of_output_.resize(stream_of_output_.size(), 1);
  raw_ = graph_.raw_input();
}

void PipelineWorker::convert(const Chunk& chunk, Block& in) noexcept {
  std::fill(convert_counts_.begin(), convert_counts_.end(), ConvertCounts{});
  const ChunkHeader& h = chunk.header;
  WorkerPool* pool = graph_.pool();
  const uint32_t parts =
      uint64_t(in.frames) * in.channels >= kSplitSamples ? WorkerPool::parts_for(pool, in.frames) : 1;
  // Each part converts a range of frames of every channel, counting into its own counts.
  const size_t frame_bytes = size_t(in.channels) * bytes_per_sample(h.format);
  auto part = [&](uint32_t p) {
    const WorkerPool::Range r = WorkerPool::range(in.frames, parts, p);
    convert_to_planar(chunk.data + r.first * frame_bytes, h.format, r.end - r.first,
                      in.channels, format_.scale, in.data + r.first, in.stride,
                      convert_counts_.data() + size_t(p) * in.channels);
  };
  if (parts > 1)
    pool->run(parts, part);
  else
    part(0);
}

void PipelineWorker::fill_slot(OutputSlot& slot, uint32_t frames, uint64_t first_frame) noexcept {
  for (size_t o = 0; o < stream_of_output_.size(); ++o) {
    if (stream_of_output_[o] < 0) continue;  // hit waveforms travel on their own channel
    const Block& b = graph_.stream(size_t(stream_of_output_[o])).block;
    const uint32_t dec = decimation_of_output_[o], lanes = b.bands * b.channels;
    // Decimating: only the samples the output keeps (it sends them as they are).
    const KeptSamples kept = dec > 1 ? kept_samples(first_frame, frames, dec) : KeptSamples{0, frames};
    WorkerPool* pool = graph_.pool();
    const uint32_t parts = uint64_t(lanes) * kept.count >= kSplitSamples ? WorkerPool::parts_for(pool, lanes) : 1;
    auto part = [&](uint32_t p) {
      const WorkerPool::Range r = WorkerPool::range(lanes, parts, p);
      for (uint32_t lane = r.first; lane < r.end; ++lane) {
        const float* src = b.data + lane * b.stride + kept.first;
        float* dst = slot.data[o].data() + lane * slot.stride;
        if (dec <= 1)
          std::copy_n(src, kept.count, dst);
        else if (dec == 2)  // a stride known at compile time vectorises (even lanes by shuffles)
          for (uint32_t k = 0; k < kept.count; ++k) dst[k] = src[2 * size_t(k)];
        else
          for (uint32_t k = 0; k < kept.count; ++k) dst[k] = src[size_t(k) * dec];
      }
    };
    if (parts > 1)
      pool->run(parts, part);
    else
      part(0);
  }
}

void PipelineWorker::run() noexcept {
  unsigned idle = 0;
  const int64_t t_start = mono_now_ns();
  for (;;) {
    if (stall_after_ns_ > 0 && mono_now_ns() - t_start >= stall_after_ns_) {
      // The injected stall: process nothing more; leave when capture has stopped.
      full_slots_.wake();  // for chunks handed over quietly before it
      while (!capture_.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      break;
    }
    if (has_ahead_) {  // taken while the GPU ran the chunk before: its turn now
      has_ahead_ = false;
      graph_.advance_input();
      const Taken current = ahead_;  // a copy: the look-ahead may take the next chunk into ahead_ meanwhile
      run_taken(current, mono_now_ns());
      idle = 0;
      continue;
    }
    Chunk* chunk = nullptr;
    if (full_chunks_.pop(chunk)) {
      run_popped(*chunk);
      idle = 0;
      continue;
    }
    // finished() is an acquire that pairs with the capture loop's release: once it reads true,
    // every chunk the capture thread pushed is visible, so one more empty pop means drained.
    if (capture_.finished()) {
      if (full_chunks_.pop(chunk)) {
        process(*chunk);
        continue;
      }
      break;
    }
    // Nothing yet: spin briefly, then sleep until the capture thread pushes (its push wakes this
    // thread at once). The timeout stays short: a long one lets the idle governor put the core in
    // a deep sleep state that takes hundreds of microseconds to leave (seen as late chunks at
    // 1 ms deadlines on the GPU machine); 100 us keeps it shallow, as the old 50 us polling did.
    upload_captured_parts();
    graph_.keep_gpu_warm();
    if (busy_poll_)
      cpu_relax();
    else if (++idle < 64)
      std::this_thread::yield();
    else
      full_chunks_.wait_for_item(100'000);
  }
  finished_.store(true, std::memory_order_release);
}

void PipelineWorker::watch_overload(int64_t t_done, int64_t t_capture, const Exec& exec) noexcept {
  if (t_done - window_start_ > 1'000'000'000) {
    window_start_ = t_done;
    misses_in_window_ = 0;
  }
  if (t_done > t_capture + budget_ns_) {
    ++misses_in_window_;
    last_miss_ = t_done;
  }
  const bool shed = graph_.shed();
  const bool start = !shed && misses_in_window_ >= 3;
  const bool stop = shed && t_done - last_miss_ > restore_ns_;
  if (!start && !stop) return;
  graph_.set_shed(start);
  counters_.shedding.store(start, std::memory_order_relaxed);
  if (start) counters_.shed_episodes.fetch_add(1, std::memory_order_relaxed);
  log_.printf(start ? 4 : 5,
              start ? "pipeline: overload (%u deadline misses in 1 s): shedding the optional stages"
                    : "pipeline: no deadline miss for a while (%u): the optional stages run again",
              misses_in_window_);
  EventRecord ev;
  ev.kind = EventKind::kOverload;
  ev.level = start ? 1 : 0;
  ev.value = misses_in_window_;
  ev.frame = exec.chunk.first_frame;
  ev.t_utc_ns = exec.chunk.t_first_utc_ns;
  if (!events_.push(ev)) counters_.events_dropped.fetch_add(1, std::memory_order_relaxed);
  misses_in_window_ = 0;
  window_start_ = t_done;
}

void PipelineWorker::take(Chunk& chunk, Block& in, Taken& taken) noexcept {
  taken.t_taken = mono_now_ns();
  taken.header = chunk.header;
  taken_generation_ = chunk.capture_generation;  // parts_of(chunk) was asked before, where it matters
  parts_ = Parts{};
  in.frames = std::min<uint32_t>(chunk.header.frames, uint32_t(in.stride));
  taken.clipped = taken.non_finite = 0;
  taken.raw = nullptr;
  if (raw_) {  // the graph converts it on the GPU: it goes back once the graph has run
    if (recorder_) recorder_->offer(chunk);
    taken.raw = &chunk;
    return;
  }
  convert(chunk, in);
  if (recorder_) recorder_->offer(chunk);  // the raw chunk, as captured (a copy, or counted as dropped)
  // The samples are ours now: give the chunk back to the capture thread first.
  free_chunks_.push(&chunk);  // cannot fail: the free queue holds every pool chunk
  for (const ConvertCounts& c : convert_counts_) {
    taken.clipped += c.clipped;
    taken.non_finite += c.non_finite;
  }
}

void PipelineWorker::look_ahead() noexcept {
  if (has_ahead_ || pending_update_.load(std::memory_order_acquire) || !graph_.look_ahead()) return;
  const int64_t t0 = mono_now_ns();
  Chunk* next = nullptr;
  if (!full_chunks_.pop(next)) {
    if (upload_captured_parts()) counters_.look_ahead_work.record_ns(mono_now_ns() - t0);
    return;
  }
  take_ahead(*next);
  counters_.look_ahead_chunks.fetch_add(1, std::memory_order_relaxed);
  counters_.look_ahead_work.record_ns(mono_now_ns() - t0);
}

void PipelineWorker::take_ahead(Chunk& chunk) noexcept {
  const uint32_t up = parts_of(chunk);
  take(chunk, graph_.next_input_block(), ahead_);
  graph_.upload_next_input(ahead_.raw ? ahead_.raw->data : nullptr, up);  // false: that chunk makes its own copy
  has_ahead_ = true;
  if (up) {
    counters_.chunks_uploaded_in_parts.fetch_add(1, std::memory_order_relaxed);
    counters_.frames_uploaded_in_parts.fetch_add(up, std::memory_order_relaxed);
  }
}

uint32_t PipelineWorker::parts_of(const Chunk& chunk) const noexcept {
  if (!upload_parts_ || parts_.frames == 0 || chunk.capture_generation != parts_.generation ||
      parts_.slot != graph_.next_input_slot())
    return 0;
  return std::min(parts_.frames, chunk.header.frames);
}

bool PipelineWorker::upload_captured_parts() noexcept {
  if (!upload_parts_ || has_ahead_ || pending_update_.load(std::memory_order_acquire)) return false;
  CaptureProgress::Snapshot now;
  if (!capture_.progress().snapshot(now) || now.generation == taken_generation_) return false;
  if (now.generation != parts_.generation) parts_ = Parts{now.generation, 0, graph_.next_input_slot(), false};
  if (parts_.failed || parts_.slot != graph_.next_input_slot() || now.frames <= parts_.frames) return false;
  if (!graph_.upload_next_input_part(now.chunk->data, parts_.frames, now.frames - parts_.frames)) {
    parts_.failed = true;  // those up so far stay valid; the chunk copies the rest when it comes
    return true;
  }
  parts_.frames = now.frames;
  return true;
}

void PipelineWorker::run_popped(Chunk& chunk) noexcept {
  // Its first frames in the next staged input already: it runs from there, as a chunk the
  // look-ahead took does (run()'s next turn).
  if (!pending_update_.load(std::memory_order_acquire) && parts_of(chunk))
    take_ahead(chunk);
  else
    process(chunk);
}

void PipelineWorker::process(Chunk& chunk) noexcept {
  const int64_t t0 = mono_now_ns();
  // A reload first: applying it may use a CUDA stage's staged input (priming a new filter), which
  // can be the input block itself (Stage::input_buffer()), so the chunk is converted after it.
  // (No look-ahead is taken while one is pending: no chunk waits in a staged input meanwhile.)
  if (Graph::Update* u = pending_update_.load(std::memory_order_acquire)) {
    // Between chunks: every sample goes through one filter or the crossfade.
    last_update_failed_stage_.store(graph_.apply_update(*u), std::memory_order_release);
    pending_update_.store(nullptr, std::memory_order_release);
    last_update_frame_.store(chunk.header.first_frame, std::memory_order_release);
    applied_updates_.fetch_add(1, std::memory_order_acq_rel);
  }
  Taken taken;
  take(chunk, graph_.input_block(), taken);
  run_taken(taken, t0);
}

void PipelineWorker::push_source_event(EventKind kind, double value, const ChunkHeader& header) noexcept {
  EventRecord ev;
  ev.kind = kind;
  ev.value = value;
  ev.frame = header.first_frame;
  ev.t_utc_ns = header.t_first_utc_ns;
  if (!events_.push(ev)) counters_.events_dropped.fetch_add(1, std::memory_order_relaxed);
}

void PipelineWorker::note_clock_step(const ChunkHeader& header) noexcept {
  counters_.clock_steps.fetch_add(1, std::memory_order_relaxed);
  log_.printf(4, "capture: the wall clock stepped by %+.3f s; the time line follows it from frame %llu",
              double(header.clock_step_ns) * 1e-9, (unsigned long long)header.first_frame);
  push_source_event(EventKind::kClockStep, double(header.clock_step_ns) * 1e-9, header);
}

void PipelineWorker::run_taken(const Taken& taken, int64_t t0) noexcept {
  if (t_first_chunk_ == 0) t_first_chunk_ = t0;
  ChunkHeader header = taken.header;
  Block& in = graph_.input_block();

  if (const uint32_t acks = ack_requests_.load(std::memory_order_relaxed); acks != acks_done_) {
    acks_done_ = acks;
    graph_.acknowledge();
  }
  if (header.flags & chunk_flags::kSourceOverrun)  // the device itself overran: tell the operator
    push_source_event(EventKind::kSourceOverrun, double(header.frames_lost_before), header);
  if (header.flags & chunk_flags::kClockStepped) note_clock_step(header);
  Exec exec;
  exec.chunk = {header.first_frame, header.t_first_utc_ns, header.sequence};
  exec.events = &events_;
  exec.events_dropped = &counters_.events_dropped;
  exec.log = &log_;
  exec.raw_input = taken.raw ? taken.raw->data : nullptr;
  if (graph_.shed()) counters_.chunks_shed.fetch_add(1, std::memory_order_relaxed);
  // Polling the GPU until it is done, offering the look-ahead each time, not once before waiting:
  // the uploads in parts come from there, as the source completes them. Only once parts have
  // come: a source whose chunks are too small to be published in parts (or that publishes none)
  // keeps the plain wait.
  const bool polls = upload_parts_ && counters_.chunks_uploaded_in_parts.load(std::memory_order_relaxed) > 0;
  // Each wait for a stage's GPU work is the look-ahead's chance: the graph is between the two
  // phases of that stage's work, none of its stages on this stack.
  const bool failed = graph_.run(exec, [&] {
    look_ahead();
    if (polls)
      while (graph_.gpu_busy()) look_ahead();
  }) != StageStatus::kOk;
  // The conversion's counts: the host's, or with raw input the GPU's (and the chunk goes back now).
  uint64_t clipped = taken.clipped, non_finite = taken.non_finite;
  if (taken.raw) {
    graph_.input_counts(clipped, non_finite);
    free_chunks_.push(taken.raw);  // cannot fail: the free queue holds every pool chunk
  }
  if (clipped) header.flags |= chunk_flags::kClipped;
  if (non_finite) header.flags |= chunk_flags::kNonFinite;
  counters_.clipped_samples.fetch_add(clipped, std::memory_order_relaxed);
  counters_.non_finite_samples.fetch_add(non_finite, std::memory_order_relaxed);
  if (failed) counters_.stage_failures.fetch_add(1, std::memory_order_relaxed);
  if (failed != failing_) {  // log the edges, not every chunk
    log_.printf(failed ? 3 : 5, failed ? "pipeline: a stage failed on chunk %llu (counted in stage_failures)"
                                       : "pipeline: stages succeed again from chunk %llu",
                (unsigned long long)header.sequence);
    failing_ = failed;
  }
  if (chunk_cost_ns_ > 0 && (chunk_cost_for_ns_ == 0 || t0 - t_first_chunk_ < chunk_cost_for_ns_))
    sleep_until_mono_ns(t0 + chunk_cost_ns_);
  if (shed_policy_) watch_overload(mono_now_ns(), header.t_capture_mono_ns, exec);

  // Every chunk goes to the output thread, data outputs or not: it measures end-to-end latency
  // and deadlines there (after the chunk's events), so an events-only rig is accounted too.
  OutputSlot* slot = nullptr;
  {
    bool free = free_slots_.pop(slot);
    if (!free && handoff_.pending()) {  // the slots may all wait for an output thread not yet woken
      full_slots_.wake();
      handoff_.woken();
    }
    while (!free && wait_for_output_) {  // unpaced: the output thread frees one as it sends
      if (busy_poll_)
        cpu_relax();
      else
        free_slots_.wait_for_item(1'000'000);  // its push of the freed slot wakes this at once
      free = free_slots_.pop(slot);
    }
    if (free) {
      slot->header = header;
      if (output_lost_frames_) {  // tell the receiver, through the trailer, what it never got
        slot->header.flags |= chunk_flags::kOverrunBefore;
        slot->header.frames_lost_before += output_lost_frames_;
        output_lost_frames_ = 0;
      }
      if (output_clock_step_ns_) {  // a step in a chunk not sent: the receiver's time line moves here
        slot->header.flags |= chunk_flags::kClockStepped;
        slot->header.clock_step_ns += output_clock_step_ns_;
        output_clock_step_ns_ = 0;
      }
      slot->frames = in.frames;
      fill_slot(*slot, in.frames, header.first_frame);
    } else {
      counters_.output_chunks_dropped.fetch_add(1, std::memory_order_relaxed);
      counters_.output_frames_dropped.fetch_add(in.frames, std::memory_order_relaxed);
      output_lost_frames_ += in.frames;
      output_clock_step_ns_ += header.clock_step_ns;
    }
  }
  const int64_t t1 = mono_now_ns();
  counters_.processing.record_ns(t1 - t0);
  counters_.chunks_processed.fetch_add(1, std::memory_order_relaxed);
  counters_.frames_processed.fetch_add(in.frames, std::memory_order_relaxed);
  if (slot) {
    slot->t_processed_mono_ns = t1;
    slot->t_dequeued_mono_ns = taken.t_taken;
    slot->slowest_stage = graph_.slowest_of_last_run().stage;
    slot->slowest_stage_ns = graph_.slowest_of_last_run().ns;
    // cannot fail: the queue holds every slot
    // Only for an unpaced source: a paced one's chunks keep their deadlines and are never held back.
    if (wait_for_output_ && handoff_.quiet(t1, t1 - t0, has_ahead_ || full_chunks_.read_available() > 0)) {
      full_slots_.push_quietly(slot);  // the output thread is woken with a later chunk's push
      counters_.quiet_handoffs.fetch_add(1, std::memory_order_relaxed);
    } else {
      full_slots_.push(slot);
    }
  }
}

}  // namespace vigil
