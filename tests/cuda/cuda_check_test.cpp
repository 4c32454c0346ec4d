// cuda::error_of: a throwing call turned into a status for the stages' noexcept paths. Needs the
// CUDA runtime's headers and library, not a device.
#include "cuda/cuda_check.hpp"

#include <gtest/gtest.h>

#include "../support/gpu.hpp"
#include "cuda/pinned_buffer.hpp"

#include <new>
#include <stdexcept>

namespace vigil {
namespace {

TEST(CudaErrorOf, SuccessWhenTheCallReturnsAndTheCallRunsOnce) {
  int calls = 0;
  EXPECT_EQ(cuda::error_of([&] { ++calls; }), cudaSuccess);
  EXPECT_EQ(calls, 1);
}

TEST(CudaErrorOf, TheCodeOfAThrownCudaError) {
  EXPECT_EQ(cuda::error_of([] { VIGIL_CUDA_CHECK(cudaErrorIllegalAddress); }), cudaErrorIllegalAddress);
  EXPECT_EQ(cuda::error_of([] { throw cuda::CudaError(cudaErrorLaunchTimeout, "late"); }), cudaErrorLaunchTimeout);
}

TEST(CudaErrorOf, OutOfMemoryForBadAllocAndUnknownForAnythingElse) {
  EXPECT_EQ(cuda::error_of([] { throw std::bad_alloc(); }), cudaErrorMemoryAllocation);
  EXPECT_EQ(cuda::error_of([] { throw std::runtime_error("not CUDA"); }), cudaErrorUnknown);
  EXPECT_EQ(cuda::error_of([] { throw 7; }), cudaErrorUnknown);
}

// Page-locked memory the driver refuses: the error says how much was asked for and of what kind.
TEST(PinnedBuffer, AnAllocationRefusedSaysHowMuchWasAsked) {
  VIGIL_SKIP_WITHOUT_GPU();
  for (const bool mapped : {false, true}) {
    try {
      cuda::PinnedBuffer b(size_t(1) << 50, mapped);
      FAIL() << "1 PiB of page-locked memory was granted";
    } catch (const cuda::CudaError& e) {
      const std::string want = std::string("cannot lock 1073741824 MiB of host memory (") +
                               (mapped ? "page-locked and mapped" : "page-locked") + ", cudaHostAlloc): ";
      EXPECT_EQ(std::string(e.what()).rfind(want, 0), 0u) << e.what();
      EXPECT_NE(e.code(), cudaSuccess);
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // nothing sticky left for the next call
  }
}

// memory: auto picks mapped staging where the GPU shares the host's memory (a Jetson): the
// attribute it reads agrees with the device's properties.
TEST(PinnedBuffer, TheIntegratedAttributeAgreesWithTheDeviceProperties) {
  VIGIL_SKIP_WITHOUT_GPU();
  int dev = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, dev), cudaSuccess);
  EXPECT_EQ(cuda::device_is_integrated(), prop.integrated != 0);
}

}  // namespace
}  // namespace vigil
