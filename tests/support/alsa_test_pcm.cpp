// A paced capture PCM for the ALSA source tests: an ALSA ioplug plugin, built by the test suite
// as libasound_module_pcm_vigiltest.so and loaded through the configuration
//   pcm_type.vigiltest { lib "/abs/path/libasound_module_pcm_vigiltest.so" }
//   pcm.paced { type vigiltest rate 48000 }
// It offers S16_LE only, 1..8 channels, and exactly `rate` frames per second, paced by the
// monotonic clock (a timerfd wakes the reader every period). Sample n of channel c has the value
// (n + 1000 c) mod 32768, n counting frames since the first start, so a reader sees exactly which
// frames it lost. When the reader falls more than a buffer behind, pointer() reports -EPIPE: a real
// overrun, recovered by snd_pcm_recover like any device's. With `gone_file "/path"`, the device is
// unplugged while that file exists: opening fails and a running capture gets -ENODEV. With `ppm N`,
// its clock runs N parts per million fast (negative: slow): it delivers rate x (1 + N/1e6) frames a
// second while saying `rate`, as a real device's crystal does.
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

namespace {

struct Paced {
  snd_pcm_ioplug_t io{};
  int timer = -1;
  unsigned rate = 48000;
  double ppm = 0;              // how far its clock is off
  int64_t first_start_ns = 0;  // the first start: frame 0 of the time line
  int64_t start_ns = 0;        // when the current run started
  uint64_t base_frame = 0;     // frame index (since the first start) at that start
  uint64_t delivered = 0;    // frames handed to the reader in this run
  std::string gone_file;     // while it exists the device is "unplugged"
};

bool gone(const Paced* p) { return !p->gone_file.empty() && access(p->gone_file.c_str(), F_OK) == 0; }

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Frames the device's clock makes in ns nanoseconds.
uint64_t frames_in(const Paced* p, int64_t ns) { return uint64_t(double(ns) * p->rate * (1 + p->ppm * 1e-6) / 1e9); }
uint64_t elapsed_frames(const Paced* p) { return frames_in(p, now_ns() - p->start_ns); }

int paced_start(snd_pcm_ioplug_t* io) {
  auto* p = static_cast<Paced*>(io->private_data);
  p->start_ns = now_ns();
  if (p->first_start_ns == 0) p->first_start_ns = p->start_ns;
  // Frames keep their place on the time line: what passed while stopped (an overrun) is lost.
  p->base_frame = frames_in(p, p->start_ns - p->first_start_ns);
  p->delivered = 0;
  itimerspec its{};
  const int64_t period_ns = int64_t(io->period_size) * 1'000'000'000 / p->rate;
  its.it_interval = {time_t(period_ns / 1'000'000'000), long(period_ns % 1'000'000'000)};
  its.it_value = its.it_interval;
  timerfd_settime(p->timer, 0, &its, nullptr);
  return 0;
}

int paced_stop(snd_pcm_ioplug_t* io) {
  auto* p = static_cast<Paced*>(io->private_data);
  itimerspec its{};
  timerfd_settime(p->timer, 0, &its, nullptr);
  return 0;
}

snd_pcm_sframes_t paced_pointer(snd_pcm_ioplug_t* io) {
  auto* p = static_cast<Paced*>(io->private_data);
  if (gone(p)) return -ENODEV;
  const uint64_t produced = elapsed_frames(p);
  if (produced - p->delivered > io->buffer_size) return -EPIPE;  // the reader fell a buffer behind
  return snd_pcm_sframes_t(produced % io->buffer_size);
}

snd_pcm_sframes_t paced_transfer(snd_pcm_ioplug_t* io, const snd_pcm_channel_area_t* areas, snd_pcm_uframes_t offset,
                                 snd_pcm_uframes_t size) {
  auto* p = static_cast<Paced*>(io->private_data);
  for (unsigned c = 0; c < io->channels; ++c) {
    const snd_pcm_channel_area_t& a = areas[c];
    auto* base = static_cast<uint8_t*>(a.addr) + a.first / 8;
    for (snd_pcm_uframes_t i = 0; i < size; ++i) {
      const uint64_t n = p->base_frame + p->delivered + i;
      *reinterpret_cast<int16_t*>(base + (offset + i) * a.step / 8) = int16_t((n + 1000 * c) % 32768);
    }
  }
  p->delivered += size;
  return snd_pcm_sframes_t(size);
}

int paced_poll_revents(snd_pcm_ioplug_t* io, struct pollfd* pfd, unsigned int nfds, unsigned short* revents) {
  auto* p = static_cast<Paced*>(io->private_data);
  uint64_t ticks = 0;
  if (nfds && (pfd[0].revents & POLLIN)) (void)!read(p->timer, &ticks, sizeof ticks);
  *revents = pfd[0].revents ? POLLIN : 0;
  return 0;
}

int paced_close(snd_pcm_ioplug_t* io) {
  auto* p = static_cast<Paced*>(io->private_data);
  close(p->timer);
  delete p;
  return 0;
}

const snd_pcm_ioplug_callback_t kCallbacks = [] {
  snd_pcm_ioplug_callback_t c{};
  c.start = paced_start;
  c.stop = paced_stop;
  c.pointer = paced_pointer;
  c.transfer = paced_transfer;
  c.poll_revents = paced_poll_revents;
  c.close = paced_close;
  return c;
}();

}  // namespace

extern "C" {

SND_PCM_PLUGIN_DEFINE_FUNC(vigiltest) {
  (void)root;
  auto* p = new Paced;
  snd_config_iterator_t i, next;
  snd_config_for_each(i, next, conf) {
    snd_config_t* n = snd_config_iterator_entry(i);
    const char* id = nullptr;
    if (snd_config_get_id(n, &id) < 0) continue;
    long v = 0;
    const char* str = nullptr;
    if (std::string_view(id) == "rate" && snd_config_get_integer(n, &v) == 0) p->rate = unsigned(v);
    if (std::string_view(id) == "gone_file" && snd_config_get_string(n, &str) == 0) p->gone_file = str;
    if (std::string_view(id) == "ppm" && snd_config_get_integer(n, &v) == 0) p->ppm = double(v);
  }
  if (gone(p)) {
    delete p;
    return -ENODEV;
  }
  p->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  p->io.version = SND_PCM_IOPLUG_VERSION;
  p->io.name = "vigil paced test capture";
  p->io.flags = SND_PCM_IOPLUG_FLAG_MONOTONIC;
  p->io.poll_fd = p->timer;
  p->io.poll_events = POLLIN;
  p->io.mmap_rw = 0;
  p->io.callback = &kCallbacks;
  p->io.private_data = p;
  int err = snd_pcm_ioplug_create(&p->io, name, stream, mode);
  if (err < 0) {
    close(p->timer);
    delete p;
    return err;
  }
  static const unsigned access[] = {SND_PCM_ACCESS_RW_INTERLEAVED};
  static const unsigned format[] = {SND_PCM_FORMAT_S16_LE};
  snd_pcm_ioplug_set_param_list(&p->io, SND_PCM_IOPLUG_HW_ACCESS, 1, access);
  snd_pcm_ioplug_set_param_list(&p->io, SND_PCM_IOPLUG_HW_FORMAT, 1, format);
  snd_pcm_ioplug_set_param_minmax(&p->io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 8);
  snd_pcm_ioplug_set_param_minmax(&p->io, SND_PCM_IOPLUG_HW_RATE, p->rate, p->rate);
  snd_pcm_ioplug_set_param_minmax(&p->io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 64, 1 << 20);
  snd_pcm_ioplug_set_param_minmax(&p->io, SND_PCM_IOPLUG_HW_PERIODS, 2, 64);
  *pcmp = p->io.pcm;
  return 0;
}

SND_PCM_PLUGIN_SYMBOL(vigiltest);

}  // extern "C"
