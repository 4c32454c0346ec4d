#include "acquisition/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace vigil {

std::ifstream open_input_file(const std::string& path, std::ios::openmode mode) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(path + ": cannot open: is a directory, not a file");
  std::ifstream f(path, mode | std::ios::in);
  if (!f) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  return f;
}

}  // namespace vigil
