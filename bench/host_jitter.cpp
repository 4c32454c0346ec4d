// host_jitter: how dependably this host runs a thread, without Vigil in the way. Spinning threads
// read the monotonic clock in a loop and record every gap longer than 10 us (time the thread was
// not running: preempted by the kernel, another process or the hypervisor); sleeping threads ask
// for a 100 us sleep again and again and record how late each wake-up comes (what vigild's
// doorbell threads see; timer slack set to 1 ns). A scenario's latency tail that this tool shows
// on its own is the host's.
//
// Usage: host_jitter [--seconds S] [--spinners N] [--sleepers N] [--sleep-us U]
// Defaults: 5 s, spinners = sleepers = half the cores (at least 1), 100 us.
#include "core/clock.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/prctl.h>
#include <thread>
#include <time.h>
#include <vector>

namespace {

using vigil::mono_now_ns;

struct Options {
  double seconds = 5;
  unsigned spinners = 0, sleepers = 0;
  unsigned sleep_us = 100;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "host_jitter: %s\nusage: host_jitter [--seconds S] [--spinners N] [--sleepers N] [--sleep-us U]\n", why);
  std::exit(2);
}

double number(const char* flag, const char* text, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno || end == text || *end || v < lo || v > hi)
    usage((std::string(flag) + " must be a number " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" +
           text + "'").c_str());
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  const unsigned half = std::max(1u, std::thread::hardware_concurrency() / 2);
  o.spinners = o.sleepers = half;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    if (a == "--seconds") o.seconds = number("--seconds", v, 0.1, 3600);
    else if (a == "--spinners") o.spinners = unsigned(number("--spinners", v, 0, 1024));
    else if (a == "--sleepers") o.sleepers = unsigned(number("--sleepers", v, 0, 1024));
    else if (a == "--sleep-us") o.sleep_us = unsigned(number("--sleep-us", v, 1, 1000000));
    else usage(("unknown option " + a).c_str());
  }
  if (o.spinners + o.sleepers == 0) usage("no thread to run: --spinners and --sleepers are both 0");
  return o;
}

// Gaps (spinners, only those above 10 us) or lateness of every wake-up (sleepers) in ns, one per
// thread.
struct Record {
  std::vector<int64_t> ns;
};

void spin(int64_t end, Record& r) {
  int64_t last = mono_now_ns();
  while (last < end) {
    const int64_t t = mono_now_ns();
    if (t - last > 10000) r.ns.push_back(t - last);
    last = t;
  }
}

void sleep_loop(int64_t end, unsigned sleep_us, Record& r) {
  // Without this the kernel may defer a normal thread's timer by up to 50 us (its default slack) to
  // batch wake-ups: the lateness would show the slack, not the host.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const timespec req{0, long(sleep_us) * 1000};
  for (int64_t t = mono_now_ns(); t < end;) {
    nanosleep(&req, nullptr);
    const int64_t woke = mono_now_ns();
    r.ns.push_back(woke - t - int64_t(sleep_us) * 1000);
    t = woke;
  }
}

int64_t percentile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, size_t(q * double(v.size())));
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

std::vector<int64_t> merged(const std::vector<Record>& rs, size_t from, size_t to) {
  std::vector<int64_t> all;
  for (size_t i = from; i < to; ++i) all.insert(all.end(), rs[i].ns.begin(), rs[i].ns.end());
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::vector<Record> records(o.spinners + o.sleepers);
  // Room for the sleepers' wake-ups of a few seconds up front (no allocation while measuring then).
  for (size_t i = 0; i < records.size(); ++i)
    records[i].ns.reserve(i < o.spinners ? 4096 : std::min<size_t>(size_t(o.seconds * 1e6 / o.sleep_us) + 16, 1 << 20));
  const int64_t end = mono_now_ns() + int64_t(o.seconds * 1e9);
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < o.spinners; ++i) threads.emplace_back(spin, end, std::ref(records[i]));
  for (unsigned i = 0; i < o.sleepers; ++i)
    threads.emplace_back(sleep_loop, end, o.sleep_us, std::ref(records[o.spinners + i]));
  for (auto& t : threads) t.join();

  std::printf("host_jitter: %g s, %u cores; threads: %u spinning, %u sleeping %u us at a time\n", o.seconds,
              std::thread::hardware_concurrency(), o.spinners, o.sleepers, o.sleep_us);
  if (o.spinners) {
    std::vector<int64_t> gaps = merged(records, 0, o.spinners);
    int64_t total = 0;
    auto over = [&](int64_t us) {
      return std::count_if(gaps.begin(), gaps.end(), [&](int64_t g) { return g > us * 1000; });
    };
    for (int64_t g : gaps) total += g;
    const int64_t worst = gaps.empty() ? 0 : *std::max_element(gaps.begin(), gaps.end());
    std::printf("spinning: gaps > 10 us: %zu (%.3f %% of the time off the CPU); > 50 us: %ld; > 200 us: %ld; "
                "> 1 ms: %ld; longest %.1f us\n",
                gaps.size(), 100.0 * double(total) / (o.seconds * 1e9 * o.spinners), long(over(50)), long(over(200)),
                long(over(1000)), double(worst) / 1e3);
  }
  if (o.sleepers) {
    std::vector<int64_t> late = merged(records, o.spinners, records.size());
    const size_t wakes = late.size();
    const double p50 = double(percentile(late, 0.5)) / 1e3, p99 = double(percentile(late, 0.99)) / 1e3,
                 p999 = double(percentile(late, 0.999)) / 1e3;
    const int64_t worst = late.empty() ? 0 : *std::max_element(late.begin(), late.end());
    std::printf("sleeping: %zu wake-ups, late by p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n", wakes, p50,
                p99, p999, double(worst) / 1e3);
  }
  return 0;
}
