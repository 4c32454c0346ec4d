// cuda::error_of: a throwing call turned into a status for the stages' noexcept paths. Needs the
// CUDA runtime's headers and library, not a device.
#include "cuda/cuda_check.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace vigil
