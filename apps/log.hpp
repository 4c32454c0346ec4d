// Log lines for the apps (main thread only): to stderr, with a "<N>" syslog priority prefix when
// stderr is the systemd journal ($JOURNAL_STREAM names it), so journald keeps the levels.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace vigil::log {

enum class Level { kError = 3, kWarning = 4, kNotice = 5, kInfo = 6 };

inline bool to_journal() {
  static const bool journal = [] {
    const char* js = std::getenv("JOURNAL_STREAM");  // "DEV:INODE" of the journal's stream
    struct stat st {};
    if (!js || fstat(2, &st) != 0) return false;
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) == js;
  }();
  return journal;
}

inline void line(Level level, const std::string& text) {
  if (to_journal())
    std::fprintf(stderr, "<%d>%s\n", int(level), text.c_str());
  else
    std::fprintf(stderr, "%s\n", text.c_str());
}

}  // namespace vigil::log
