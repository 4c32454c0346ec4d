// A wall clock that steps, for the real vigild under test (LD_PRELOAD): CLOCK_REALTIME reads
// VIGIL_TEST_CLOCK_STEP_S seconds later (earlier, when negative) from VIGIL_TEST_CLOCK_STEP_AFTER_S
// seconds after the process first read it, as when NTP first sets the clock of a machine that
// booted without one. With VIGIL_TEST_CLOCK_NUDGE_S and VIGIL_TEST_CLOCK_NUDGE_EVERY_S it also
// moves by the first every time the second passes, as a virtual machine's time agent that keeps
// the guest's clock by small steps does. Setting the real clock needs privileges a test does not
// have, and a time namespace moves only the monotonic clocks. Every other clock, and every other
// call, is the C library's own.
#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace {

using ClockGettime = int (*)(clockid_t, timespec*);

ClockGettime real_clock_gettime() {
  static const auto real = reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
  return real;
}

int64_t env_ns(const char* name) {
  const char* v = std::getenv(name);
  return v ? int64_t(std::strtod(v, nullptr) * 1e9) : 0;
}

int64_t ns_of(const timespec& ts) { return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec; }

}  // namespace

extern "C" int clock_gettime(clockid_t id, timespec* ts) {
  const ClockGettime real = real_clock_gettime();
  const int rc = real(id, ts);
  if (rc != 0 || id != CLOCK_REALTIME) return rc;
  static const int64_t step_ns = env_ns("VIGIL_TEST_CLOCK_STEP_S"), after_ns = env_ns("VIGIL_TEST_CLOCK_STEP_AFTER_S");
  static const int64_t nudge_ns = env_ns("VIGIL_TEST_CLOCK_NUDGE_S"),
                       nudge_every_ns = env_ns("VIGIL_TEST_CLOCK_NUDGE_EVERY_S");
  static std::atomic<int64_t> first_read_ns{0};
  timespec mono{};
  real(CLOCK_MONOTONIC, &mono);
  int64_t first = 0;
  if (first_read_ns.compare_exchange_strong(first, ns_of(mono))) return rc;
  const int64_t since = ns_of(mono) - first;
  int64_t moved = since >= after_ns ? step_ns : 0;
  if (nudge_every_ns > 0) moved += since / nudge_every_ns * nudge_ns;
  const int64_t t = ns_of(*ts) + moved;
  ts->tv_sec = time_t(t / 1'000'000'000);
  ts->tv_nsec = long(t % 1'000'000'000);
  return rc;
}
