// Opening a file the service or vigil-dsp reads (a recording, its metadata, samples), with the
// error every caller gives: "PATH: cannot open: WHY".
#pragma once

#include <fstream>
#include <string>

namespace vigil {

// Throws std::runtime_error when the file cannot be opened. A directory is refused as one: on
// Linux it opens, then reads as an empty file or fails inside the stream with no path named.
std::ifstream open_input_file(const std::string& path, std::ios::openmode mode = std::ios::binary);

}  // namespace vigil
