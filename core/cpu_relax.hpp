// cpu_relax(): one pause in a spin-wait (x86 PAUSE, aarch64 YIELD): cheaper for the sibling
// hyper-thread and for power than spinning flat out; a no-op elsewhere.
#pragma once

namespace vigil {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace vigil
