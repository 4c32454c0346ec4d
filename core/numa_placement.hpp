// Where memory for a device goes on a host of several NUMA nodes: the node the kernel names for a
// PCI device (a GPU), and a scope in which the calling thread's new pages prefer that node (the
// page-locked staging a CUDA stage allocates for its device, pinned in the allocating thread).
// Linux only; where the host has one node, names none, or refuses the policy (qemu-user answers
// ENOSYS), nothing changes.
#pragma once

#include <string>

namespace vigil {

// The NUMA node of the PCI device `bus_id` ("0000:41:00.0", either case, as
// cudaDeviceGetPCIBusId gives it) from <sysfs_root>/bus/pci/devices/<id>/numa_node; -1 where the
// file is missing, unreadable or says -1 (a host of one node).
int numa_node_of_pci_device(const std::string& bus_id, const std::string& sysfs_root = "/sys");

// While it lives, the calling thread's new pages prefer `node` (MPOL_PREFERRED); the policy before
// it is put back when it goes. node < 0: nothing. applied(): whether the policy was set; error():
// errno where setting it failed.
class NumaPreferred {
 public:
  explicit NumaPreferred(int node) noexcept;
  ~NumaPreferred();
  NumaPreferred(const NumaPreferred&) = delete;
  NumaPreferred& operator=(const NumaPreferred&) = delete;
  bool applied() const noexcept { return applied_; }
  int error() const noexcept { return error_; }

 private:
  static constexpr unsigned kMaskWords = 16;  // 1024 nodes
  bool applied_ = false;
  int error_ = 0;
  int previous_mode_ = 0;
  unsigned long previous_mask_[kMaskWords] = {};
};

// The NUMA node of the calling process's page at `address` (it must have been touched); -1 where
// the kernel does not say. For tests and the status.
int numa_node_of_page(const void* address) noexcept;

}  // namespace vigil
