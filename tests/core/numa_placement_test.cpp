// NUMA placement: a PCI device's node read from a sysfs tree the test builds (both cases of hex,
// a host of one node saying -1, a device not there), and the preferred-node scope on this host:
// the policy set while it lives and the one before put back after; a page touched inside it lies
// on the node asked for. Where the kernel refuses the policy (qemu-user: ENOSYS), the scope says
// so and changes nothing.
#include "core/numa_placement.hpp"

#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "../support/temp_dir.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;

// The calling thread's policy mode; -1 with errno in *err where the kernel has no policy calls
// (qemu-user) or a sandbox refuses them.
int current_mode(int* err = nullptr) {
  int mode = -1;
  unsigned long mask[16] = {};
  if (syscall(SYS_get_mempolicy, &mode, mask, 16 * 64ul, nullptr, 0ul) != 0) {
    if (err) *err = errno;
    return -1;
  }
  return mode;
}

TEST(NumaPlacement, APciDevicesNodeIsReadFromSysfs) {
  test::TempDir dir("numa-sysfs");
  auto device = [&](const std::string& id, const std::string& node) {
    const fs::path d = dir.path / "bus/pci/devices" / id;
    fs::create_directories(d);
    std::ofstream(d / "numa_node") << node << "\n";
  };
  device("0000:41:00.0", "1");
  device("0000:c1:00.0", "3");
  device("0000:01:00.0", "-1");
  const std::string root = dir.path.string();
  EXPECT_EQ(numa_node_of_pci_device("0000:41:00.0", root), 1);
  EXPECT_EQ(numa_node_of_pci_device("0000:C1:00.0", root), 3);  // CUDA names it in capitals
  EXPECT_EQ(numa_node_of_pci_device("0000:01:00.0", root), -1);
  EXPECT_EQ(numa_node_of_pci_device("0000:02:00.0", root), -1);  // not there
}

TEST(NumaPlacement, PagesTouchedInTheScopePreferTheNodeAndThePolicyComesBack) {
  int refused = 0;
  const int before = current_mode(&refused);
  {
    const NumaPreferred nothing(-1);
    EXPECT_FALSE(nothing.applied());
    EXPECT_EQ(nothing.error(), 0);
    EXPECT_EQ(current_mode(), before);
  }
  const size_t bytes = 1 << 20;
  void* p = nullptr;
  {
    const NumaPreferred near(0);  // every Linux host has node 0
    if (before < 0) {  // no policy calls here (qemu-user: ENOSYS): the scope says so, nothing else
      EXPECT_TRUE(refused == ENOSYS || refused == EPERM) << refused;
      EXPECT_FALSE(near.applied());
      EXPECT_EQ(near.error(), refused);
      return;
    }
    ASSERT_TRUE(near.applied()) << "errno " << near.error();
    EXPECT_EQ(current_mode(), MPOL_PREFERRED);
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    static_cast<volatile char*>(p)[0] = 1;
    static_cast<volatile char*>(p)[bytes - 1] = 1;
  }
  EXPECT_EQ(current_mode(), before);
  EXPECT_EQ(numa_node_of_page(p), 0);
  EXPECT_EQ(numa_node_of_page(static_cast<char*>(p) + bytes - 1), 0);
  munmap(p, bytes);
  const NumaPreferred far(1 << 20);  // beyond any mask
  EXPECT_FALSE(far.applied());
  EXPECT_EQ(far.error(), EINVAL);
}

}  // namespace
}  // namespace vigil
