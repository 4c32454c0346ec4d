// Names the calling thread as `top -H`, `ps -L`, perf and gdb show it (/proc/PID/task/TID/comm):
// Linux keeps 15 bytes of a name, so a longer one is cut there. Best effort: a failure changes
// nothing but the name.
#pragma once

#include <pthread.h>

#include <string>

namespace vigil {

inline void name_this_thread(const std::string& name) noexcept {
  char cut[16] = {};
  name.copy(cut, sizeof cut - 1);
  pthread_setname_np(pthread_self(), cut);
}

// The calling thread's name ("" if it cannot be read).
inline std::string this_thread_name() {
  char name[16] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0) return {};
  return name;
}

}  // namespace vigil
