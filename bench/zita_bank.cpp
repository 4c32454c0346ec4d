// zita-convolver (the engine of jconvolver and of many Linux audio crossovers) running a FIR bank as
// fast as it goes: issue 51's peer for S3 at equal latency. CHANNELS inputs, each through every
// taps file into an output of its own, processed in periods of QUANTUM frames (its latency, as
// Vigil's chunk is) with non-uniform partitions from QUANTUM up to zita's largest, its background
// levels on threads of their own (process(true): each period waits for what it needs, as an
// offline run must). The input is RATE x 1 s of random samples repeated (as the scenarios' source
// repeats its signal); the first 4096 frames of every output are checked against a direct
// convolution in double, so that a faster run cannot come from doing less.
// Prints one JSON line: samples_per_s, x_realtime, cpu_cores (process CPU time / wall time), the
// check's relative error.
// Usage: zita_bank RATE CHANNELS SECONDS QUANTUM [--vector] [--maxpart N] TAPS.f64...
// (--vector: zita's OPT_VECTOR_MODE; --maxpart: its largest partition, default zita's 8192.)
#include <sched.h>
#include <sys/resource.h>
#include <zita-convolver.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<float> read_taps(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<double> d;
  for (double v; f.read(reinterpret_cast<char*>(&v), sizeof v);) d.push_back(v);
  if (d.empty()) {
    std::fprintf(stderr, "zita_bank: %s: no taps (float64 expected)\n", path);
    std::exit(2);
  }
  return std::vector<float>(d.begin(), d.end());
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);  // every thread of the process, zita's levels included
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: zita_bank RATE CHANNELS SECONDS QUANTUM [--vector] [--maxpart N] TAPS.f64...\n");
    return 2;
  }
  const double rate = std::atof(argv[1]), seconds = std::atof(argv[3]);
  const uint32_t channels = uint32_t(std::atoi(argv[2])), quantum = uint32_t(std::atoi(argv[4]));
  int arg = 5;
  bool vector_mode = false;
  uint32_t maxpart = Convproc::MAXPART;
  for (; arg < argc && argv[arg][0] == '-'; ++arg) {
    if (std::strcmp(argv[arg], "--vector") == 0) {
      vector_mode = true;
    } else if (std::strcmp(argv[arg], "--maxpart") == 0 && arg + 1 < argc) {
      maxpart = uint32_t(std::atoi(argv[++arg]));
    } else {
      std::fprintf(stderr, "zita_bank: unknown option %s\n", argv[arg]);
      return 2;
    }
  }
  std::vector<std::vector<float>> taps;
  for (; arg < argc; ++arg) taps.push_back(read_taps(argv[arg]));
  const uint32_t bands = uint32_t(taps.size()), outputs = channels * bands;
  size_t longest = 0;
  for (const auto& t : taps) longest = std::max(longest, t.size());
  if (channels == 0 || bands == 0 || channels > Convproc::MAXINP || outputs > Convproc::MAXOUT ||
      quantum < Convproc::MINQUANT || quantum > Convproc::MAXQUANT || maxpart < quantum || maxpart > Convproc::MAXPART ||
      rate <= 0 || seconds <= 0) {
    std::fprintf(stderr, "zita_bank: channels 1..%d, channels x bands <= %d, quantum %d..%d, maxpart quantum..%d\n",
                 int(Convproc::MAXINP), int(Convproc::MAXOUT), int(Convproc::MINQUANT), int(Convproc::MAXQUANT),
                 int(Convproc::MAXPART));
    return 2;
  }

  Convproc conv;
  conv.set_options(Convproc::OPT_FFTW_MEASURE | (vector_mode ? Convproc::OPT_VECTOR_MODE : 0));
  // Density: each input feeds its own `bands` outputs of the channels x bands.
  if (int rc = conv.configure(channels, outputs, uint32_t(longest), quantum, quantum, maxpart,
                              1.0f / float(channels))) {
    std::fprintf(stderr, "zita_bank: configure failed (%d)\n", rc);
    return 1;
  }
  for (uint32_t c = 0; c < channels; ++c)
    for (uint32_t b = 0; b < bands; ++b)
      conv.impdata_create(c, c * bands + b, 1, taps[b].data(), 0, int32_t(taps[b].size()));
  if (conv.start_process(0, SCHED_OTHER)) {
    std::fprintf(stderr, "zita_bank: start_process failed\n");
    return 1;
  }
  // Its level threads must be waiting before the first period: one that starts only after the
  // first process() calls (a loaded machine) leaves the level's output wrong for good (seen here
  // about once in 30 runs beside two busy loops: relative error ~1 instead of ~1e-7). A JACK client
  // starts the same way, long before its first period.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  // One second of random input per channel, repeated; periods never straddle its end.
  const size_t loop = size_t(rate) / quantum * quantum;
  std::vector<std::vector<float>> input(channels, std::vector<float>(loop));
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& ch : input)
    for (float& v : ch) v = u(rng);

  constexpr size_t kChecked = 4096;
  std::vector<std::vector<float>> head(outputs);  // the first kChecked frames of every output
  const uint64_t periods = uint64_t(seconds * rate) / quantum;
  double sink = 0;  // every output read, as a null sink would take it
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t p = 0; p < periods; ++p) {
    const size_t at = size_t(p * quantum % loop);
    for (uint32_t c = 0; c < channels; ++c) std::memcpy(conv.inpdata(c), &input[c][at], quantum * sizeof(float));
    conv.process(true);
    for (uint32_t o = 0; o < outputs; ++o) {
      const float* out = conv.outdata(o);
      sink += out[quantum - 1];
      if (head[o].size() < kChecked) head[o].insert(head[o].end(), out, out + std::min<size_t>(quantum, kChecked - head[o].size()));
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  conv.stop_process();
  while (!conv.check_stop()) sched_yield();
  conv.cleanup();

  // The check: every output's head against the direct convolution of its input (zero history).
  double worst = 0;
  for (uint32_t c = 0; c < channels; ++c)
    for (uint32_t b = 0; b < bands; ++b) {
      const auto& h = taps[b];
      const auto& got = head[c * bands + b];
      double err2 = 0, ref2 = 0;
      for (size_t n = 0; n < got.size(); ++n) {
        double y = 0;
        for (size_t k = 0; k < h.size() && k <= n; ++k) y += double(h[k]) * double(input[c][n - k]);
        err2 += (double(got[n]) - y) * (double(got[n]) - y);
        ref2 += y * y;
      }
      worst = std::max(worst, std::sqrt(err2 / std::max(ref2, 1e-300)));
    }
  const double frames = double(periods) * quantum;
  std::printf(
      "{\"engine\": \"zita-convolver\", \"version\": \"%d.%d\", \"vector_mode\": %s, \"maxpart\": %u, \"rate_hz\": %g, "
      "\"channels\": %u, \"bands\": %u, \"taps\": %zu, \"quantum\": %u, \"signal_s\": %g, \"elapsed_s\": %.6f, "
      "\"samples_per_s\": %.1f, \"x_realtime\": %.3f, \"cpu_cores\": %.3f, \"check_rel_rms_error\": %.3g, "
      "\"checksum\": %g}\n",
      zita_convolver_major_version(), zita_convolver_minor_version(), vector_mode ? "true" : "false", maxpart, rate, channels,
      bands, longest, quantum, frames / rate, wall, frames * channels / wall, frames / rate / wall, cpu / wall, worst,
      sink);
  return worst < 1e-4 ? 0 : 3;
}
