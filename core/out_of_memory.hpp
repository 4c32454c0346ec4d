// OutOfMemory: a buffer the config asks for could not be allocated (as std::bad_alloc, but with
// a message saying which buffer and how large). vigild treats both as the config's fault: exit 2.
#pragma once

#include <stdexcept>

namespace vigil {

struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace vigil
