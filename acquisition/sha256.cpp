#include "acquisition/sha256.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <stdexcept>

namespace vigil {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256: libcrypto's EVP_Digest failed");
  std::string hex(size_t(length) * 2, '0');
  for (unsigned int i = 0; i < length; ++i) std::snprintf(&hex[2 * i], 3, "%02x", digest[i]);
  return hex;
}

}  // namespace vigil
