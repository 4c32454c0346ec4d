#include "core/numa_placement.hpp"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <fstream>

namespace vigil {

namespace {

constexpr unsigned long kBitsPerWord = sizeof(unsigned long) * CHAR_BIT;

long get_mempolicy(int* mode, unsigned long* mask, unsigned long maxnode, const void* addr, unsigned long flags) {
  return syscall(SYS_get_mempolicy, mode, mask, maxnode, addr, flags);
}
long set_mempolicy(int mode, const unsigned long* mask, unsigned long maxnode) {
  return syscall(SYS_set_mempolicy, mode, mask, maxnode);
}

}  // namespace

int numa_node_of_pci_device(const std::string& bus_id, const std::string& sysfs_root) {
  std::string id;
  for (char c : bus_id) id += char(std::tolower(static_cast<unsigned char>(c)));
  std::ifstream f(sysfs_root + "/bus/pci/devices/" + id + "/numa_node");
  int node = -1;
  if (!(f >> node) || node < 0) return -1;
  return node;
}

NumaPreferred::NumaPreferred(int node) noexcept {
  if (node < 0) return;
  if (unsigned(node) >= kMaskWords * kBitsPerWord) {
    error_ = EINVAL;
    return;
  }
  if (get_mempolicy(&previous_mode_, previous_mask_, kMaskWords * kBitsPerWord, nullptr, 0) != 0) {
    error_ = errno;
    return;
  }
  unsigned long mask[kMaskWords] = {};
  mask[unsigned(node) / kBitsPerWord] = 1ul << (unsigned(node) % kBitsPerWord);
  if (set_mempolicy(MPOL_PREFERRED, mask, kMaskWords * kBitsPerWord) != 0) {
    error_ = errno;
    return;
  }
  applied_ = true;
}

NumaPreferred::~NumaPreferred() {
  if (!applied_) return;
  // The mode's flags (MPOL_F_STATIC_NODES, ...) come back with it; MPOL_DEFAULT takes no mask.
  if (previous_mode_ == MPOL_DEFAULT) set_mempolicy(MPOL_DEFAULT, nullptr, 0);
  else set_mempolicy(previous_mode_, previous_mask_, kMaskWords * kBitsPerWord);
}

int numa_node_of_page(const void* address) noexcept {
  int node = -1;
  if (get_mempolicy(&node, nullptr, 0, address, MPOL_F_NODE | MPOL_F_ADDR) != 0) return -1;
  return node;
}

}  // namespace vigil
